//! Large bodies (issue 16, scenario 5): HTTP/1.1 transfers of 1 MiB and 64 MiB, downloads and
//! uploads, through weir, nginx and HAProxy, and "direct" (no proxy: the upstream's own speed).
//! Run it with benches/load/bodies.sh, which installs the peers.
//!
//! One nginx upstream on CPU 1 (with the harness, whose client runs there too): `/dl/1m.bin`
//! and `/dl/64m.bin` are static files it sends with sendfile; `POST /up` is read whole and then
//! answered "ok\n" (see `upstream` for how, and why not `return 200`) — the pre-run check
//! confirms the upstream read every byte (its sockets' `bytes_received` less what waits unread,
//! from `ss`) and that the client connection is still in step after the upload. Each proxy on
//! CPU 0 with one worker or thread and one route to that upstream, streaming both ways (nginx:
//! `proxy_request_buffering off; proxy_buffering off; client_max_body_size 0;` keep-alive to
//! the upstream, its one buffer each way NGINX_BUFFER_KIB (64; 0 = nginx's defaults, 4 KiB
//! and 16 KiB); HAProxy streams by default; weir streams always).
//!
//! Per scenario (download or upload, 1 MiB or 64 MiB) and contender, a fresh proxy process (so
//! its VmHWM is that scenario's peak); CONNS (4) HTTP/1.1 connections from a hyper client on a
//! current-thread runtime each make one untimed transfer, then transfers back to back for
//! DURATION (10) s — at most 64 GiB a connection, each transfer at most 60 s. A download counts
//! when its status is 2xx and exactly the file's length arrived; an upload (streamed from one
//! reused 64 KiB `Bytes`) when its body was sent whole and "ok\n" came back. Measured:
//! throughput, the proxy's CPU (utime + stime) per GiB moved, its peak RSS, failed transfers.
//! ROUNDS (2) interleaved rounds (each scenario: weir, nginx, HAProxy, direct), medians with
//! every round's value. Loopback only, bounded in count and time. Reports; asserts nothing.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Command;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

mod support;
use support::{
    benching, env_or, free_port, haproxy, median, nginx, nginx_preamble, nginx_upstream_with,
    run_dir, wait_for_port, weir, weir_binaries, weir_config_on, Proc,
};

const MIB: u64 = 1 << 20;
const GIB: f64 = (1u64 << 30) as f64;
/// The upload's chunk, one `Bytes` shared by every frame of every upload.
const CHUNK: usize = 64 * 1024;
/// A connection's bound in bytes (the count bound: 65,536 transfers of 1 MiB, 1,024 of 64 MiB).
const MAX_BYTES_PER_CONN: u64 = 64 << 30;
/// One transfer's bound, answer and body included.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(60);
const UPLOAD_ANSWER: &[u8] = b"ok\n";

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Weir,
    Nginx,
    Haproxy,
    Direct,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Weir => "weir (1 worker)",
            Kind::Nginx => "nginx (1 worker)",
            Kind::Haproxy => "HAProxy (1 thread)",
            Kind::Direct => "direct (no proxy)",
        }
    }
}

const KINDS: [Kind; 4] = [Kind::Weir, Kind::Nginx, Kind::Haproxy, Kind::Direct];

#[derive(Clone, Copy, PartialEq)]
enum Dir {
    Download,
    Upload,
}

#[derive(Clone, Copy)]
struct Scenario {
    dir: Dir,
    size: u64,
}

impl Scenario {
    fn name(self) -> String {
        let d = match self.dir {
            Dir::Download => "download",
            Dir::Upload => "upload",
        };
        format!("{d} {} MiB", self.size / MIB)
    }

    fn path(self) -> String {
        match self.dir {
            Dir::Download => format!("/dl/{}m.bin", self.size / MIB),
            Dir::Upload => "/up".into(),
        }
    }
}

const SCENARIOS: [Scenario; 4] = [
    Scenario {
        dir: Dir::Download,
        size: MIB,
    },
    Scenario {
        dir: Dir::Download,
        size: 64 * MIB,
    },
    Scenario {
        dir: Dir::Upload,
        size: MIB,
    },
    Scenario {
        dir: Dir::Upload,
        size: 64 * MIB,
    },
];

struct Setup {
    dir: PathBuf,
    upstream: u16,
    weir: PathBuf,
    conns: u64,
    nginx_buffer_kib: u64,
}

