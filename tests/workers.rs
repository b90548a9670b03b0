//! `--workers N` (`src/workers.rs`): N threads, each a runtime of its own accepting from the
//! same listening socket, over real sockets on 127.0.0.1. A burst of client connections is
//! spread over the workers (`proxy/src/listen/balance.rs`), each served to its end, and every
//! worker's count falls back to zero when the clients leave.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::H1;
use common::weir::{sample, Weir};

fn config(upstream: SocketAddr) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{upstream}\"]}}\n"
    )
}

fn start(workers: usize, yaml: &str) -> Weir {
    let dir = common::temp_dir("weir");
    std::fs::write(dir.join("weir.yaml"), yaml).unwrap();
    let n = workers.to_string();
    Weir::start_with(dir.clone(), dir.join("weir.yaml"), &["--workers", &n])
}

/// Each worker's open client connections, from the admin's /metrics.
async fn per_worker(weir: &Weir, workers: usize) -> Vec<f64> {
    let text = weir.metrics().await;
    (0..workers)
        .map(|i| {
            let worker = i.to_string();
            sample(
                &text,
                "weir_worker_client_connections",
                &[("worker", worker.as_str())],
            )
        })
        .collect()
}

/// The names of the process's threads (Linux: /proc/PID/task/*/comm).
fn thread_names(pid: u32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_share_a_burst_of_connections_evenly_and_serve_each_to_its_end() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = start(3, &config(up.addr));
    let names = thread_names(weir.pid());
    for worker in ["weir-worker-1", "weir-worker-2"] {
        assert!(names.iter().any(|n| n == worker), "{worker}: {names:?}");
    }
    assert!(!names.iter().any(|n| n == "weir-worker-3"), "{names:?}");

    // 30 connections opened at once, each answered once and kept open.
    let mut opening = Vec::new();
    for _ in 0..30 {
        let addr = weir.addr;
        opening.push(tokio::spawn(async move {
            let mut h1 = H1::connect(addr).await;
            let first = h1.get("/", &[]).await.status;
            (h1, first)
        }));
    }
    let mut clients = Vec::new();
    for o in opening {
        let (h1, status) = tokio::time::timeout(Duration::from_secs(10), o)
            .await
            .expect("answered within 10 s")
            .unwrap();
        assert_eq!(status, 200);
        clients.push(h1);
    }
    let counts = per_worker(&weir, 3).await;
    assert_eq!(counts.iter().sum::<f64>(), 30.0, "{counts:?}");
    // A worker accepts while it holds at most 1 + 30/64 more than the least loaded one: after
    // its accept it is at most 2 ahead.
    let (fewest, most) = counts
        .iter()
        .fold((f64::MAX, 0f64), |(f, m), &c| (f.min(c), m.max(c)));
    assert!(most - fewest <= 2.0, "uneven: {counts:?}");

    // Every connection keeps being served by its worker.
    for h1 in &mut clients {
        assert_eq!(h1.get("/", &[]).await.status, 200);
    }
    assert_eq!(up.hits(), 60);

    drop(clients);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let counts = per_worker(&weir, 3).await;
        if counts.iter().all(|&c| c == 0.0) {
            break;
        }
        assert!(Instant::now() < deadline, "not counted out: {counts:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_runs_no_thread_of_its_own_and_counts_every_connection() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = start(1, &config(up.addr));
    let names = thread_names(weir.pid());
    assert!(
        !names.iter().any(|n| n.starts_with("weir-worker")),
        "{names:?}"
    );
    let mut clients = Vec::new();
    for _ in 0..3 {
        let mut h1 = H1::connect(weir.addr).await;
        assert_eq!(h1.get("/", &[]).await.status, 200);
        clients.push(h1);
    }
    assert_eq!(per_worker(&weir, 1).await, vec![3.0]);
}
