//! Upstream connection pooling and client keep-alive limits, over real sockets.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::{raw, H1};
use common::listener::listen;
use common::weir::{sample, Weir};
use weir_proxy::table::spec::{BackendSpec, RouteSpec, TableSpec};
use weir_proxy::DataPlane;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_connections_are_reused_then_evicted_when_idle() {
    let up = backend::start("stable", Behaviour::default()).await;
    let mut backend = BackendSpec::new([up.addr.to_string()]);
    backend.pool_idle_timeout = Duration::from_millis(200);
    let plane = DataPlane::new();
    plane
        .apply(&TableSpec {
            routes: vec![RouteSpec::new("web", backend)],
        })
        .unwrap();
    let listening = listen(&plane, 10).await;
    let addr = listening.addr;

    let mut c = H1::connect(addr).await;
    for _ in 0..100 {
        assert_eq!(c.get("/", &[]).await.status, 200);
    }
    assert_eq!(
        up.conns.load(Ordering::SeqCst),
        1,
        "100 sequential requests share one upstream connection"
    );

    let table = plane.table.load();
    let endpoint = &table.route("web").unwrap().backend(0).endpoints()[0];
    // The connection goes back to the pool once the response has been written out, which may
    // be an instant after the client read it: wait for that (bounded), don't assume it.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while endpoint.idle_count() == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(endpoint.idle_count(), 1);
    assert_eq!(endpoint.evict_idle(), 0, "a fresh idle connection stays");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        endpoint.evict_idle(),
        1,
        "past pool_idle_timeout it is closed"
    );
    assert_eq!(endpoint.idle_count(), 0);
    assert_eq!(c.get("/", &[]).await.status, 200);
    assert_eq!(
        up.conns.load(Ordering::SeqCst),
        2,
        "the next request opened a new connection"
    );

    listening.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_client_is_closed_after_the_header_timeout() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\nlimits: {{header_read_timeout: 1s}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n",
        up.addr
    ));
    // One request on a keep-alive connection, then silence: weir closes it.
    let started = Instant::now();
    let answer = raw(
        weir.addr,
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    let took = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "closed after {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_max_connections_new_clients_wait_for_a_free_slot() {
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\nlimits: {{max_connections: 2}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n",
        up.addr
    ));
    let mut first = H1::connect(weir.addr).await;
    let mut second = H1::connect(weir.addr).await;
    assert_eq!(first.get("/", &[]).await.status, 200);
    assert_eq!(second.get("/", &[]).await.status, 200);

    // A third client is not served while two connections are open…
    let addr = weir.addr;
    let third = tokio::spawn(async move { H1::connect(addr).await.get("/", &[]).await.status });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!third.is_finished(), "served past max_connections");
    // …and is served as soon as one closes.
    drop(first);
    let status = tokio::time::timeout(Duration::from_secs(5), third)
        .await
        .expect("served after a slot freed")
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(second.get("/", &[]).await.status, 200);
}

/// How a wave of concurrent requests reaches weir.
#[derive(Clone, Copy, Debug)]
enum Clients {
    /// One HTTP/1.1 connection per request: the passthrough engine's pool.
    Http1,
    /// Streams of one h2c connection: the same pool, through `h1::client`.
    H2c,
}

/// `n` requests in flight at once (the upstream answers each after 300 ms, so they overlap),
/// all answered 200.
async fn wave(addr: std::net::SocketAddr, clients: Clients, n: usize) {
    let mut calls = tokio::task::JoinSet::new();
    match clients {
        Clients::Http1 => {
            // Every client connects first, then all send at once: the requests overlap
            // however long connecting took.
            let all_connected = Arc::new(tokio::sync::Barrier::new(n));
            for _ in 0..n {
                let all_connected = all_connected.clone();
                calls.spawn(async move {
                    let mut client = H1::connect(addr).await;
                    all_connected.wait().await;
                    client.get("/", &[]).await.status
                });
            }
        }
        Clients::H2c => {
            let h2 = common::client::h2c::<http_body_util::Empty<bytes::Bytes>>(addr).await;
            for _ in 0..n {
                let mut h2 = h2.clone();
                calls.spawn(async move {
                    let req = http::Request::get("http://x/")
                        .body(http_body_util::Empty::new())
                        .unwrap();
                    h2.send_request(req).await.unwrap().status()
                });
            }
        }
    }
    let all = tokio::time::timeout(Duration::from_secs(20), calls.join_all())
        .await
        .expect("the wave finishes");
    assert!(all.iter().all(|s| *s == 200), "{clients:?}: {all:?}");
}