/// The upstream on CPU 1: the two files by sendfile under /dl/; `POST /up` answered "ok\n"
/// only once its body was read whole.
///
/// Not `return 200`: nginx answers that at once and reads and discards the body afterwards, and
/// a proxy that sees the answer before it has forwarded the body may stop forwarding (nginx
/// does: it answers its client and closes the connection), so the upload would not be moved.
/// Here the mirror module reads the body first (in memory up to 1 MiB, beyond that through a
/// temporary file, deleted at once); the static handler then refuses POST to the file `up`
/// (405), which `error_page` turns into the answer.
fn upstream(dir: &Path, port: u16) -> Proc {
    let www = dir.join("www");
    std::fs::create_dir_all(www.join("dl")).expect("create the upstream's document root");
    std::fs::write(www.join("up"), "\n").expect("write the upload target");
    let chunk = vec![b'w'; CHUNK];
    for mib in [1u64, 64] {
        let path = www.join("dl").join(format!("{mib}m.bin"));
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(&path).expect("create a file to download"),
        );
        for _ in 0..mib * MIB / CHUNK as u64 {
            f.write_all(&chunk).expect("write a file to download");
        }
        f.flush().expect("write a file to download");
    }
    nginx_upstream_with(
        dir,
        "upstream",
        port,
        &format!(
            "server {{ listen 127.0.0.1:{port} backlog=4096; sendfile on; client_max_body_size 0;\n\
             location /dl/ {{ root {www}; }}\n\
             location = /up {{ client_body_buffer_size 1m; mirror /null; root {www}; error_page 405 =200 /ok; }}\n\
             location = /null {{ internal; return 204; }}\n\
             location = /ok {{ internal; return 200 \"ok\\n\"; }} }}\n",
            www = www.display(),
        ),
    )
}

/// nginx (one worker) streaming both ways to the upstream with keep-alive, no body limit, and
/// the forwarding fields weir adds. Unbuffered, nginx moves a body through one buffer each way:
/// `proxy_buffer_size` (default one page, 4 KiB) for the response, `client_body_buffer_size`
/// (default 16 KiB) for the request; `buffer_kib` sets both (weir's buffers grow to 64 KiB,
/// HAProxy's are 16 KiB), 0 keeps nginx's defaults.
fn nginx_conf(dir: &Path, port: u16, up: u16, buffer_kib: u64) -> String {
    let preamble = nginx_preamble(dir, "proxy", 1024);
    let buffers = if buffer_kib == 0 {
        String::new()
    } else {
        // nginx checks the busy size against proxy_buffers even when it does not use them.
        format!(
            "proxy_buffer_size {buffer_kib}k; proxy_buffers 4 {buffer_kib}k; proxy_busy_buffers_size {}k; client_body_buffer_size {buffer_kib}k;\n",
            2 * buffer_kib
        )
    };
    format!(
        "{preamble}\
         upstream app {{ server 127.0.0.1:{up}; keepalive 64; keepalive_requests 100000000; }}\n\
         server {{ listen 127.0.0.1:{port} backlog=4096; client_max_body_size 0;\n\
         location / {{ proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\";\n\
         proxy_request_buffering off; proxy_buffering off; {buffers}\
         proxy_set_header Host $http_host; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; proxy_set_header X-Forwarded-Proto $scheme; proxy_set_header X-Forwarded-Host $http_host; }} }} }}\n"
    )
}

/// HAProxy (one thread), configured as `nginx_conf` is; it streams bodies by default. Its
/// timeouts are inactivity timeouts, far above a 64 MiB transfer's pauses.
fn haproxy_conf(port: u16, up: u16) -> String {
    format!(
        "global\n  nbthread 1\n  maxconn 1000\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 300s\n  timeout server 300s\n  option http-keep-alive\n  http-reuse always\n\
         frontend f\n  bind 127.0.0.1:{port}\n  option forwardfor\n  http-request set-header X-Forwarded-Proto http\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  default_backend b\n\
         backend b\n  server up 127.0.0.1:{up}\n",
    )
}

