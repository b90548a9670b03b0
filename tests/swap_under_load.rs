//! Swapping the routing table under load drops nothing: ≥ 20,000 requests while the table is
//! swapped ≥ 1,000 times, every answer correct. Runs the data plane in-process (the binary's
//! file source cannot swap 1,000 times quickly), over real sockets.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::H1;
use common::listener::listen;
use weir_proxy::table::spec::{BackendSpec, RouteSpec, TableSpec};
use weir_proxy::DataPlane;

fn table(stable: &str, canary: &str, weight_bp: u16, extra_route: bool) -> TableSpec {
    let mut web = RouteSpec::new("web", BackendSpec::new([stable]));
    web.set_canary(Some(BackendSpec::new([canary])));
    web.set_canary_weight_bp(weight_bp);
    let mut routes = vec![web];
    if extra_route {
        let mut other = RouteSpec::new("other", BackendSpec::new([canary]));
        other.matches[0].path = weir_proxy::table::spec::PathMatch::Prefix("/other".into());
        routes.push(other);
    }
    TableSpec { routes }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_requests_through_a_thousand_swaps() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let (s, c) = (stable.addr.to_string(), canary.addr.to_string());
    let plane = DataPlane::new();
    plane.apply(&table(&s, &c, 2000, false)).unwrap();
    let listening = listen(&plane, 1000).await;
    let addr = listening.addr;

    let done = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (plane, done, swaps) = (plane.clone(), done.clone(), swaps.clone());
        tokio::spawn(async move {
            let mut i = 0u64;
            while !done.load(Ordering::SeqCst) {
                // Weights 0..100 % and a route that comes and goes.
                let spec = table(&s, &c, ((i * 1700) % 10_001) as u16, i.is_multiple_of(2));
                plane.apply(&spec).expect("valid table");
                i += 1;
                swaps.store(i, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_micros(500)).await;
            }
        })
    };

    let deadline = Instant::now() + Duration::from_secs(120);
    let sent = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for conn in 0..4 {
        let (sent, swaps) = (sent.clone(), swaps.clone());
        clients.push(tokio::spawn(async move {
            let mut client = H1::connect(addr).await;
            let mut i = 0u64;
            // Each client keeps going until both bars are met (or the time bound).
            while (sent.load(Ordering::SeqCst) < 20_000 || swaps.load(Ordering::SeqCst) < 1_000)
                && Instant::now() < deadline
            {
                let path = format!("/req/{conn}/{i}");
                let r = client.get(&path, &[]).await;
                assert_eq!(r.status, 200, "{path}: {}", r.text());
                let echo = r.json();
                assert_eq!(echo["path"], path.as_str(), "an answer to another request");
                assert!(matches!(r.backend(), "stable" | "canary"));
                i += 1;
                sent.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    swapper.await.unwrap();
    let (sent, swaps) = (sent.load(Ordering::SeqCst), swaps.load(Ordering::SeqCst));
    assert!(sent >= 20_000, "only {sent} requests within the time bound");
    assert!(swaps >= 1_000, "only {swaps} swaps");
    assert_eq!(
        stable.hits() + canary.hits(),
        sent,
        "every request reached exactly one upstream"
    );
    assert!(plane.table.load().generation() > 1_000);
    listening.stop().await;
}