/// A wave of `n`, then (once its connections are back in the pool) another: returns the
/// upstream connections the second wave opened and the idle pool's metrics.
async fn two_waves(clients: Clients, pool_max_idle: Option<usize>, n: usize) -> (u64, f64, f64) {
    // Client, weir and upstream ends of each connection, both legs, and some to spare.
    common::allow_open_files(4 * n as u64 + 256);
    let up = backend::start(
        "stable",
        Behaviour {
            delay: Duration::from_millis(300),
            ..Behaviour::default()
        },
    )
    .await;
    let mut backend = BackendSpec::new([up.addr.to_string()]);
    if let Some(max) = pool_max_idle {
        backend.pool_max_idle = max;
    }
    let plane = DataPlane::new();
    plane
        .apply(&TableSpec {
            routes: vec![RouteSpec::new("web", backend)],
        })
        .unwrap();
    let listening = listen(&plane, 1000).await;
    let addr = listening.addr;
    let table = plane.table.load();
    let endpoint = table.route("web").unwrap().backend(0).endpoints()[0].clone();

    wave(addr, clients, n).await;
    assert_eq!(
        up.conns.load(Ordering::SeqCst),
        n as u64,
        "{clients:?}: one each"
    );
    // Each connection goes back to the pool (or is closed) as its exchange ends, which may be
    // an instant after the client read its answer: wait until none is outstanding (bounded).
    let settled = || async {
        let deadline = Instant::now() + Duration::from_secs(5);
        while endpoint.outstanding() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    settled().await;
    let kept = pool_max_idle.unwrap_or(n).min(n);
    assert_eq!(
        endpoint.idle_count(),
        kept,
        "{clients:?}: idle after the first wave"
    );

    wave(addr, clients, n).await;
    settled().await;
    let opened_again = up.conns.load(Ordering::SeqCst) - n as u64;
    let text = plane.metrics.encode(weir_proxy::stats::Format::Classic);
    let upstream = up.addr.to_string();
    let labels = [("upstream", upstream.as_str())];
    let opened = sample(&text, "weir_upstream_connections_opened_total", &labels);
    let full = sample(&text, "weir_upstream_idle_pool_full_total", &labels);
    listening.stop().await;
    (opened_again, opened, full)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_concurrent_requests_keeps_its_upstream_connections_for_the_next() {
    // 300 is past the old fixed cap of 256 idle connections per address, under which every
    // burst closed what it could not keep and the next opened it again.
    for clients in [Clients::Http1, Clients::H2c] {
        let n = match clients {
            Clients::Http1 => 300,
            // Two h2c waves' streams stay under weir's 200 streams per client connection.
            Clients::H2c => 150,
        };
        let (opened_again, opened, full) = two_waves(clients, None, n).await;
        assert_eq!(
            opened_again, 0,
            "{clients:?}: the second wave reuses the first's"
        );
        assert_eq!(
            opened, n as f64,
            "{clients:?}: every opened connection is counted"
        );
        assert_eq!(full, 0.0, "{clients:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_max_idle_closes_what_a_burst_leaves_beyond_it() {
    for clients in [Clients::Http1, Clients::H2c] {
        let (opened_again, opened, full) = two_waves(clients, Some(10), 60).await;
        assert_eq!(opened_again, 50, "{clients:?}: 10 kept, 50 opened again");
        assert_eq!(opened, 110.0, "{clients:?}");
        // Each wave hands back 60 and the pool keeps 10: 50 closed each time.
        assert_eq!(full, 100.0, "{clients:?}");
    }
}

/// "Max open files  SOFT  HARD  files" from /proc/PID/limits.
fn open_file_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or_else(|| panic!("no open-file line in {limits}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    (fields[3].to_string(), fields[4].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_low_soft_open_file_limit_is_raised_to_the_hard_one_for_max_connections() {
    let up = backend::start("stable", Behaviour::default()).await;
    let yaml = |max: usize| {
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             limits: {{max_connections: {max}}}\nroutes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n",
            up.addr
        )
    };
    let (_, hard) = open_file_limits(std::process::id());
    let hard_n: u64 = hard.parse().unwrap_or(u64::MAX); // "unlimited"
    assert!(
        hard_n > 1024,
        "this machine's hard limit ({hard}) leaves nothing to raise"
    );

    // 300 clients, 856 descriptors if each waits on an upstream: the soft 256 goes up to the
    // hard limit.
    let weir = Weir::start_with_open_files(&yaml(300), 256);
    let (soft, now_hard) = open_file_limits(weir.pid());
    assert_eq!(
        (soft.as_str(), now_hard.as_str()),
        (hard.as_str(), hard.as_str())
    );
    let log = weir.log();
    assert!(log.contains("open-file limit raised from 256"), "{log}");
    assert!(!log.contains("WARN"), "{log}");
    assert_eq!(H1::connect(weir.addr).await.get("/", &[]).await.status, 200);
    drop(weir);

    // More clients than even the hard limit holds: raised, and a warning that says so.
    let weir = Weir::start_with_open_files(&yaml(hard_n.min(1 << 40) as usize), 256);
    assert_eq!(open_file_limits(weir.pid()).0, hard);
    let log = weir.log();
    assert!(
        log.contains("WARN") && log.contains("new connections fail (EMFILE)"),
        "{log}"
    );
    drop(weir);

    // 100 clients need at most 456: a soft limit of 512 is left alone.
    let weir = Weir::start_with_open_files(&yaml(100), 512);
    assert_eq!(open_file_limits(weir.pid()).0, "512");
    assert!(!weir.log().contains("open-file limit"), "{}", weir.log());
}

/// weir's anonymous memory (heap, stacks), in KiB: what its allocator holds, without the
/// binary's file-backed pages.
fn anonymous_kib(pid: u32) -> u64 {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("Anonymous:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no Anonymous line in {rollup}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_held_for_many_clients_is_given_back_after_they_leave() {
    // Enough that what their connections held is most of what is measured.
    const CLIENTS: usize = 6_000;
    common::allow_open_files(CLIENTS as u64 + 512);
    let up = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n",
        up.addr
    ));
    // Clients that each make a request and stay open, 100 at a time.
    let batch = || {
        let mut batch = tokio::task::JoinSet::new();
        for _ in 0..100 {
            let addr = weir.addr;
            batch.spawn(async move {
                let mut client = H1::connect(addr).await;
                assert_eq!(client.get("/", &[]).await.status, 200);
                client
            });
        }
        batch.join_all()
    };
    // One batch first, gone before the start is measured: the upstream connections it opened
    // stay idle in weir's pool, and are not the clients' memory.
    drop(batch().await);
    let open = |text: String| sample(&text, "weir_client_connections", &[]);
    let parked = |text: String| sample(&text, "weir_client_connections_parked", &[]);
    let waited = Instant::now();
    while open(weir.metrics().await) > 0.0 {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "the first batch left"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = anonymous_kib(weir.pid());

    // The first ones are parked (after a second idle) while the last ones come: the peak is
    // the most seen.
    let mut clients = Vec::with_capacity(CLIENTS);
    let mut peak = before;
    for _ in 0..CLIENTS / 100 {
        clients.extend(batch().await);
        peak = peak.max(anonymous_kib(weir.pid()));
    }
    assert_eq!(
        open(weir.metrics().await),
        CLIENTS as f64,
        "the gauge counts them"
    );
    let grew = peak.saturating_sub(before);
    assert!(
        grew > 2_000,
        "{CLIENTS} open clients grew weir's heap by only {grew} KiB"
    );

    // Each idle for a second is parked (`listen/park.rs`), and the heap trimmed of what their
    // tasks held (`src/memory.rs`): wait for all of them, and the trim after the last.
    let waited = Instant::now();
    while parked(weir.metrics().await) < CLIENTS as f64 {
        assert!(
            waited.elapsed() < Duration::from_secs(20),
            "not all parked: {}",
            parked(weir.metrics().await)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let with_parked = anonymous_kib(weir.pid());
    // What one parked client holds: its slot in the parking, and no task, timer, registration,
    // request future or buffer — most of it is what the allocator could not give back of the
    // pages the clients' first second filled. About 300-330 bytes in this debug build, and up
    // to about 270 more when the last trim came early (it runs once 1,000 more are parked, so
    // up to 999 of the last to park are not trimmed for); 1,725 with parking off (each keeps
    // its task, as every client now does for its first idle second), 2,800 while it kept its
    // request future too, 4,350 when it kept its buffers as well.
    let per_client = with_parked.saturating_sub(before) * 1024 / CLIENTS as u64;
    let memory = format!(
        "{before} KiB at start, {peak} KiB at the peak with {CLIENTS} clients, {with_parked} \
         KiB with them parked"
    );
    println!("each parked client holds {per_client} bytes: {memory}");
    assert!(
        per_client < 700,
        "each parked client holds {per_client} bytes: {memory}"
    );

    drop(clients);
    // Then they leave: nothing of theirs is kept (the parking's slots are given back too).
    let waited = Instant::now();
    while open(weir.metrics().await) > 0.0 {
        assert!(waited.elapsed() < Duration::from_secs(10), "all left");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Checked every second once 1,000 have closed.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let after = anonymous_kib(weir.pid());
    assert!(
        after <= with_parked + 256,
        "{memory}, {after} KiB after they left; {} descriptors open; log:\n{}",
        std::fs::read_dir(format!("/proc/{}/fd", weir.pid()))
            .unwrap()
            .count(),
        weir.log()
    );
    assert_eq!(parked(weir.metrics().await), 0.0);
    let mut next = H1::connect(weir.addr).await;
    assert_eq!(next.get("/", &[]).await.status, 200, "serving on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bursts_extra_connections_age_out_while_steady_traffic_goes_on() {
    let up = backend::start("stable", Behaviour::default()).await;
    let mut backend = BackendSpec::new([up.addr.to_string()]);
    backend.pool_idle_timeout = Duration::from_millis(500);
    let plane = DataPlane::new();
    plane
        .apply(&TableSpec {
            routes: vec![RouteSpec::new("web", backend)],
        })
        .unwrap();
    let listening = listen(&plane, 100).await;
    let addr = listening.addr;
    let table = plane.table.load();
    let endpoint = table.route("web").unwrap().backend(0).endpoints()[0].clone();

    // A burst: 30 requests at once, each answered after 300 ms, so 30 upstream connections.
    let all_connected = Arc::new(tokio::sync::Barrier::new(30));
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..30 {
        let all_connected = all_connected.clone();
        burst.spawn(async move {
            let mut client = H1::connect(addr).await;
            all_connected.wait().await;
            client.get("/", &[("x-delay-ms", "300")]).await.status
        });
    }
    let statuses = tokio::time::timeout(Duration::from_secs(20), burst.join_all())
        .await
        .expect("the burst finishes");
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert_eq!(up.conns.load(Ordering::SeqCst), 30);
    let deadline = Instant::now() + Duration::from_secs(5);
    while endpoint.outstanding() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(endpoint.idle_count(), 30);

    // Then steady traffic, one request at a time, for three idle timeouts (bounded in count):
    // oldest-first would take each of the 30 in turn, every few milliseconds, and keep all of
    // them open; newest-first keeps taking the one just handed back.
    let mut client = H1::connect(addr).await;
    let steady = Instant::now();
    let mut sent = 0;
    while steady.elapsed() < Duration::from_millis(1500) && sent < 20_000 {
        assert_eq!(client.get("/", &[]).await.status, 200);
        sent += 1;
    }
    assert!(
        sent >= 60,
        "steady traffic was too slow to tell the orders apart: {sent}"
    );
    assert_eq!(
        up.conns.load(Ordering::SeqCst),
        30,
        "steady traffic opened nothing new"
    );
    let evicted = endpoint.evict_idle();
    assert!(
        evicted >= 28,
        "the burst's unused connections aged out: {evicted} evicted, {} idle, {sent} sent",
        endpoint.idle_count()
    );
    assert_eq!(client.get("/", &[]).await.status, 200);
    listening.stop().await;
}

/// A response that came whole with its head gives its upstream connection back before it is
/// written to the client: a client that stops reading holds its own connection, not the
/// upstream's. (It used to be held until the write finished, so every such client took an
/// upstream connection out of the pool for as long as it did not read.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_does_not_hold_the_upstream_connection() {
    use tokio::io::AsyncWriteExt;

    let up = backend::start("stable", Behaviour::default()).await;
    let plane = DataPlane::new();
    plane
        .apply(&TableSpec {
            routes: vec![RouteSpec::new(
                "web",
                BackendSpec::new([up.addr.to_string()]),
            )],
        })
        .unwrap();
    let listening = listen(&plane, 10).await;

    // Pipelined requests from a client with a small receive buffer that never reads: weir's
    // writes to it stall once its buffers are full.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stalled = socket.connect(listening.addr).await.unwrap();
    let (unread, mut requests) = stalled.into_split();
    let pipelined = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(20_000);
    let writer = tokio::spawn(async move { requests.write_all(&pipelined).await });

    // Stalled: no request reaches the upstream for 300 ms (bounded: 10 s in all).
    let give_up = Instant::now() + Duration::from_secs(10);
    let mut last = (up.hits(), Instant::now());
    while Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let hits = up.hits();
        if hits != last.0 {
            last = (hits, Instant::now());
        } else if hits > 0 && last.1.elapsed() >= Duration::from_millis(300) {
            break;
        }
    }
    assert!(
        up.hits() > 0,
        "the stalled client's first requests were forwarded"
    );
    assert!(
        up.hits() < 20_000,
        "weir stalled writing to the client that does not read"
    );

    let table = plane.table.load();
    let endpoint = &table.route("web").unwrap().backend(0).endpoints()[0];
    assert_eq!(
        endpoint.idle_count(),
        1,
        "the upstream connection is in the pool while the client's write waits"
    );
    let mut other = H1::connect(listening.addr).await;
    assert_eq!(other.get("/", &[]).await.status, 200);
    assert_eq!(
        up.conns.load(Ordering::SeqCst),
        1,
        "another client's request took the same upstream connection"
    );

    // Closed: weir's stalled write fails and the connection ends, so stopping does not wait.
    writer.abort();
    let _ = writer.await;
    drop(unread);
    listening.stop().await;
}
