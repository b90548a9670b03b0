//! Many idle keep-alive clients (issue 16): what each costs a proxy in memory, what the proxy
//! gives back when they leave, and the latency of a steady load beside them. Run it with
//! benches/load/idle.sh, which installs the peers.
//!
//! Two nginx upstreams (stable, canary) on CPU 1, as in benches/load.rs; each proxy in turn on
//! CPU 0 with one worker or thread and the same 80/20 split (weir, nginx, HAProxy; weir's
//! earlier build too with WEIR_BASELINE_BIN). For each: its RSS once started and warmed by
//! 1,000 requests; then IDLE (8,000) HTTP/1.1 connections each make one request and stay
//! open, and the RSS is read again half a second later (the difference over IDLE is the cost
//! of one idle connection) and once more 3 s later (weir parks a connection idle for a second,
//! `proxy/src/listen/park.rs`: this is what one costs once parked); a steady RATE (1,000 req/s) then runs over 10 other connections for DURATION
//! seconds, its p99 measured from each request's scheduled time; then the idle clients close
//! and the RSS is read 2 s later. Rounds are interleaved and every round's value printed.
//! Loopback only, bounded in count and time. Reports; asserts nothing.
//!
//! Why 8,000 and not issue 16's 10,000: HAProxy reserves two descriptors per connection it may
//! take (20,214 for 10,100) and refuses to start above the process's hard limit, 20,000 on the
//! machines here. IDLE=10000 works where the limit allows.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

mod support;
use support::{
    benching, env_or, fixed_rate, free_port, get, haproxy, haproxy_conf, median, nginx,
    nginx_proxy_conf, nginx_upstream, pct, run_dir, wait_for_port, weir, weir_binaries,
    weir_config, Proc,
};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Weir,
    Baseline,
    Nginx,
    Haproxy,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Weir => "weir (1 worker)",
            Kind::Baseline => "baseline weir (1 worker)",
            Kind::Nginx => "nginx (1 worker)",
            Kind::Haproxy => "HAProxy (1 thread)",
        }
    }
}

struct Setup {
    dir: PathBuf,
    stable: u16,
    canary: u16,
    weir: PathBuf,
    baseline: Option<PathBuf>,
    /// Connections nginx and HAProxy are set to take: the idle ones, the steady load's, and
    /// some room (weir's template allows 20,000).
    capacity: u32,
}

fn start(kind: Kind, s: &Setup) -> (Proc, u16) {
    let port = free_port();
    let proc = match kind {
        Kind::Weir | Kind::Baseline => {
            let conf = s.dir.join("weir.yaml");
            std::fs::write(&conf, weir_config(port, s.stable, s.canary, 20))
                .expect("write weir config");
            let binary = match (kind, &s.baseline) {
                (Kind::Baseline, Some(b)) => b,
                _ => &s.weir,
            };
            weir("0", binary, &conf, Some(1))
        }
        Kind::Nginx => {
            let conf = s.dir.join("nginx-proxy.conf");
            std::fs::write(
                &conf,
                nginx_proxy_conf(&s.dir, port, s.stable, s.canary, s.capacity),
            )
            .expect("write nginx proxy config");
            nginx(&s.dir, &conf)
        }
        Kind::Haproxy => {
            let conf = s.dir.join("haproxy.cfg");
            std::fs::write(&conf, haproxy_conf(port, s.stable, s.canary, s.capacity))
                .expect("write haproxy config");
            haproxy(&conf)
        }
    };
    wait_for_port(port);
    (proc, port)
}

/// A client connection that made one request and now holds its connection open.
struct IdleClient {
    _sender: http1::SendRequest<Empty<Bytes>>,
    conn: tokio::task::JoinHandle<()>,
}

/// `n` connections, each with one answered request; those that failed are not returned.
async fn open_idle(port: u16, n: u64) -> Vec<IdleClient> {
    let mut clients = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let Ok(tcp) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
            continue;
        };
        let Ok((mut sender, conn)) = http1::handshake::<_, Empty<Bytes>>(TokioIo::new(tcp)).await
        else {
            continue;
        };
        let conn = tokio::spawn(async move {
            let _ = conn.await;
        });
        if get(&mut sender).await.is_some() {
            clients.push(IdleClient {
                _sender: sender,
                conn,
            });
        } else {
            conn.abort();
        }
    }
    clients
}

