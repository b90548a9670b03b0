//! How requests are split: weights, stickiness, header routes, mirroring — through the real
//! binary, over real sockets, to real upstreams.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::H1;
use common::weir::Weir;

fn config(stable: std::net::SocketAddr, canary: std::net::SocketAddr, route_extra: &str) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n\
         - name: web\n\
         \x20 stable: {{addresses: [\"{stable}\"]}}\n\
         \x20 canary: {{addresses: [\"{canary}\"]}}\n\
         {route_extra}"
    )
}

/// Sends `n` requests over `conns` keep-alive connections; counts answers per backend.
async fn count(weir: &Weir, n: usize, conns: usize) -> HashMap<String, usize> {
    let mut tasks = Vec::new();
    for c in 0..conns {
        let addr = weir.addr;
        let share = n / conns + usize::from(c < n % conns);
        tasks.push(tokio::spawn(async move {
            let mut client = H1::connect(addr).await;
            let mut seen: HashMap<String, usize> = HashMap::new();
            for _ in 0..share {
                let r = client.get("/", &[]).await;
                assert_eq!(r.status, 200, "{}", r.text());
                *seen.entry(r.backend().to_string()).or_default() += 1;
            }
            seen
        }));
    }
    let mut total: HashMap<String, usize> = HashMap::new();
    for t in tasks {
        for (k, v) in t.await.unwrap() {
            *total.entry(k).or_default() += v;
        }
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weight_20_percent_is_within_four_sigmas() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let weir = Weir::start(&config(stable.addr, canary.addr, "  canary_weight: 20\n"));
    let n = 20_000usize;
    let seen = count(&weir, n, 8).await;
    let to_canary = *seen.get("canary").unwrap_or(&0) as f64;
    assert_eq!(seen.values().sum::<usize>(), n);
    let p = 0.2;
    let sigma = (n as f64 * p * (1.0 - p)).sqrt();
    let expected = n as f64 * p;
    assert!(
        (to_canary - expected).abs() <= 4.0 * sigma,
        "canary got {to_canary} of {n}, expected {expected} ± {:.0}",
        4.0 * sigma
    );
    // The backends agree with the client's view.
    assert_eq!(canary.hits() as f64, to_canary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weight_0_and_100_are_exact() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let weir = Weir::start(&config(stable.addr, canary.addr, "  canary_weight: 0\n"));
    let seen = count(&weir, 2_000, 4).await;
    assert_eq!(seen.get("stable"), Some(&2_000), "{seen:?}");
    assert_eq!(canary.hits(), 0);

    let generation = weir.generation().await;
    weir.write_config(&config(stable.addr, canary.addr, "  canary_weight: 100\n"));
    weir.wait_generation_above(generation).await;
    let seen = count(&weir, 2_000, 4).await;
    assert_eq!(seen.get("canary"), Some(&2_000), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raising_the_weight_never_moves_a_sticky_user_back_to_stable() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let sticky = "  sticky: {header: x-user}\n";
    let weir = Weir::start(&config(
        stable.addr,
        canary.addr,
        &format!("  canary_weight: 10\n{sticky}"),
    ));
    let users: Vec<String> = (0..1_000).map(|i| format!("user-{i}")).collect();
    let mut client = H1::connect(weir.addr).await;

    let mut before = HashMap::new();
    for u in &users {
        let r = client.get("/", &[("x-user", u)]).await;
        before.insert(u.clone(), r.backend().to_string());
        // The same user gets the same answer every time.
        assert_eq!(
            client.get("/", &[("x-user", u)]).await.backend(),
            r.backend()
        );
    }
    let canary_before = before.values().filter(|b| *b == "canary").count();
    assert!(
        (50..=150).contains(&canary_before),
        "{canary_before} of 1000 at 10%"
    );

    for weight in [25, 50, 90] {
        let generation = weir.generation().await;
        weir.write_config(&config(
            stable.addr,
            canary.addr,
            &format!("  canary_weight: {weight}\n{sticky}"),
        ));
        weir.wait_generation_above(generation).await;
        let mut on_canary = 0;
        for u in &users {
            let now = client
                .get("/", &[("x-user", u)])
                .await
                .backend()
                .to_string();
            if before[u] == "canary" {
                assert_eq!(
                    now, "canary",
                    "{u} moved from canary back to stable at {weight}%"
                );
            }
            on_canary += usize::from(now == "canary");
            before.insert(u.clone(), now);
        }
        let expected = 10 * weight;
        assert!(
            on_canary.abs_diff(expected) <= 60,
            "{on_canary} of 1000 at {weight}%"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_routes_override_the_weight() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let extra = "  canary_weight: 0\n\
                 \x20 header_routes:\n\
                 \x20 - {name: testers, match: [{name: x-canary, exact: \"yes\"}]}\n\
                 \x20 - {name: beta, match: [{name: x-group, regex: \"beta-[0-9]+\"}]}\n\
                 \x20 - {name: pinned, match: [{name: x-pin, prefix: \"stable\"}], backend: stable}\n";
    let weir = Weir::start(&config(stable.addr, canary.addr, extra));
    let mut c = H1::connect(weir.addr).await;
    for _ in 0..20 {
        assert_eq!(c.get("/", &[("x-canary", "yes")]).await.backend(), "canary");
        assert_eq!(c.get("/", &[("x-canary", "no")]).await.backend(), "stable");
        assert_eq!(
            c.get("/", &[("x-group", "beta-42")]).await.backend(),
            "canary"
        );
        // Regexes are anchored: a partial match is no match.
        assert_eq!(
            c.get("/", &[("x-group", "xbeta-42")]).await.backend(),
            "stable"
        );
        assert_eq!(c.get("/", &[]).await.backend(), "stable");
    }

    // At 100 % a rule can still pin to stable.
    let generation = weir.generation().await;
    weir.write_config(&config(
        stable.addr,
        canary.addr,
        &extra.replace("canary_weight: 0", "canary_weight: 100"),
    ));
    weir.wait_generation_above(generation).await;
    assert_eq!(
        c.get("/", &[("x-pin", "stable-please")]).await.backend(),
        "stable"
    );
    assert_eq!(c.get("/", &[]).await.backend(), "canary");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrored_requests_reach_canary_and_clients_get_stable_answers() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    // POST copies repeat side effects: this route opts in to them.
    let extra = "  canary_weight: 0\n  mirror: {name: shadow, percent: 50, methods: [POST]}\n";
    let weir = Weir::start(&config(stable.addr, canary.addr, extra));
    let mut c = H1::connect(weir.addr).await;
    for i in 0..200 {
        let body = format!("payload-{i:04}");
        let req = http::Request::post("/submit")
            .header("host", "test.local")
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .unwrap();
        let r = c.send(req).await;
        assert_eq!(r.backend(), "stable");
    }
    // Mirrors are fire-and-forget: give them a moment to land.
    let deadline = Instant::now() + Duration::from_secs(5);
    while canary.hits() < 95 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(stable.hits(), 200);
    let mirrored = canary.hits();
    assert!(
        (95..=105).contains(&mirrored),
        "{mirrored} of 200 mirrored at 50 %"
    );
    // Each copy carried the whole 12-byte body.
    assert_eq!(
        canary.body_bytes.load(std::sync::atomic::Ordering::SeqCst),
        mirrored * 12
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_or_dead_mirror_does_not_delay_clients() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let slow = backend::start(
        "canary",
        Behaviour {
            delay: Duration::from_secs(3),
            ..Default::default()
        },
    )
    .await;
    let extra = "  canary_weight: 0\n  mirror: {name: shadow, percent: 100}\n";
    let weir = Weir::start(&config(stable.addr, slow.addr, extra));
    let mut c = H1::connect(weir.addr).await;
    let started = Instant::now();
    for _ in 0..20 {
        assert_eq!(c.get("/", &[]).await.backend(), "stable");
    }
    // 20 requests against a mirror that takes 3 s each: had any client waited, this is ≥ 3 s.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "clients waited for the mirror: {:?}",
        started.elapsed()
    );

    let dead = backend::dead_address().await;
    let generation = weir.generation().await;
    weir.write_config(&config(stable.addr, dead, extra));
    weir.wait_generation_above(generation).await;
    let started = Instant::now();
    for _ in 0..20 {
        let r = c.get("/", &[]).await;
        assert_eq!((r.status.as_u16(), r.backend()), (200, "stable"));
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a dead mirror delayed clients: {:?}",
        started.elapsed()
    );
}

fn two_address_config(a: std::net::SocketAddr, b: std::net::SocketAddr, balance: &str) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{a}\", \"{b}\"], balance: {balance}}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_spreads_evenly_over_a_backends_addresses() {
    let a = backend::start("stable", Behaviour::default()).await;
    let b = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&two_address_config(a.addr, b.addr, "round_robin"));
    count(&weir, 1_000, 1).await;
    assert_eq!((a.hits(), b.hits()), (500, 500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_request_avoids_the_slow_address() {
    let slow = backend::start(
        "stable",
        Behaviour {
            delay: Duration::from_millis(200),
            ..Default::default()
        },
    )
    .await;
    let fast = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&two_address_config(slow.addr, fast.addr, "least_request"));
    // 8 concurrent clients: the slow address holds its requests, so new ones go to the fast one.
    count(&weir, 400, 8).await;
    assert!(
        fast.hits() >= 300,
        "slow {} fast {}",
        slow.hits(),
        fast.hits()
    );
}

/// An upstream that answers `200 ok` and keeps the head of every request it gets.
async fn recording() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while let Some((head, _)) = common::raw::read_request(&mut tcp, &mut buf).await {
                    kept.lock().unwrap().push(head);
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                    if tcp.write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, heads)
}

/// Mirroring copies side effects, so by default only GET, HEAD and OPTIONS are copied; every
/// copy says it is one (`x-weir-mirror: 1`, or the header the route names), and the client's
/// own request never carries it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrors_copy_only_safe_methods_unless_the_route_opts_in_and_say_so() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let (canary, copies) = recording().await;
    let extra = "  canary_weight: 0\n  mirror: {name: shadow, percent: 100}\n";
    let weir = Weir::start(&config(stable.addr, canary, extra));
    let mut c = H1::connect(weir.addr).await;
    let send = |method: &str| {
        http::Request::builder()
            .method(method)
            .uri("/items")
            .header("host", "test.local")
            .body(http_body_util::Full::new(bytes::Bytes::from_static(b"x")))
            .unwrap()
    };
    for method in ["GET", "HEAD", "OPTIONS", "POST", "PUT", "DELETE", "PATCH"] {
        let r = c.send(send(method)).await;
        assert_eq!(r.status, 200, "{method}");
        if method != "HEAD" {
            assert_eq!(r.backend(), "stable");
            // The primary request carries no mark.
            assert!(
                r.json()["headers"].get("x-weir-mirror").is_none(),
                "{method}"
            );
        }
    }
    let copied = |want: usize| {
        let copies = copies.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(5);
            while copies.lock().unwrap().len() < want && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            copies.lock().unwrap().clone()
        }
    };
    let got = copied(3).await;
    let methods: Vec<&str> = got
        .iter()
        .map(|h| h.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(methods, ["get", "head", "options"], "{got:?}");
    assert!(
        got.iter().all(|h| h.contains("\r\nx-weir-mirror: 1")),
        "{got:?}"
    );

    // Opted in: POST too, under the route's own header name.
    copies.lock().unwrap().clear();
    let generation = weir.generation().await;
    let extra = "  canary_weight: 0\n  mirror: {name: shadow, percent: 100, methods: [POST], header: X-Shadow}\n";
    weir.write_config(&config(stable.addr, canary, extra));
    weir.wait_generation_above(generation).await;
    for method in ["POST", "PUT", "GET"] {
        assert_eq!(c.send(send(method)).await.status, 200, "{method}");
    }
    let got = copied(2).await;
    let methods: Vec<&str> = got
        .iter()
        .map(|h| h.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(methods, ["post", "get"], "{got:?}");
    assert!(got.iter().all(|h| h.contains("\r\nx-shadow: 1")), "{got:?}");
}

/// A bodiless request is copied by the engine that forwards it, the byte engine by default:
/// the copy is the head the stable gets, field names as the client spelled them, with the
/// mark in place of any the client sent itself. Under hyper's engine the copy says the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bodiless_request_is_copied_as_the_stable_gets_it_with_the_mark_in_place_of_the_clients()
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    for engine in ["passthrough", "hyper"] {
        let (stable, to_stable) = answering_after(Duration::ZERO).await;
        let (canary, copies) = answering_after(Duration::ZERO).await;
        let extra = "  canary_weight: 0\n  mirror: {name: shadow, percent: 100}\n";
        let config = format!(
            "limits: {{http1_engine: {engine}}}\n{}",
            config(stable, canary, extra)
        );
        let weir = Weir::start(&config);
        let mut tcp = tokio::net::TcpStream::connect(weir.addr).await.unwrap();
        let request = b"GET /items?page=2 HTTP/1.1\r\nHost: test.local\r\nX-Weir-Mirror: 0\r\nX-Spelled-So: kept\r\n\r\n";
        for _ in 0..3 {
            tcp.write_all(request).await.unwrap();
            let mut answer = Vec::new();
            let mut chunk = [0u8; 1024];
            while !answer.ends_with(b"\r\n\r\nok") {
                let n = tcp.read(&mut chunk).await.unwrap();
                assert!(n > 0, "{engine}: weir closed the connection");
                answer.extend_from_slice(&chunk[..n]);
            }
            assert!(answer.starts_with(b"HTTP/1.1 200"), "{engine}: {answer:?}");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while copies.lock().unwrap().len() < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let heads = |arrivals: &Arrivals| -> Vec<String> {
            arrivals
                .lock()
                .unwrap()
                .iter()
                .map(|(h, _)| h.clone())
                .collect()
        };
        let (copies, to_stable) = (heads(&copies), heads(&to_stable));
        assert_eq!(copies.len(), 3, "{engine}: {copies:?}");
        assert_eq!(to_stable.len(), 3, "{engine}: {to_stable:?}");
        for (copy, primary) in copies.iter().zip(&to_stable) {
            assert!(
                copy.starts_with("GET /items?page=2 HTTP/1.1\r\n"),
                "{engine}: {copy}"
            );
            let marks: Vec<&str> = copy
                .lines()
                .filter(|l| l.to_ascii_lowercase().starts_with("x-weir-mirror:"))
                .collect();
            assert_eq!(marks, ["x-weir-mirror: 1"], "{engine}: {copy}");
            // The client's own field still reaches the stable.
            assert!(
                primary
                    .to_ascii_lowercase()
                    .contains("\r\nx-weir-mirror: 0\r\n"),
                "{engine}: {primary}"
            );
            if engine == "passthrough" {
                // Forwarded as bytes, both ways: the client's spelling is kept (hyper's
                // engine lower-cases names), and the copy is the stable's head but for the mark.
                assert!(primary.contains("\r\nX-Spelled-So: kept\r\n"), "{primary}");
                assert_eq!(
                    copy.replace("x-weir-mirror: 1\r\n", ""),
                    primary.replace("X-Weir-Mirror: 0\r\n", ""),
                );
            } else {
                assert!(copy.contains("\r\nx-spelled-so: kept\r\n"), "{copy}");
            }
        }
    }
}

/// Each bodiless request's head as it came, and when it came.
type Arrivals = std::sync::Arc<std::sync::Mutex<Vec<(String, Instant)>>>;

/// An upstream that answers each bodiless request `200 ok` after `delay`, keeping its head as
/// it came and when.
async fn answering_after(delay: Duration) -> (std::net::SocketAddr, Arrivals) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let arrived = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = arrived.clone();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head: Vec<u8> = buf.drain(..end + 4).collect();
                        let head = String::from_utf8_lossy(&head).into_owned();
                        kept.lock().unwrap().push((head, Instant::now()));
                        tokio::time::sleep(delay).await;
                        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                        if tcp.write_all(ok).await.is_err() {
                            return;
                        }
                    }
                    match tcp.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    (addr, arrived)
}

/// A bodiless copy goes once the client's answer head is in, so it never competes with the
/// client's own request. Both engines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bodiless_copy_goes_after_the_clients_answer() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = b"GET /items HTTP/1.1\r\nHost: test.local\r\n\r\n";
    for engine in ["passthrough", "hyper"] {
        let (stable, to_stable) = answering_after(Duration::from_millis(300)).await;
        let (canary, copies) = answering_after(Duration::ZERO).await;
        let extra = "  canary_weight: 0\n  mirror: {name: shadow, percent: 100}\n";
        let config = format!(
            "limits: {{http1_engine: {engine}}}\n{}",
            config(stable, canary, extra)
        );
        let weir = Weir::start(&config);
        let mut tcp = tokio::net::TcpStream::connect(weir.addr).await.unwrap();
        tcp.write_all(request).await.unwrap();
        let mut answer = Vec::new();
        let mut chunk = [0u8; 1024];
        while !answer.ends_with(b"\r\n\r\nok") {
            let n = tcp.read(&mut chunk).await.unwrap();
            assert!(n > 0, "{engine}: weir closed the connection");
            answer.extend_from_slice(&chunk[..n]);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while copies.lock().unwrap().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let primary_at = to_stable.lock().unwrap()[0].1;
        let copied_at = copies.lock().unwrap().first().expect("no copy came").1;
        assert!(
            copied_at >= primary_at + Duration::from_millis(300),
            "{engine}: the copy came {:?} after the request reached the stable, before its answer",
            copied_at - primary_at
        );
    }
}
