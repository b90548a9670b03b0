//! What the side-by-side benchmarks share: processes pinned to a CPU, with their CPU time and
//! RSS read from /proc, ports, environment knobs, the nginx upstream and the HTTP/1 peers'
//! configurations, and open-loop load at a fixed rate. Included by `mod support;`.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// True when cargo runs the benchmark (`cargo bench`), false under `cargo test --benches`.
pub fn benching() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// A run's working directory, `weir-<name>-<pid>` under the system's temporary directory, with
/// the `tmp/` nginx writes its temporary files to.
pub fn run_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-{name}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("tmp")).expect("create the run's temporary directory");
    dir
}

/// A port free now for a proxy or an upstream to listen on, below the kernel's ephemeral range
/// when it leaves room (32768–60999 by default). A port the kernel hands out for `:0` is an
/// ephemeral one, and the benchmark's own outgoing connections (load generators, upstream
/// pools) take ephemeral ports by the thousand: one took a proxy's port between this and the
/// proxy's bind, which then waited a minute for nothing ("nothing listens on 38555", round 9
/// of 20 of the edge run).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    const LOW: u16 = 10_000;
    if ephemeral_low > LOW + 1_000 {
        let span = ephemeral_low - LOW;
        // Spread by process, so two harnesses at once rarely try the same ports first.
        let start = (std::process::id() % u32::from(span)) as u16;
        for _ in 0..span {
            let offset = (start + NEXT.fetch_add(1, Ordering::Relaxed) % span) % span;
            let port = LOW + offset;
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return port;
            }
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

pub struct Proc {
    child: Child,
}

impl Proc {
    pub fn pinned(cpu: &str, program: &str, args: &[&str]) -> Proc {
        let child = Command::new("taskset")
            .arg("-c")
            .arg(cpu)
            .arg(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {program}: {e}"));
        Proc { child }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// utime + stime in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        let (user, sys) = self.cpu_split();
        user + sys
    }

    /// utime and stime in seconds: the process's own code, and the kernel's on its behalf
    /// (system calls, the network stack).
    pub fn cpu_split(&self) -> (f64, f64) {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // Fields after the command name (which may hold spaces) start after the last ')'.
        let rest = stat.rsplit(')').next().unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        (ticks(11) / 100.0, ticks(12) / 100.0)
    }

    /// Peak resident set size, MiB.
    pub fn peak_rss_mib(&self) -> f64 {
        self.status_mib("VmHWM:")
    }

    /// Resident set size now, MiB.
    pub fn rss_mib(&self) -> f64 {
        self.status_mib("VmRSS:")
    }

    fn status_mib(&self, field: &str) -> f64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `sig` to `pid` (a process this one started).
pub fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with a pid this process started and a plain signal number.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

pub fn wait_for_port(port: u16) {
    // Generous: a proxy under valgrind takes seconds to start.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// `ours` over the better of two peers, round by round (`higher_is_better` picks the peer).
/// Rounds interleave, so a round's ratio compares runs minutes apart, where medians of each
/// contender may pair a fast stretch of the VM with a slow one.
pub fn against_better(ours: &[f64], a: &[f64], b: &[f64], higher_is_better: bool) -> Vec<f64> {
    ours.iter()
        .zip(a.iter().zip(b))
        .map(|(&x, (&a, &b))| x / if higher_is_better { a.max(b) } else { a.min(b) })
        .collect()
}

/// A distribution-free interval for the median of `v`, at about 95 % confidence: the k-th
/// smallest and the k-th largest value, k the largest with P(Binomial(n, ½) < k) ≤ 2.5 % (each
/// value falls below the true median with probability ½, whatever the distribution). Returns
/// the two ends and the interval's exact coverage; `None` under 6 values, where even the
/// smallest and largest cover less than 95 %.
pub fn median_interval(v: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    // P(X <= j) for X ~ Binomial(n, 1/2), summed term by term while it stays within 2.5 %;
    // `tail` is P(X <= k - 1) for the k taken, so the coverage is 1 - 2 tail.
    let mut term = 0.5f64.powi(i32::try_from(n).ok()?);
    let (mut tail, mut k) = (0.0, 0);
    for j in 0..n {
        if tail + term > 0.025 {
            break;
        }
        tail += term;
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    if k == 0 {
        return None;
    }
    Some((v[k - 1], v[n - k], 1.0 - 2.0 * tail))
}

/// Each round's value, comma-separated, "–" where there is none.
pub fn listed(v: &[f64], decimals: usize) -> String {
    v.iter()
        .map(|x| match x.is_nan() {
            true => "–".to_string(),
            false => format!("{x:.decimals$}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// weir with one listener on `port`, its admin on `admin`, and the 80/20-style split of one
/// route over the two nginx upstreams (`weight` to canary).
pub fn weir_config_on(port: u16, admin: u16, stable: u16, canary: u16, weight: u32) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:{port}\"}}]\nadmin: {{address: \"127.0.0.1:{admin}\"}}\nlimits: {{max_connections: 20000}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"127.0.0.1:{stable}\"]}}\n  canary: {{addresses: [\"127.0.0.1:{canary}\"]}}\n  canary_weight: {weight}\n"
    )
}

/// `weir_config_on` with an admin port of its own.
pub fn weir_config(port: u16, stable: u16, canary: u16, weight: u32) -> String {
    weir_config_on(port, free_port(), stable, canary, weight)
}

/// The weir build to measure (WEIR_BIN, else target/release/weir) and an earlier one to measure
/// beside it (WEIR_BASELINE_BIN), each checked to exist; `script` is what builds the first.
pub fn weir_binaries(script: &str) -> (PathBuf, Option<PathBuf>) {
    let weir =
        PathBuf::from(std::env::var("WEIR_BIN").unwrap_or_else(|_| "target/release/weir".into()));
    assert!(weir.exists(), "{} missing: run {script}", weir.display());
    let baseline = std::env::var_os("WEIR_BASELINE_BIN").map(PathBuf::from);
    if let Some(b) = &baseline {
        assert!(b.exists(), "WEIR_BASELINE_BIN={} missing", b.display());
    }
    (weir, baseline)
}

/// weir (`binary`) on `cpus` running `conf`, with `workers` runtime threads (None: its default,
/// one per core).
pub fn weir(cpus: &str, binary: &Path, conf: &Path, workers: Option<u32>) -> Proc {
    let (binary, conf) = (binary.display().to_string(), conf.display().to_string());
    let workers = workers.map(|n| n.to_string());
    let mut args: Vec<&str> = Vec::new();
    if let Some(n) = &workers {
        args.extend(["--workers", n.as_str()]);
    }
    args.extend(["run", "--config", conf.as_str()]);
    Proc::pinned(cpus, &binary, &args)
}

/// nginx on CPU 0 with the configuration `conf`, its prefix `dir`.
pub fn nginx(dir: &Path, conf: &Path) -> Proc {
    Proc::pinned(
        "0",
        "nginx",
        &[
            "-p",
            &dir.display().to_string(),
            "-c",
            &conf.display().to_string(),
        ],
    )
}

/// HAProxy on CPU 0 with the configuration `conf`.
pub fn haproxy(conf: &Path) -> Proc {
    Proc::pinned("0", "haproxy", &["-db", "-f", &conf.display().to_string()])
}

/// What every nginx here starts with: one worker in the foreground, no logs but errors, its pid
/// and temporary files under `dir`, up to `conns` connections, keep-alive without limits; then
/// the `http` block's own lines (the caller closes the block).
pub fn nginx_preamble(dir: &Path, pid: &str, conns: u32) -> String {
    let d = dir.display();
    format!(
        "worker_processes 1; daemon off; master_process off; user root; error_log stderr error; pid {d}/{pid}.pid;\n\
         events {{ worker_connections {conns}; }}\n\
         http {{ access_log off; keepalive_requests 100000000; keepalive_timeout 300s;\n\
         client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp; uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n"
    )
}

/// An nginx upstream on CPU 1 answering `<name>\n` with an X-Backend header.
pub fn nginx_upstream(dir: &Path, name: &str, port: u16) -> Proc {
    nginx_upstream_with(
        dir,
        name,
        port,
        &format!(
            "server {{ listen 127.0.0.1:{port} backlog=4096; location / {{ add_header X-Backend {name} always; return 200 \"{name}\\n\"; }} }}\n"
        ),
    )
}

/// An nginx upstream on CPU 1 listening on `port`, named `name` (its config file and pid):
/// the preamble, then `http`, the `http` block's own lines (its servers), then the block's end.
pub fn nginx_upstream_with(dir: &Path, name: &str, port: u16, http: &str) -> Proc {
    let conf = dir.join(format!("upstream-{name}.conf"));
    std::fs::write(
        &conf,
        format!("{}{http}}}\n", nginx_preamble(dir, name, 4096)),
    )
    .expect("write nginx upstream config");
    let p = Proc::pinned(
        "1",
        "nginx",
        &[
            "-p",
            &dir.display().to_string(),
            "-c",
            &conf.display().to_string(),
        ],
    );
    wait_for_port(port);
    p
}

/// nginx (one worker) proxying HTTP/1 to `stable` and `canary` 80/20 with keep-alive and the
/// forwarding fields weir adds, for up to `conns` connections.
pub fn nginx_proxy_conf(dir: &Path, port: u16, stable: u16, canary: u16, conns: u32) -> String {
    let preamble = nginx_preamble(dir, "proxy", conns);
    format!(
        "{preamble}\
         upstream app {{ server 127.0.0.1:{st} weight=4; server 127.0.0.1:{ca} weight=1; keepalive 256; keepalive_requests 100000000; }}\n\
         server {{ listen 127.0.0.1:{port} backlog=4096; location / {{ proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\";\n\
         proxy_set_header Host $http_host; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; proxy_set_header X-Forwarded-Proto $scheme; proxy_set_header X-Forwarded-Host $http_host; }} }} }}\n",
        st = stable,
        ca = canary
    )
}

/// HAProxy (one thread) configured as `nginx_proxy_conf` is, for up to `maxconn` connections.
pub fn haproxy_conf(port: u16, stable: u16, canary: u16, maxconn: u32) -> String {
    format!(
        "global\n  nbthread 1\n  maxconn {maxconn}\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n  option http-keep-alive\n  http-reuse always\n\
         frontend f\n  bind 127.0.0.1:{port}\n  option forwardfor\n  http-request set-header X-Forwarded-Proto http\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  default_backend b\n\
         backend b\n  balance roundrobin\n  server stable 127.0.0.1:{stable} weight 80\n  server canary 127.0.0.1:{canary} weight 20\n",
    )
}

/// Open-loop load at `rate` req/s over `conns` connections for `secs`; latency measured from
/// each request's scheduled send time (no coordinated omission). Returns sorted microseconds
/// and the number of failed requests.
pub async fn fixed_rate(port: u16, rate: u64, conns: u64, secs: u64) -> (Vec<u64>, u64) {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let per_conn = rate / conns;
    let period = Duration::from_nanos(1_000_000_000 / per_conn);
    let total = per_conn * secs;
    let start = tokio::time::Instant::now() + Duration::from_millis(100);
    let mut tasks = Vec::new();
    for c in 0..conns {
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(total as usize);
            let mut failed = 0u64;
            let Ok(tcp) = tokio::net::TcpStream::connect(addr).await else {
                return (lat, total);
            };
            let _ = tcp.set_nodelay(true);
            let Ok((mut sender, conn)) =
                http1::handshake::<_, Empty<Bytes>>(TokioIo::new(tcp)).await
            else {
                return (lat, total);
            };
            tokio::spawn(conn);
            // Spread the connections' schedules over one period.
            let offset = period * c as u32 / conns as u32;
            for k in 0..total {
                let due = start + offset + period * k as u32;
                tokio::time::sleep_until(due).await;
                let ok = get(&mut sender).await;
                match ok {
                    Some(()) => lat.push(due.elapsed().as_micros() as u64),
                    None => failed += 1,
                }
            }
            (lat, failed)
        }));
    }
    let mut all = Vec::new();
    let mut failed = 0;
    for t in tasks {
        if let Ok((lat, f)) = t.await {
            all.extend(lat);
            failed += f;
        }
    }
    all.sort_unstable();
    (all, failed)
}

/// One `GET /` on `sender`, its answer read whole: Some when it was a success.
pub async fn get(sender: &mut http1::SendRequest<Empty<Bytes>>) -> Option<()> {
    sender.ready().await.ok()?;
    let req = http::Request::get("/")
        .header("host", "bench")
        .body(Empty::new())
        .ok()?;
    let resp = sender.send_request(req).await.ok()?;
    let ok = resp.status().is_success();
    resp.into_body().collect().await.ok()?;
    ok.then_some(())
}

/// The `q` quantile of sorted microseconds, in milliseconds.
pub fn pct(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1000.0
}