#[derive(Clone, Default)]
struct Run {
    rss_start: f64,
    rss_idle: f64,
    /// Bytes per idle connection.
    per_conn: f64,
    /// The same, 3 s later.
    per_conn_settled: f64,
    opened: u64,
    p99_ms: f64,
    failed: u64,
    rss_after: f64,
}

fn measure(
    rt: &tokio::runtime::Runtime,
    kind: Kind,
    s: &Setup,
    idle: u64,
    rate: u64,
    secs: u64,
) -> Run {
    let (proc, port) = start(kind, s);
    // Pools warmed and first allocations made, so that what follows is the idle clients'.
    let _ = rt.block_on(fixed_rate(port, 1000, 10, 1));
    std::thread::sleep(Duration::from_millis(300));
    let rss_start = proc.rss_mib();
    let clients = rt.block_on(open_idle(port, idle));
    std::thread::sleep(Duration::from_millis(500));
    let rss_idle = proc.rss_mib();
    std::thread::sleep(Duration::from_secs(3));
    let rss_settled = proc.rss_mib();
    let opened = clients.len() as u64;
    let (lat, failed) = rt.block_on(fixed_rate(port, rate, 10, secs));
    for c in &clients {
        c.conn.abort();
    }
    drop(clients);
    std::thread::sleep(Duration::from_secs(2));
    let rss_after = proc.rss_mib();
    Run {
        rss_start,
        rss_idle,
        per_conn: (rss_idle - rss_start) * 1024.0 * 1024.0 / opened.max(1) as f64,
        per_conn_settled: (rss_settled - rss_start) * 1024.0 * 1024.0 / opened.max(1) as f64,
        opened,
        p99_ms: pct(&lat, 0.99),
        failed,
        rss_after,
    }
}

fn main() {
    if !benching() {
        return; // `cargo test --benches`: nothing to do
    }
    let rounds = env_or("ROUNDS", 2);
    let idle = env_or("IDLE", 8_000);
    let rate = env_or("RATE", 1000);
    let secs = env_or("DURATION", 10);
    let (weir, baseline) = weir_binaries("benches/load/idle.sh");
    let dir = run_dir("idle");
    let setup = Setup {
        stable: free_port(),
        canary: free_port(),
        dir: dir.clone(),
        weir,
        baseline,
        capacity: u32::try_from(idle).unwrap_or(u32::MAX).saturating_add(100),
    };
    let _stable = nginx_upstream(&dir, "stable", setup.stable);
    let _canary = nginx_upstream(&dir, "canary", setup.canary);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut kinds = vec![Kind::Weir];
    if setup.baseline.is_some() {
        kinds.push(Kind::Baseline);
    }
    kinds.extend([Kind::Nginx, Kind::Haproxy]);
    let mut results: Vec<Vec<Run>> = vec![Vec::new(); kinds.len()];
    for round in 0..rounds {
        for (i, &kind) in kinds.iter().enumerate() {
            eprintln!("round {}/{rounds}: {}", round + 1, kind.name());
            results[i].push(measure(&rt, kind, &setup, idle, rate, secs));
        }
    }
    println!(
        "\n{idle} idle HTTP/1.1 keep-alive clients, then {rate} req/s over 10 more connections for \
         {secs} s; {rounds} interleaved rounds, medians (per round)\n"
    );
    println!("| proxy | RSS started, MiB | RSS with the idle clients, MiB | per idle connection, bytes | the same 3 s later | p99 at {rate} req/s, ms | failed | RSS 2 s after they left, MiB | idle clients answered |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (i, kind) in kinds.iter().enumerate() {
        let runs = &results[i];
        let cell = |f: fn(&Run) -> f64, digits: usize| {
            let per: Vec<String> = runs
                .iter()
                .map(|r| format!("{:.*}", digits, f(r)))
                .collect();
            format!(
                "{:.*} ({})",
                digits,
                median(runs.iter().map(f).collect()),
                per.join(", ")
            )
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            kind.name(),
            cell(|r| r.rss_start, 1),
            cell(|r| r.rss_idle, 1),
            cell(|r| r.per_conn, 0),
            cell(|r| r.per_conn_settled, 0),
            cell(|r| r.p99_ms, 3),
            runs.iter().map(|r| r.failed).sum::<u64>(),
            cell(|r| r.rss_after, 1),
            runs.iter()
                .map(|r| r.opened.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
