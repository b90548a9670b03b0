//! gRPC unary calls through weir, nginx (`grpc_pass`) and HAProxy (`proto h2` on both sides)
//! to one h2c gRPC upstream whose SETTINGS_MAX_CONCURRENT_STREAMS is 10, 100 or 1,000
//! (issue 18). Run it with benches/load/grpc.sh, which installs the peers and h2load.
//!
//! The upstream runs in this process (a hyper HTTP/2 server: each call answered with a gRPC
//! message and a `grpc-status: 0` trailer), with h2load, on CPU 1; each proxy in turn on CPU 0,
//! one worker or thread each. Before each measured run 20 calls go through the proxy with a
//! real HTTP/2 client and their status, content type and trailer are checked, and that the
//! upstream saw X-Forwarded-For, -Proto and -Host (every proxy is set to add them, as weir
//! does by default, so that each does the same work). h2load then runs
//! `-c 64 -m 10` for DURATION seconds; from its per-request log come calls/s, p99, failures and
//! the slowest 10 s window against the mean (a collapse shows there). The proxy's CPU time comes
//! from /proc, user and kernel apart, with the share of its core it kept busy (well below
//! 100 %, the load side on the other core was the limit, not the proxy); the upstream counts
//! the connections each proxy opened and the most open at once. Rounds are interleaved
//! (direct, weir, nginx, HAProxy, direct, …) and every round's value is printed. Then flow
//! control: on one connection, 25 calls carrying a 4 MiB message and one 256 MiB server
//! stream, through each proxy against the upstream's own speed. Loopback only, bounded in
//! time. Reports; asserts nothing.
//!
//! `INSTRUCTIONS=N` counts instead: user-space instructions per call of each proxy under
//! callgrind, over N calls (see `instructions`).

use std::convert::Infallible;
use std::path::Path;
use std::pin::Pin;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

mod support;
use support::{env_or, free_port, median, nginx_preamble, run_dir, wait_for_port, Proc};

/// A gRPC message: 1 byte uncompressed flag, 4 bytes length, then the payload.
const MESSAGE: &[u8] = b"\0\0\0\0\x0a0123456789";
/// A server stream's messages.
const CHUNK: usize = 64 * 1024;
/// A big request message, as `BIG_MESSAGE` bytes.
const BIG_MESSAGE: usize = 4 * 1024 * 1024;

