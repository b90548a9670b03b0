//! The access log, through the real binary: every request a line with the backend and status
//! the client saw, on both engines; sampling that still writes every failure; a route that is
//! off; logfmt; the file reopened on SIGUSR1 after logrotate moved it.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::backend::{self, Behaviour};
use common::client::{self, H1};
use common::weir::Weir;
use http::Request;
use http_body_util::{BodyExt, Full};

/// The log's lines once it has at least `n` (the writer empties its buffers every 200 ms).
async fn lines(path: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn parse(lines: &[String]) -> Vec<serde_json::Value> {
    lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_requests_each_logged_with_the_backend_and_status_the_client_saw() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start(
        "canary",
        Behaviour {
            status: Some(503),
            ..Behaviour::default()
        },
    )
    .await;
    let dir = common::temp_dir("access-log");
    let log = dir.join("access.log");
    let weir = Weir::start(&format!(
        "listeners: [{{name: edge, address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         access_log: {{path: \"{}\"}}\n\
         routes:\n\
         - name: shop\n\
         \x20 stable: {{addresses: [\"{}\"]}}\n\
         \x20 canary: {{addresses: [\"{}\"]}}\n\
         \x20 canary_weight: 30\n",
        log.display(),
        stable.addr,
        canary.addr
    ));

    const N: usize = 10_000;
    const CONNS: usize = 16;
    let mut tasks = Vec::new();
    for c in 0..CONNS {
        let addr = weir.addr;
        tasks.push(tokio::spawn(async move {
            let mut h1 = H1::connect(addr).await;
            let mut seen = Vec::new();
            for i in (c..N).step_by(CONNS) {
                let id = format!("req-{i}");
                let r = h1
                    .get(&format!("/cart/{i}?token=t{i}"), &[("x-request-id", &id)])
                    .await;
                seen.push((id, r.backend().to_string(), r.status.as_u16(), r.body.len()));
            }
            seen
        }));
    }
    let mut client_saw = HashMap::new();
    for t in tasks {
        for (id, backend, status, len) in t.await.unwrap() {
            client_saw.insert(id, (backend, status, len));
        }
    }
    assert_eq!(client_saw.len(), N);

    let logged = parse(&lines(&log, N).await);
    assert_eq!(logged.len(), N, "one line per request");
    let mut by_backend: HashMap<String, usize> = HashMap::new();
    for line in &logged {
        let id = line["request_id"].as_str().expect("request_id");
        let (backend, status, len) = &client_saw[id];
        assert_eq!(line["backend"], backend.as_str(), "{line}");
        assert_eq!(line["status"], *status, "{line}");
        assert_eq!(line["response_bytes"], *len as u64, "{line}");
        let upstream = if backend == "stable" {
            stable.addr
        } else {
            canary.addr
        };
        assert_eq!(line["upstream"], upstream.to_string(), "{line}");
        assert_eq!(line["route"], "shop");
        assert_eq!(line["listener"], "edge");
        assert_eq!(line["protocol"], "HTTP/1.1");
        assert_eq!(line["method"], "GET");
        let i = id.trim_start_matches("req-");
        assert_eq!(line["path"], format!("/cart/{i}"), "the query is left out");
        assert!(line["duration_ms"].as_f64().unwrap() >= line["first_byte_ms"].as_f64().unwrap());
        assert!(line["client"].as_str().unwrap().starts_with("127.0.0.1:"));
        *by_backend.entry(backend.clone()).or_default() += 1;
    }
    assert_eq!(
        by_backend.values().sum::<usize>(),
        N,
        "every request id seen once: {by_backend:?}"
    );
    assert_eq!(
        by_backend["canary"] as u64,
        canary.hits(),
        "the log agrees with the canary's own count"
    );

    let metrics = weir.metrics().await;
    assert_eq!(
        metric(&metrics, "weir_access_log_lines_total"),
        Some(N as f64)
    );
    assert_eq!(metric(&metrics, "weir_access_log_dropped_total"), Some(0.0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_bodies_sampling_a_route_off_and_rotation() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start(
        "canary",
        Behaviour {
            status: Some(502),
            ..Behaviour::default()
        },
    )
    .await;
    let dir = common::temp_dir("access-log-h2");
    let log = dir.join("access.log");
    let weir = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         access_log: {{path: \"{log}\", query: true}}\n\
         routes:\n\
         - name: quiet\n\
         \x20 match: {{path_prefix: /health}}\n\
         \x20 stable: {{addresses: [\"{s}\"]}}\n\
         \x20 access_log: false\n\
         - name: sampled\n\
         \x20 stable: {{addresses: [\"{s}\"]}}\n\
         \x20 canary: {{addresses: [\"{c}\"]}}\n\
         \x20 canary_weight: 50\n\
         \x20 access_log: {{sample: 0}}\n",
        log = log.display(),
        s = stable.addr,
        c = canary.addr
    ));

    // HTTP/2 (the hyper engine's phases), with bodies.
    let mut h2 = client::h2c::<Full<Bytes>>(weir.addr).await;
    let mut failed = 0;
    for i in 0..200 {
        let body = vec![b'x'; 100 + i];
        let req = Request::post(format!("http://shop.example/orders?n={i}"))
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let resp = h2.send_request(req).await.unwrap();
        if resp.status() == 502 {
            failed += 1;
        }
        let _ = resp.into_body().collect().await;
        // Never logged: the route is off.
        let req = Request::get("http://shop.example/health")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = h2.send_request(req).await.unwrap();
        let _ = resp.into_body().collect().await;
    }
    assert!(failed > 50 && failed < 150, "{failed} of 200 to the canary");

    let logged = parse(&lines(&log, failed).await);
    assert_eq!(
        logged.len(),
        failed,
        "a route sampled at 0 % writes its failures, and only them; an off route nothing"
    );
    for line in &logged {
        assert_eq!(line["status"], 502);
        assert_eq!(line["backend"], "canary");
        assert_eq!(line["protocol"], "HTTP/2");
        assert_eq!(line["method"], "POST");
        assert_eq!(line["authority"], "shop.example");
        let path = line["path"].as_str().unwrap();
        let n: u64 = path.strip_prefix("/orders?n=").unwrap().parse().unwrap();
        assert_eq!(line["request_bytes"], 100 + n, "{line}");
    }

    // logrotate: the file is moved, weir told with SIGUSR1, and new lines go to a new file.
    let rotated = dir.join("access.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    // SAFETY: kill(2) with a pid this test started.
    assert_eq!(
        unsafe { libc::kill(weir.pid() as i32, libc::SIGUSR1) },
        0,
        "kill -USR1"
    );
    // Until one fails (the canary's half): failures are written whatever the sample.
    let mut failures_after = 0;
    for _ in 0..100 {
        let req = Request::get("http://shop.example/after")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = h2.send_request(req).await.unwrap();
        failures_after += usize::from(resp.status() == 502);
        let _ = resp.into_body().collect().await;
        if failures_after > 0 {
            break;
        }
    }
    assert_eq!(failures_after, 1);
    let after = parse(&lines(&log, 1).await);
    assert!(
        !after.is_empty(),
        "a new file after SIGUSR1; log:\n{}",
        weir.log()
    );
    assert!(after.iter().all(|l| l["path"] == "/after"));
    assert_eq!(parse(&lines(&rotated, failed).await).len(), failed);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logfmt_lines_and_a_request_that_matched_no_route() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let dir = common::temp_dir("access-log-logfmt");
    let log = dir.join("access.log");
    let weir = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         access_log: {{path: \"{}\", format: logfmt}}\n\
         routes:\n\
         - name: web\n\
         \x20 match: {{hosts: [web.example]}}\n\
         \x20 stable: {{addresses: [\"{}\"]}}\n",
        log.display(),
        stable.addr
    ));
    let mut h1 = H1::connect(weir.addr).await;
    let req = Request::get("/a%20b")
        .header("host", "web.example")
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(h1.send(req).await.status, 200);
    let req = Request::get("/")
        .header("host", "elsewhere.example")
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(h1.send(req).await.status, 404);

    let lines = lines(&log, 2).await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    let first = &lines[0];
    assert!(first.starts_with("time="), "{first}");
    for part in [
        " protocol=HTTP/1.1 method=GET authority=web.example path=/a%20b route=web ",
        " traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
        " backend=stable ",
        " status=200 ",
    ] {
        assert!(first.contains(part), "{part:?} in {first}");
    }
    let second = &lines[1];
    assert!(
        second.contains(" path=/ status=404 ") && !second.contains("route="),
        "no route, no backend: {second}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