/// Starts the proxy of `kind` on CPU 0; returns it (None for direct) and the port to load.
fn start(kind: Kind, s: &Setup) -> (Option<Proc>, u16) {
    let port = free_port();
    let proc = match kind {
        Kind::Direct => return (None, s.upstream),
        Kind::Weir => {
            let conf = s.dir.join("weir.yaml");
            // One route; stable and canary are the same upstream, and canary gets nothing.
            let yaml = weir_config_on(port, free_port(), s.upstream, s.upstream, 0);
            std::fs::write(&conf, yaml).expect("write weir config");
            weir("0", &s.weir, &conf, Some(1))
        }
        Kind::Nginx => {
            let conf = s.dir.join("nginx-proxy.conf");
            std::fs::write(
                &conf,
                nginx_conf(&s.dir, port, s.upstream, s.nginx_buffer_kib),
            )
            .expect("write nginx proxy config");
            nginx(&s.dir, &conf)
        }
        Kind::Haproxy => {
            let conf = s.dir.join("haproxy.cfg");
            std::fs::write(&conf, haproxy_conf(port, s.upstream)).expect("write haproxy config");
            haproxy(&conf)
        }
    };
    wait_for_port(port);
    (Some(proc), port)
}

/// A request body of `left` bytes, every frame a slice of one shared chunk; `done` fires when
/// hyper takes the last frame (dropped unfired if the body was abandoned before).
struct Upload {
    chunk: Bytes,
    left: u64,
    done: Option<oneshot::Sender<()>>,
}

impl Body for Upload {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let n = self.left.min(self.chunk.len() as u64);
        self.left -= n;
        // hyper ends a body of known length after its last byte without asking for more.
        if self.left == 0 {
            if let Some(done) = self.done.take() {
                let _ = done.send(());
            }
        }
        Poll::Ready(Some(Ok(Frame::data(self.chunk.slice(..n as usize)))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

type Sender = http1::SendRequest<Upload>;

async fn connect(addr: SocketAddr) -> Result<Sender, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (sender, conn) = http1::handshake::<_, Upload>(TokioIo::new(tcp))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// One transfer of `s` on `sender`: Ok when the whole body went where it should (the response
/// read and counted, the upload sent whole).
async fn transfer(sender: &mut Sender, s: Scenario, chunk: &Bytes) -> Result<(), String> {
    sender
        .ready()
        .await
        .map_err(|e| format!("connection not ready: {e}"))?;
    let (body, sent) = match s.dir {
        Dir::Download => (
            Upload {
                chunk: chunk.clone(),
                left: 0,
                done: None,
            },
            None,
        ),
        Dir::Upload => {
            let (tx, rx) = oneshot::channel();
            (
                Upload {
                    chunk: chunk.clone(),
                    left: s.size,
                    done: Some(tx),
                },
                Some(rx),
            )
        }
    };
    let method = match s.dir {
        Dir::Download => http::Method::GET,
        Dir::Upload => http::Method::POST,
    };
    let mut req = http::Request::builder()
        .method(method)
        .uri(s.path())
        .header("host", "bench");
    if s.dir == Dir::Upload {
        req = req.header("content-length", s.size);
    }
    let req = req.body(body).map_err(|e| format!("request: {e}"))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let status = resp.status();
    let mut body = resp.into_body();
    let mut got = 0u64;
    let mut first = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("response body broke after {got} bytes: {e}"))?;
        if let Some(d) = frame.data_ref() {
            got += d.len() as u64;
            if first.len() < 16 {
                first.extend_from_slice(&d[..d.len().min(16)]);
            }
        }
    }
    if !status.is_success() {
        return Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&first).trim_end()
        ));
    }
    match s.dir {
        Dir::Download if got != s.size => Err(format!("{got} bytes received of {}", s.size)),
        Dir::Download => Ok(()),
        Dir::Upload if first != UPLOAD_ANSWER => Err(format!(
            "upload answered {:?}, not \"ok\\n\"",
            String::from_utf8_lossy(&first)
        )),
        Dir::Upload => match sent {
            // An answer may come before the body was sent (a proxy passing on an early one):
            // the upload counts once hyper has taken its last frame.
            Some(rx) => rx
                .await
                .map_err(|_| "upload body abandoned before its end".to_string()),
            None => Ok(()),
        },
    }
}

/// `transfer` within TRANSFER_TIMEOUT.
async fn bounded(sender: &mut Sender, s: Scenario, chunk: &Bytes) -> Result<(), String> {
    tokio::time::timeout(TRANSFER_TIMEOUT, transfer(sender, s, chunk))
        .await
        .unwrap_or_else(|_| Err(format!("no complete transfer in {TRANSFER_TIMEOUT:?}")))
}

#[derive(Default)]
struct ConnResult {
    ok: u64,
    failed: u64,
    error: Option<String>,
}