/// A call's answer: its messages (one for a unary call, many for a server stream), then
/// `grpc-status: 0` in the trailers.
struct Reply {
    data: Option<Bytes>,
    /// Further copies of `chunk` to send after `data`.
    more: u64,
    chunk: Bytes,
    trailers: Option<HeaderMap>,
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if self.more > 0 {
            self.more -= 1;
            return Poll::Ready(Some(Ok(Frame::data(self.chunk.clone()))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }
}

#[derive(Default)]
struct UpstreamCounts {
    accepted: AtomicU64,
    open: AtomicU64,
    peak_open: AtomicU64,
}

/// The gRPC upstream, serving until the process ends.
fn upstream(rt: &tokio::runtime::Runtime, max_streams: u32) -> (u16, Arc<UpstreamCounts>) {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind the upstream");
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let counts = Arc::new(UpstreamCounts::default());
    let c = counts.clone();
    rt.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let _ = tcp.set_nodelay(true);
            c.accepted.fetch_add(1, Ordering::Relaxed);
            let open = c.open.fetch_add(1, Ordering::Relaxed) + 1;
            c.peak_open.fetch_max(open, Ordering::Relaxed);
            let c = c.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                    // `x-reply-chunks: N`: a server stream of N messages of 64 KiB.
                    let more = req
                        .headers()
                        .get("x-reply-chunks")
                        .and_then(|v| v.to_str().ok()?.parse().ok())
                        .unwrap_or(0);
                    // Which forwarding fields came: every proxy is set to add all three.
                    let forwarded = ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host"]
                        .iter()
                        .filter(|h| req.headers().contains_key(**h))
                        .count();
                    // Read the request message whole, as a server does before answering.
                    let _ = req.into_body().collect().await;
                    let mut trailers = HeaderMap::new();
                    trailers.insert("grpc-status", HeaderValue::from_static("0"));
                    let reply = Reply {
                        data: Some(Bytes::from_static(MESSAGE)),
                        more,
                        chunk: Bytes::from(vec![0u8; CHUNK]),
                        trailers: Some(trailers),
                    };
                    Ok::<_, Infallible>(
                        Response::builder()
                            .header("content-type", "application/grpc")
                            .header("x-forwarded-seen", forwarded)
                            .body(reply)
                            .expect("a valid response"),
                    )
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .timer(TokioTimer::new())
                    .max_concurrent_streams(max_streams)
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
                c.open.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
    (port, counts)
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Direct,
    Weir,
    Nginx,
    Haproxy,
    /// An earlier build (WEIR_BASELINE_BIN): a change's before and after in the same run.
    Baseline,
}

impl Kind {
    /// The name `PROXIES` lists it by.
    fn key(self) -> &'static str {
        match self {
            Kind::Direct => "direct",
            Kind::Weir => "weir",
            Kind::Nginx => "nginx",
            Kind::Haproxy => "haproxy",
            Kind::Baseline => "baseline",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Direct => "direct (no proxy)",
            Kind::Weir => "weir (1 worker)",
            Kind::Nginx => "nginx (1 worker)",
            Kind::Haproxy => "HAProxy (1 thread)",
            Kind::Baseline => "baseline weir (1 worker)",
        }
    }
}

/// Starts the proxy of `kind` on CPU 0 in front of the upstream on `up`; under callgrind,
/// writing to `callgrind_out`, when that is given.
fn start(
    kind: Kind,
    dir: &Path,
    weir: &Path,
    up: u16,
    callgrind_out: Option<&Path>,
) -> (Option<Proc>, u16) {
    let port = free_port();
    let d = dir.display();
    let (program, args): (String, Vec<String>) = match kind {
        Kind::Direct => return (None, up),
        Kind::Weir | Kind::Baseline => {
            let weir = match (kind, std::env::var_os("WEIR_BASELINE_BIN")) {
                (Kind::Baseline, Some(baseline)) => std::path::PathBuf::from(baseline),
                _ => weir.to_path_buf(),
            };
            let conf = dir.join("weir.yaml");
            let admin = free_port();
            let yaml = format!(
                "listeners: [{{address: \"127.0.0.1:{port}\"}}]\nadmin: {{address: \"127.0.0.1:{admin}\"}}\n\
                 routes:\n- name: grpc\n  stable: {{addresses: [\"127.0.0.1:{up}\"], protocol: http2{pool}}}\n",
                // WEIR_HTTP2="max_streams_per_connection: 1000": pool settings to try.
                // (Not for the baseline, which may predate them.)
                pool = std::env::var("WEIR_HTTP2")
                    .ok()
                    .filter(|_| kind == Kind::Weir)
                    .map(|p| format!(", http2: {{{p}}}"))
                    .unwrap_or_default()
            );
            std::fs::write(&conf, yaml).expect("write weir config");
            (
                weir.display().to_string(),
                vec![
                    "--workers".into(),
                    "1".into(),
                    "run".into(),
                    "--config".into(),
                    conf.display().to_string(),
                ],
            )
        }
        Kind::Nginx => {
            let conf = dir.join("nginx-grpc.conf");
            std::fs::write(
                &conf,
                format!(
                    "{preamble}\
                     client_max_body_size 0;\n\
                     upstream grpc_up {{ server 127.0.0.1:{up}; keepalive 1024; keepalive_requests 100000000; }}\n\
                     server {{ listen 127.0.0.1:{port} http2 backlog=4096; location / {{ grpc_pass grpc://grpc_up;\n\
                     grpc_set_header X-Forwarded-For $proxy_add_x_forwarded_for; grpc_set_header X-Forwarded-Proto $scheme; grpc_set_header X-Forwarded-Host $host; }} }} }}\n",
                    preamble = nginx_preamble(dir, "grpc", 16384)
                ),
            )
            .expect("write nginx config");
            std::fs::create_dir_all(dir.join("tmp")).expect("nginx temp dir");
            (
                "nginx".into(),
                vec![
                    "-p".into(),
                    d.to_string(),
                    "-c".into(),
                    conf.display().to_string(),
                ],
            )
        }
        Kind::Haproxy => {
            let conf = dir.join("haproxy-grpc.cfg");
            std::fs::write(
                &conf,
                format!(
                    "global\n  nbthread 1\n  maxconn 8000\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n  http-reuse always\n\
                     frontend f\n  bind 127.0.0.1:{port} proto h2\n  default_backend b\n\
                     backend b\n  option forwardfor\n  http-request set-header X-Forwarded-Proto http\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  server up 127.0.0.1:{up} proto h2\n"
                ),
            )
            .expect("write haproxy config");
            (
                "haproxy".into(),
                vec!["-db".into(), "-f".into(), conf.display().to_string()],
            )
        }
    };
    let proc = match callgrind_out {
        None => {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            Proc::pinned("0", &program, &args)
        }
        Some(out) => {
            let out = format!("--callgrind-out-file={}", out.display());
            let mut wrapped = vec!["--tool=callgrind", out.as_str(), program.as_str()];
            wrapped.extend(args.iter().map(String::as_str));
            Proc::pinned("0", "valgrind", &wrapped)
        }
    };
    wait_for_port(port);
    (Some(proc), port)
}

/// 20 calls with a real HTTP/2 client: status 200, a gRPC body, `grpc-status: 0` trailer, and
/// through a proxy, the three X-Forwarded fields added (so each contender does the same work).
async fn check_calls(port: u16, proxied: bool) -> Result<(), String> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let (mut h2, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    for _ in 0..20 {
        let req = Request::post(format!("http://127.0.0.1:{port}/bench.Greeter/SayHello"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(Full::new(Bytes::from_static(MESSAGE)))
            .map_err(|e| e.to_string())?;
        let resp = h2.send_request(req).await.map_err(|e| e.to_string())?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?;
        let status = body.trailers().and_then(|t| t.get("grpc-status")).cloned();
        if parts.status != 200
            || parts.headers.get("content-type").map(|v| v.as_bytes()) != Some(b"application/grpc")
            || status.as_ref().map(|v| v.as_bytes()) != Some(b"0")
            || body.to_bytes() != MESSAGE
            || (proxied
                && parts.headers.get("x-forwarded-seen").map(|v| v.as_bytes()) != Some(b"3"))
        {
            return Err(format!(
                "status {}, headers {:?}, grpc-status {status:?}",
                parts.status, parts.headers
            ));
        }
    }
    Ok(())
}

struct Run {
    calls_per_s: f64,
    cpu_us_per_call: f64,
    /// The user-space part of `cpu_us_per_call` (the rest is the kernel's).
    user_us_per_call: f64,
    /// The proxy's CPU time over the run's length: near 1, its core was the limit; well
    /// below, the load side (h2load and the upstream, sharing the other core) was.
    busy: f64,
    p99_ms: f64,
    failed: u64,
    /// The slowest 10 s window's calls/s over the run's mean.
    worst_window: f64,
    upstream_conns: u64,
    peak_upstream_conns: u64,
}

/// h2load `-c 64 -m 10` for `secs` with a per-request log, read back.
/// Returns calls/s, p99 (ms), failed calls, the slowest window's share, calls made.
fn h2load(port: u16, secs: u64, dir: &Path) -> Option<(f64, f64, u64, f64, u64)> {
    let body = dir.join("message.bin");
    let log = dir.join("h2load.log");
    std::fs::write(&body, MESSAGE).ok()?;
    let _ = std::fs::remove_file(&log);
    let out = Command::new("h2load")
        .args(["-c", "64", "-m", "10", "-t", "1"])
        .arg(format!("-D{secs}"))
        .arg(format!("--data={}", body.display()))
        .args(["-H", "content-type: application/grpc", "-H", "te: trailers"])
        .arg(format!("--log-file={}", log.display()))
        .arg(format!("http://127.0.0.1:{port}/bench.Greeter/SayHello"))
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rate = stdout
        .lines()
        .find(|l| l.starts_with("finished in"))
        .and_then(|l| l.split(", ").nth(1))
        .and_then(|r| r.trim_end_matches(" req/s").parse::<f64>().ok())?;
    let text = std::fs::read_to_string(&log).ok()?;
    let mut durations = Vec::new();
    let mut ends = Vec::new();
    let mut failed = 0;
    for line in text.lines() {
        let f: Vec<u64> = line
            .split('\t')
            .map(|v| v.trim().parse::<i64>().unwrap_or(-1).max(0) as u64)
            .collect();
        let (Some(&start), Some(&status), Some(&took)) = (f.first(), f.get(1), f.get(2)) else {
            continue;
        };
        if status != 200 {
            failed += 1;
        }
        durations.push(took);
        ends.push(start + took);
    }
    durations.sort_unstable();
    let p99 = durations
        .get((durations.len() as f64 * 0.99) as usize)
        .copied()
        .unwrap_or(0) as f64
        / 1000.0;
    // Calls finished per 10 s window, whole windows only.
    let first = ends.iter().min().copied().unwrap_or(0);
    let windows = secs / 10;
    let mut per_window = vec![0u64; windows as usize];
    for end in ends {
        let w = (end - first) / 10_000_000;
        if let Some(n) = per_window.get_mut(w as usize) {
            *n += 1;
        }
    }
    let mean = per_window.iter().sum::<u64>() as f64 / windows.max(1) as f64;
    let worst = per_window.iter().min().copied().unwrap_or(0) as f64;
    let worst_window = if mean > 0.0 { worst / mean } else { 0.0 };
    Some((rate, p99, failed, worst_window, durations.len() as u64))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds = env_or("ROUNDS", 2);
    let secs = env_or("DURATION", 30).max(10);
    let limits: Vec<u32> = std::env::var("LIMITS")
        .unwrap_or_else(|_| "10,100,1000".into())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    let weir = std::env::var("WEIR_BIN").unwrap_or_else(|_| "target/release/weir".into());
    let weir = Path::new(&weir).to_path_buf();
    let dir = run_dir("grpc-bench");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    // With a baseline build: weir before and after a change, nothing else (unless PROXIES
    // names others). PROXIES=weir (or direct,baseline,weir,nginx,haproxy): some only.
    let baseline = std::env::var_os("WEIR_BASELINE_BIN").is_some();
    let chosen = std::env::var("PROXIES")
        .ok()
        .or_else(|| baseline.then(|| "baseline,weir".to_string()));
    let kinds: Vec<Kind> = [
        Kind::Direct,
        Kind::Baseline,
        Kind::Weir,
        Kind::Nginx,
        Kind::Haproxy,
    ]
    .into_iter()
    .filter(|k| *k != Kind::Baseline || baseline)
    .filter(|k| {
        chosen
            .as_deref()
            .is_none_or(|c| c.split(',').any(|n| k.key() == n.trim()))
    })
    .collect();
    let kinds = &kinds[..];
    println!(
        "gRPC unary, h2load -c 64 -m 10, {secs} s a run, {rounds} interleaved rounds; proxies \
         on CPU 0, h2load and the upstream on CPU 1"
    );
    if let Some(calls) = std::env::var("INSTRUCTIONS")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        for &limit in &limits {
            instructions(&rt, kinds, &dir, &weir, limit, calls, rounds);
        }
        // Kept for callgrind_annotate: where the instructions go.
        println!(
            "\ncallgrind dumps (`callgrind_annotate --inclusive=yes <file>.1`): {}",
            dir.display()
        );
        return;
    }
    for &limit in &limits {
        let (up, counts) = upstream(&rt, limit);
        let mut results: Vec<Vec<Run>> = kinds.iter().map(|_| Vec::new()).collect();
        for round in 0..rounds {
            for (k, &kind) in kinds.iter().enumerate() {
                let (proc, port) = start(kind, &dir, &weir, up, None);
                if let Err(e) = rt.block_on(check_calls(port, kind != Kind::Direct)) {
                    println!("  {}: calls not answered as gRPC: {e}", kind.name());
                    continue;
                }
                // The check's connections closed: count only the run's.
                std::thread::sleep(Duration::from_millis(200));
                let accepted = counts.accepted.load(Ordering::Relaxed);
                counts
                    .peak_open
                    .store(counts.open.load(Ordering::Relaxed), Ordering::Relaxed);
                let before = proc.as_ref().map_or((0.0, 0.0), Proc::cpu_split);
                let Some((rate, p99, failed, worst, calls)) = h2load(port, secs, &dir) else {
                    println!("  {}: h2load gave no result", kind.name());
                    continue;
                };
                let after = proc.as_ref().map_or((0.0, 0.0), Proc::cpu_split);
                let (user, sys) = (after.0 - before.0, after.1 - before.1);
                let calls = calls.max(1) as f64;
                results[k].push(Run {
                    calls_per_s: rate,
                    cpu_us_per_call: (user + sys) * 1e6 / calls,
                    user_us_per_call: user * 1e6 / calls,
                    busy: (user + sys) / secs as f64,
                    p99_ms: p99,
                    failed,
                    worst_window: worst,
                    upstream_conns: counts.accepted.load(Ordering::Relaxed) - accepted,
                    peak_upstream_conns: counts.peak_open.load(Ordering::Relaxed),
                });
                eprintln!(
                    "limit {limit} round {round} {}: {rate:.0} calls/s",
                    kind.name()
                );
                drop(proc);
            }
        }
        print_limit(limit, kinds, &results);
    }
    big_messages(&rt, kinds, &dir, &weir, rounds);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Flow control: one connection's 4 MiB uploads and a 256 MiB server stream, each proxy
/// against the upstream's own speed (direct), interleaved rounds.
fn big_messages(
    rt: &tokio::runtime::Runtime,
    kinds: &[Kind],
    dir: &Path,
    weir: &Path,
    rounds: u64,
) {
    let (up, _) = upstream(rt, 100);
    let mut results: Vec<Vec<(f64, f64)>> = kinds.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        for (k, &kind) in kinds.iter().enumerate() {
            let (proc, port) = start(kind, dir, weir, up, None);
            match rt.block_on(big_transfers(port, 25, 256)) {
                Ok(r) => results[k].push(r),
                Err(e) => println!("  {}: {e}", kind.name()),
            }
            drop(proc);
        }
    }
    println!("\nbig messages on one HTTP/2 connection: 25 calls carrying 4 MiB each, then a 256 MiB server stream (64 KiB messages)\n");
    println!("| proxy | 4 MiB uploads, MiB/s (per round) | server stream, MiB/s (per round) |");
    println!("|---|---|---|");
    for (k, kind) in kinds.iter().enumerate() {
        let r = &results[k];
        let ups: Vec<String> = r.iter().map(|x| format!("{:.0}", x.0)).collect();
        let downs: Vec<String> = r.iter().map(|x| format!("{:.0}", x.1)).collect();
        println!(
            "| {} | {:.0} ({}) | {:.0} ({}) |",
            kind.name(),
            median(r.iter().map(|x| x.0).collect()),
            ups.join(", "),
            median(r.iter().map(|x| x.1).collect()),
            downs.join(", ")
        );
    }
}

/// One HTTP/2 connection, calls one after another: `uploads` calls carrying a 4 MiB message,
/// then one server stream of `stream_mib` MiB. Returns MiB/s of each.
async fn big_transfers(port: u16, uploads: u32, stream_mib: u64) -> Result<(f64, f64), String> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let (mut h2, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let big = Bytes::from(vec![1u8; BIG_MESSAGE]);
    let started = std::time::Instant::now();
    for _ in 0..uploads {
        let req = Request::post(format!("http://127.0.0.1:{port}/bench.Greeter/Upload"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(Full::new(big.clone()))
            .map_err(|e| e.to_string())?;
        let resp = h2.send_request(req).await.map_err(|e| e.to_string())?;
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        if body.trailers().and_then(|t| t.get("grpc-status")).is_none() {
            return Err("an upload's answer had no grpc-status".into());
        }
    }
    let upload = f64::from(uploads) * 4.0 / started.elapsed().as_secs_f64();
    let chunks = stream_mib * 1024 * 1024 / CHUNK as u64;
    let req = Request::post(format!("http://127.0.0.1:{port}/bench.Greeter/Stream"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("x-reply-chunks", chunks.to_string())
        .body(Full::new(Bytes::from_static(MESSAGE)))
        .map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let resp = h2.send_request(req).await.map_err(|e| e.to_string())?;
    let mut body = resp.into_body();
    let mut received = 0u64;
    let mut trailers = false;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        if let Some(d) = frame.data_ref() {
            received += d.len() as u64;
        }
        trailers |= frame.is_trailers();
    }
    if received < chunks * CHUNK as u64 || !trailers {
        return Err(format!(
            "the stream ended early: {received} bytes, trailers {trailers}"
        ));
    }
    let stream = received as f64 / 1048576.0 / started.elapsed().as_secs_f64();
    Ok((upload, stream))
}

/// INSTRUCTIONS=N: each proxy under callgrind serves N calls (`h2load -n N -c 64 -m 10`) after
/// the 20 checked ones; its counters are zeroed after those and dumped after the load, so
/// start-up and the warm-up do not count. Instruction counts repeat on a shared, noisy machine,
/// where CPU seconds do not: the number to judge a change by (the timed runs say what it is
/// worth in calls/s). weir's "× reference" is against the baseline build when there is one,
/// else against the fewer instructions of nginx and HAProxy.
fn instructions(
    rt: &tokio::runtime::Runtime,
    kinds: &[Kind],
    dir: &Path,
    weir: &Path,
    limit: u32,
    calls: u64,
    rounds: u64,
) {
    let (up, _) = upstream(rt, limit);
    println!(
        "\nupstream SETTINGS_MAX_CONCURRENT_STREAMS = {limit}: user-space instructions per call \
         (callgrind), {calls} calls a round\n"
    );
    let mut rows = Vec::new();
    for &kind in kinds.iter().filter(|k| **k != Kind::Direct) {
        let mut per_round = Vec::new();
        for round in 0..rounds {
            let out = dir.join(format!("callgrind.{limit}.{}.{round}", kind.key()));
            let (Some(proc), port) = start(kind, dir, weir, up, Some(&out)) else {
                continue;
            };
            if let Err(e) = rt.block_on(check_calls(port, true)) {
                println!("  {}: calls not answered as gRPC: {e}", kind.name());
                continue;
            }
            let pid = proc.pid().to_string();
            let control = |what: &str| {
                Command::new("callgrind_control")
                    .args([what, &pid])
                    .output()
                    .is_ok_and(|o| o.status.success())
            };
            if !control("-z") {
                println!("  {}: callgrind_control -z failed", kind.name());
                continue;
            }
            let made = h2load_calls(port, calls, dir);
            if !control("-d") {
                println!("  {}: callgrind_control -d failed", kind.name());
                continue;
            }
            // The first dump after the start: `<out>.1`, counted from the zeroing.
            let dump = std::fs::read_to_string(format!("{}.1", out.display())).unwrap_or_default();
            let total = dump
                .lines()
                .find_map(|l| l.strip_prefix("summary: "))
                .and_then(|v| v.trim().parse::<f64>().ok());
            match (total, made) {
                (Some(total), Some(made)) if made > 0 => {
                    eprintln!("limit {limit} round {round} {}: {made} calls", kind.name());
                    per_round.push(total / made as f64);
                }
                _ => println!("  {}: no count (dump or h2load failed)", kind.name()),
            }
        }
        rows.push((kind, median(per_round.clone()), per_round));
    }
    // weir against the baseline build when there is one, else against the fewer instructions
    // of nginx and HAProxy.
    let of = |k: Kind| rows.iter().find(|r| r.0 == k).map(|r| r.1);
    let reference = of(Kind::Baseline).or_else(|| {
        [of(Kind::Nginx), of(Kind::Haproxy)]
            .into_iter()
            .flatten()
            .reduce(f64::min)
    });
    println!("| proxy | instructions per call (per round) | × reference |");
    println!("|---|---|---:|");
    for (kind, med, per_round) in &rows {
        let rounds: Vec<String> = per_round.iter().map(|v| format!("{v:.0}")).collect();
        let ratio = match reference {
            Some(r) if *kind == Kind::Weir && r > 0.0 => format!("{:.3}", med / r),
            _ => String::new(),
        };
        println!(
            "| {} | {med:.0} ({}) | {ratio} |",
            kind.name(),
            rounds.join(", ")
        );
    }
}

/// h2load `-n calls -c 64 -m 10`: the calls that succeeded, when it ran.
fn h2load_calls(port: u16, calls: u64, dir: &Path) -> Option<u64> {
    let body = dir.join("message.bin");
    std::fs::write(&body, MESSAGE).ok()?;
    let out = Command::new("h2load")
        .args(["-c", "64", "-m", "10", "-t", "1"])
        .arg(format!("-n{calls}"))
        .arg(format!("--data={}", body.display()))
        .args(["-H", "content-type: application/grpc", "-H", "te: trailers"])
        .arg(format!("http://127.0.0.1:{port}/bench.Greeter/SayHello"))
        .output()
        .ok()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // "requests: 20000 total, 20000 started, 20000 done, 20000 succeeded, 0 failed, …"
    stdout
        .lines()
        .find(|l| l.trim_start().starts_with("requests:"))?
        .split(", ")
        .find(|f| f.ends_with(" succeeded"))?
        .trim_end_matches(" succeeded")
        .trim()
        .parse()
        .ok()
}

fn print_limit(limit: u32, kinds: &[Kind], results: &[Vec<Run>]) {
    println!("\nupstream SETTINGS_MAX_CONCURRENT_STREAMS = {limit}\n");
    println!(
        "| proxy | calls/s (per round) | × reference | CPU µs/call (user + kernel) | proxy core busy | p99 ms | failed | slowest 10 s / mean | upstream conns opened (peak open) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---|");
    let med = |k: usize, f: fn(&Run) -> f64| median(results[k].iter().map(f).collect());
    // The reference: the better of nginx and HAProxy, or the baseline build.
    let reference: f64 = kinds
        .iter()
        .enumerate()
        .filter(|(_, k)| matches!(k, Kind::Nginx | Kind::Haproxy | Kind::Baseline))
        .map(|(i, _)| med(i, |r| r.calls_per_s))
        .fold(0.0, f64::max);
    for (k, kind) in kinds.iter().enumerate() {
        let runs = &results[k];
        if runs.is_empty() {
            println!("| {} | — | | | | | | | |", kind.name());
            continue;
        }
        let per_round: Vec<String> = runs
            .iter()
            .map(|r| format!("{:.0}", r.calls_per_s))
            .collect();
        let rate = med(k, |r| r.calls_per_s);
        let ratio = if reference > 0.0 && matches!(kind, Kind::Weir) {
            format!("{:.2}", rate / reference)
        } else {
            String::new()
        };
        let conns: Vec<String> = runs
            .iter()
            .map(|r| format!("{} ({})", r.upstream_conns, r.peak_upstream_conns))
            .collect();
        let (cpu, user) = (
            med(k, |r| r.cpu_us_per_call),
            med(k, |r| r.user_us_per_call),
        );
        println!(
            "| {} | {:.0} ({}) | {} | {:.2} ({:.1} + {:.1}) | {:.0} % | {:.2} | {} | {:.2} | {} |",
            kind.name(),
            rate,
            per_round.join(", "),
            ratio,
            cpu,
            user,
            cpu - user,
            med(k, |r| r.busy) * 100.0,
            med(k, |r| r.p99_ms),
            runs.iter().map(|r| r.failed).sum::<u64>(),
            runs.iter()
                .map(|r| r.worst_window)
                .fold(f64::INFINITY, f64::min),
            conns.join(", ")
        );
    }
}
