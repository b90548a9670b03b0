//! Upstream connection pooling and client keep-alive limits, over real sockets.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::{raw, H1};
use common::weir::Weir;
use tokio::sync::Semaphore;
use weir_proxy::listen::spec::LimitsSpec;
use weir_proxy::listen::{bind, serve, Shutdown};
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
    let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, shutdown) = Shutdown::new();
    let server = tokio::spawn(serve(
        listener,
        None,
        plane.proxy.clone(),
        LimitsSpec::default(),
        Arc::new(Semaphore::new(10)),
        shutdown,
    ));

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

    let _ = stop.send(true);
    server.await.unwrap();
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