/// Transfers back to back on one connection until `deadline` or `max` transfers; a failed one
/// drops the connection and the next opens another.
async fn conn_loop(
    addr: SocketAddr,
    mut sender: Option<Sender>,
    s: Scenario,
    chunk: Bytes,
    deadline: Instant,
    max: u64,
) -> ConnResult {
    let mut r = ConnResult::default();
    for _ in 0..max {
        if Instant::now() >= deadline {
            break;
        }
        let mut tx = match sender.take() {
            Some(tx) => tx,
            None => match connect(addr).await {
                Ok(tx) => tx,
                Err(e) => {
                    r.failed += 1;
                    r.error.get_or_insert(e);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        match bounded(&mut tx, s, &chunk).await {
            Ok(()) => {
                r.ok += 1;
                sender = Some(tx);
            }
            Err(e) => {
                r.failed += 1;
                r.error.get_or_insert(e);
            }
        }
    }
    r
}

#[derive(Clone, Default)]
struct Run {
    mib_per_s: f64,
    /// The proxy's CPU seconds per GiB moved (NaN for direct).
    cpu_per_gib: f64,
    /// The proxy's VmHWM, MiB (NaN for direct).
    peak_rss: f64,
    ok: u64,
    failed: u64,
    error: Option<String>,
}

/// `conns` connections, one untimed transfer each, then `secs` of transfers back to back,
/// with the proxy's CPU read around the timed part.
async fn load(port: u16, s: Scenario, conns: u64, secs: u64, proxy: Option<&Proc>) -> Run {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let chunk = Bytes::from(vec![b'u'; CHUNK]);
    let mut warm = Vec::new();
    for _ in 0..conns {
        let chunk = chunk.clone();
        warm.push(tokio::spawn(async move {
            let mut tx = connect(addr).await?;
            bounded(&mut tx, s, &chunk).await.map(|()| tx)
        }));
    }
    // A failed warm-up transfer counts as failed; its connection starts afresh when timed.
    let mut run = Run::default();
    let mut senders = Vec::new();
    for w in warm {
        let warmed = w.await.unwrap_or_else(|e| Err(format!("client task: {e}")));
        senders.push(match warmed {
            Ok(tx) => Some(tx),
            Err(e) => {
                run.failed += 1;
                run.error.get_or_insert(format!("warm-up: {e}"));
                None
            }
        });
    }
    let max = (MAX_BYTES_PER_CONN / s.size).max(1);
    let cpu0 = proxy.map(Proc::cpu_seconds);
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(secs);
    let tasks: Vec<_> = senders
        .into_iter()
        .map(|tx| tokio::spawn(conn_loop(addr, tx, s, chunk.clone(), deadline, max)))
        .collect();
    for t in tasks {
        match t.await {
            Ok(r) => {
                run.ok += r.ok;
                run.failed += r.failed;
                if run.error.is_none() {
                    run.error = r.error;
                }
            }
            Err(e) => {
                run.failed += 1;
                run.error.get_or_insert(format!("client task: {e}"));
            }
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let bytes = (run.ok * s.size) as f64;
    run.mib_per_s = bytes / MIB as f64 / elapsed;
    run.cpu_per_gib = match (proxy, cpu0) {
        (Some(p), Some(c0)) if bytes > 0.0 => (p.cpu_seconds() - c0) / (bytes / GIB),
        _ => f64::NAN,
    };
    run.peak_rss = proxy.map_or(f64::NAN, Proc::peak_rss_mib);
    run
}

/// Bytes the upstream's established server-side sockets on `port` have read: the kernel's
/// `bytes_received` less what still waits unread (Recv-Q). None without `ss`.
fn upstream_read(port: u16) -> Option<u64> {
    let out = Command::new("ss")
        .args(["-tinH", "state", "established"])
        .arg(format!("( sport = :{port} )"))
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut total: i64 = 0;
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) {
            // A socket's line: Recv-Q comes first (with `state`, there is no State column).
            let queued: i64 = line
                .split_whitespace()
                .next()
                .and_then(|q| q.parse().ok())
                .unwrap_or(0);
            total -= queued;
        }
        for field in line.split_whitespace() {
            if let Some(n) = field.strip_prefix("bytes_received:") {
                total += n.parse::<i64>().unwrap_or(0);
            }
        }
    }
    Some(total.max(0) as u64)
}

/// Before timing, through a fresh process of each contender on one connection: a 64 MiB
/// download (its length checked), a 64 MiB upload, then a 1 MiB download (the connection still
/// in step). Panics on a failure; returns what the upstream was seen to read of the upload.
fn check(rt: &tokio::runtime::Runtime, kind: Kind, s: &Setup) -> String {
    let (proc, port) = start(kind, s);
    let chunk = Bytes::from(vec![b'u'; CHUNK]);
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let big_up = SCENARIOS[3];
    let seen = rt.block_on(async {
        let mut tx = connect(addr)
            .await
            .unwrap_or_else(|e| panic!("pre-run check: {} on port {port}: {e}", kind.name()));
        let mut seen = None;
        for (step, sc) in [SCENARIOS[1], big_up, SCENARIOS[0]].into_iter().enumerate() {
            let before = upstream_read(s.upstream);
            if let Err(e) = bounded(&mut tx, sc, &chunk).await {
                panic!(
                    "pre-run check (step {} of 3, {}) failed through {}: {e}",
                    step + 1,
                    sc.name(),
                    kind.name()
                );
            }
            if sc.dir != Dir::Upload {
                continue;
            }
            // The upstream answers before it reads the body: wait (2 s at most) until it did.
            let wait = Instant::now() + Duration::from_secs(2);
            let mut read = 0;
            while let (Some(b), Some(a)) = (before, upstream_read(s.upstream)) {
                read = a.saturating_sub(b);
                if read >= sc.size || Instant::now() > wait {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            seen = before.map(|_| read);
        }
        seen
    });
    drop(proc);
    match seen {
        Some(read) if read >= big_up.size => format!(
            "{}: the upstream read {:.2} MiB on its open connections during the 64 MiB upload",
            kind.name(),
            read as f64 / MIB as f64
        ),
        Some(read) => format!(
            "{}: NOT CONFIRMED that the upstream read the 64 MiB upload: {:.2} MiB seen on its \
             open connections (a connection closed meanwhile is not counted; `ss` missing reads 0)",
            kind.name(),
            read as f64 / MIB as f64
        ),
        None => format!("{}: upstream read not measured", kind.name()),
    }
}

fn measure(rt: &tokio::runtime::Runtime, kind: Kind, sc: Scenario, s: &Setup, secs: u64) -> Run {
    let (proc, port) = start(kind, s);
    let run = rt.block_on(load(port, sc, s.conns, secs, proc.as_ref()));
    drop(proc);
    // Let the closed connections' sockets go before the next contender.
    std::thread::sleep(Duration::from_millis(200));
    run
}

/// `median (r1, r2, …)` of `f` over `runs`, or "—" when it does not apply.
fn cell(runs: &[Run], f: fn(&Run) -> f64, digits: usize) -> String {
    let values: Vec<f64> = runs.iter().map(f).collect();
    if values.iter().all(|v| v.is_nan()) {
        return "—".into();
    }
    let per: Vec<String> = values.iter().map(|v| format!("{v:.digits$}")).collect();
    format!("{:.digits$} ({})", median(values.clone()), per.join(", "))
}

fn ratio(value: f64, best: f64) -> String {
    if value.is_finite() && best.is_finite() && best > 0.0 {
        format!("{:.2}×", value / best)
    } else {
        "—".into()
    }
}

fn main() {
    if !benching() {
        return; // `cargo test --benches`: nothing to do
    }
    let rounds = env_or("ROUNDS", 2).max(1);
    let secs = env_or("DURATION", 10).max(1);
    let conns = env_or("CONNS", 4).max(1);
    let (weir, _) = weir_binaries("benches/load/bodies.sh");
    let dir = run_dir("bodies");
    let setup = Setup {
        dir: dir.clone(),
        upstream: free_port(),
        weir,
        conns,
        nginx_buffer_kib: env_or("NGINX_BUFFER_KIB", 64),
    };
    let _upstream = upstream(&dir, setup.upstream);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let mut notes = Vec::new();
    for kind in KINDS {
        eprintln!("pre-run check: {}", kind.name());
        notes.push(check(&rt, kind, &setup));
    }

    // results[scenario][contender]: one Run per round.
    let mut results: Vec<Vec<Vec<Run>>> = vec![vec![Vec::new(); KINDS.len()]; SCENARIOS.len()];
    for round in 0..rounds {
        for (si, &sc) in SCENARIOS.iter().enumerate() {
            for (ki, &kind) in KINDS.iter().enumerate() {
                eprintln!(
                    "round {}/{rounds}: {}, {}",
                    round + 1,
                    sc.name(),
                    kind.name()
                );
                let run = measure(&rt, kind, sc, &setup, secs);
                if let Some(e) = &run.error {
                    eprintln!("  {} failed; first: {e}", run.failed);
                }
                results[si][ki].push(run);
            }
        }
    }

    let nginx_buffers = match setup.nginx_buffer_kib {
        0 => "nginx's default buffers (4 KiB response, 16 KiB request)".to_string(),
        k => format!("nginx's buffers {k} KiB each way"),
    };
    println!(
        "\nHTTP/1.1 bodies over {conns} connections, transfers back to back for {secs} s per run; \
         rounds: {rounds}, interleaved; medians (per round). Proxies on CPU 0 (one worker or \
         thread; {nginx_buffers}), upstream nginx and client on CPU 1. × best peer: against the \
         better of nginx and HAProxy (throughput: higher is better; CPU: lower is better).\n"
    );
    println!("| scenario | contender | MiB/s | × best peer | proxy CPU s/GiB | × best peer | proxy peak RSS, MiB | transfers | failed |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let med = |runs: &[Run], f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
    for (si, sc) in SCENARIOS.iter().enumerate() {
        let by = &results[si];
        let peers = [&by[1], &by[2]];
        let best_tput = peers
            .iter()
            .map(|r| med(r, |r| r.mib_per_s))
            .fold(f64::NAN, f64::max);
        let best_cpu = peers
            .iter()
            .map(|r| med(r, |r| r.cpu_per_gib))
            .fold(f64::NAN, f64::min);
        for (ki, kind) in KINDS.iter().enumerate() {
            let runs = &by[ki];
            let proxied = *kind != Kind::Direct;
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                sc.name(),
                kind.name(),
                cell(runs, |r| r.mib_per_s, 0),
                if proxied {
                    ratio(med(runs, |r| r.mib_per_s), best_tput)
                } else {
                    "—".into()
                },
                cell(runs, |r| r.cpu_per_gib, 2),
                ratio(med(runs, |r| r.cpu_per_gib), best_cpu),
                cell(runs, |r| r.peak_rss, 1),
                runs.iter().map(|r| r.ok).sum::<u64>(),
                runs.iter().map(|r| r.failed).sum::<u64>(),
            );
        }
    }

    // The noise floor: how far apart the rounds of the direct run are.
    let spreads: Vec<String> = SCENARIOS
        .iter()
        .enumerate()
        .map(|(si, sc)| {
            let v: Vec<f64> = results[si][3].iter().map(|r| r.mib_per_s).collect();
            let (lo, hi) = v
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                    (lo.min(x), hi.max(x))
                });
            format!(
                "{} {:.1} %",
                sc.name(),
                (hi - lo) / median(v.clone()) * 100.0
            )
        })
        .collect();
    if rounds < 2 {
        println!("\nNoise floor: one round, so no spread between rounds was measured.");
    } else {
        println!(
            "\nNoise floor (direct run's throughput, (max − min) / median over the rounds): {}.",
            spreads.join("; ")
        );
    }

    // Does a proxy's peak memory follow the body size? 64 MiB peak less 1 MiB peak.
    println!("\nPeak RSS, 64 MiB scenario less 1 MiB scenario (medians):");
    for (ki, kind) in KINDS.iter().enumerate().take(3) {
        let growth = |small: usize, big: usize| {
            let a = med(&results[small][ki], |r| r.peak_rss);
            let b = med(&results[big][ki], |r| r.peak_rss);
            format!("{:+.1} MiB ({a:.1} → {b:.1})", b - a)
        };
        println!(
            "- {}: download {}, upload {}",
            kind.name(),
            growth(0, 1),
            growth(2, 3)
        );
    }

    println!("\nPre-run check (64 MiB download, 64 MiB upload, 1 MiB download on one connection; passed):");
    for n in &notes {
        println!("- {n}");
    }

    let mut failures = Vec::new();
    for (si, sc) in SCENARIOS.iter().enumerate() {
        for (ki, kind) in KINDS.iter().enumerate() {
            let runs = &results[si][ki];
            if let Some(first) = runs.iter().find_map(|r| r.error.clone()) {
                let failed: u64 = runs.iter().map(|r| r.failed).sum();
                failures.push(format!(
                    "- {}, {}: {failed} failed; first: {first}",
                    sc.name(),
                    kind.name()
                ));
            }
        }
    }
    if failures.is_empty() {
        println!("\nNo failed transfers.");
    } else {
        println!("\nFailed transfers:");
        for f in failures {
            println!("{f}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
