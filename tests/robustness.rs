//! Bad input and bad upstreams: clear errors, nothing lost, the last good table keeps serving.

mod common;

use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::{raw, H1};
use common::weir::{sample, Weir};

fn config(stable: &str, canary: &str, extra: &str, limits: &str) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         {limits}\
         routes:\n\
         - name: web\n\
         \x20 stable: {{addresses: [\"{stable}\"]}}\n\
         \x20 canary: {{addresses: [\"{canary}\"]}}\n\
         {extra}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_request_line_gets_400() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let weir = Weir::start(&config(
        &stable.addr.to_string(),
        &stable.addr.to_string(),
        "",
        "",
    ));
    let answer = raw(
        weir.addr,
        b"GARBAGE\x01 / HTTP/9\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer:?}");
    let answer = raw(
        weir.addr,
        b"GET / HTTP/1.1\r\nbad header line\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer:?}");
    assert_eq!(stable.hits(), 0, "nothing malformed reached the upstream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_or_too_many_headers_get_431() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let limits = "limits: {max_header_bytes: 8192, max_headers: 20}\n";
    let weir = Weir::start(&config(
        &stable.addr.to_string(),
        &stable.addr.to_string(),
        "",
        limits,
    ));

    let big = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    let answer = raw(weir.addr, big.as_bytes(), Duration::from_secs(5)).await;
    assert!(
        answer.starts_with("HTTP/1.1 431"),
        "{:?}",
        &answer[..answer.len().min(80)]
    );

    let mut many = String::from("GET / HTTP/1.1\r\nHost: x\r\n");
    for i in 0..50 {
        many.push_str(&format!("X-H{i}: v\r\n"));
    }
    many.push_str("\r\n");
    let answer = raw(weir.addr, many.as_bytes(), Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:?}");

    // Within the limits, the same client is served.
    let mut c = H1::connect(weir.addr).await;
    assert_eq!(c.get("/", &[("x-small", "ok")]).await.status, 200);
}

/// One backend behind weir with `header_read_timeout: 1s`.
async fn with_one_second_header_timeout() -> (backend::TestBackend, Weir) {
    let stable = backend::start("stable", Behaviour::default()).await;
    let limits = "limits: {header_read_timeout: 1s}\n";
    let weir = Weir::start(&config(
        &stable.addr.to_string(),
        &stable.addr.to_string(),
        "",
        limits,
    ));
    (stable, weir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_is_cut_off_after_the_header_timeout() {
    let (stable, weir) = with_one_second_header_timeout().await;
    let started = Instant::now();
    // Half a header block, then silence; `raw` returns when weir closes the connection.
    let answer = raw(
        weir.addr,
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ",
        Duration::from_secs(10),
    )
    .await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "closed too early ({took:?}): {answer:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "not cut off within 5 s of a 1 s header timeout ({took:?})"
    );
    assert_eq!(stable.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_head_is_due_one_header_timeout_after_connecting() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (stable, weir) = with_one_second_header_timeout().await;
    // Silent for 0.9 s, then half a head: the clock started at connect, not at the first byte.
    let started = Instant::now();
    let mut tcp = tokio::net::TcpStream::connect(weir.addr)
        .await
        .expect("connect");
    tokio::time::sleep(Duration::from_millis(900)).await;
    let _ = tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await;
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut rest)).await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(1600),
        "closed after {took:?}"
    );
    assert_eq!(stable.hits(), 0);
}

/// weir over two live backends with all traffic on canary, and its config's text.
async fn all_on_canary() -> (backend::TestBackend, backend::TestBackend, String, Weir) {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let good = config(
        &stable.addr.to_string(),
        &canary.addr.to_string(),
        "  canary_weight: 100\n",
        "",
    );
    let weir = Weir::start(&good);
    (stable, canary, good, weir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_config_on_reload_keeps_the_old_table_and_is_counted() {
    let (_stable, _canary, good, weir) = all_on_canary().await;
    let generation = weir.generation().await;
    let mut c = H1::connect(weir.addr).await;
    assert_eq!(c.get("/", &[]).await.backend(), "canary");

    // Not YAML at all, then YAML with an invalid weight: both refused.
    weir.write_config("routes: [ {name: web, stable: ");
    weir.wait_log("config reload failed").await;
    weir.write_config(&good.replace("canary_weight: 100", "canary_weight: 250"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while sample(
        &weir.metrics().await,
        "weir_config_reloads_total",
        &[("result", "failure")],
    ) < 2.0
    {
        assert!(
            Instant::now() < deadline,
            "second failure not counted; log:\n{}",
            weir.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        weir.log().contains("canary_weight"),
        "the error names the field; log:\n{}",
        weir.log()
    );
    assert_eq!(
        weir.generation().await,
        generation,
        "no table was swapped in"
    );
    for _ in 0..20 {
        assert_eq!(
            c.get("/", &[]).await.backend(),
            "canary",
            "the last good table still serves"
        );
    }

    // Fixed: the new table goes in.
    weir.write_config(&good.replace("canary_weight: 100", "canary_weight: 0"));
    weir.wait_generation_above(generation).await;
    assert_eq!(c.get("/", &[]).await.backend(), "stable");
    let text = weir.metrics().await;
    assert_eq!(
        sample(&text, "weir_config_reloads_total", &[("result", "failure")]),
        2.0
    );
    assert_eq!(
        sample(&text, "weir_config_reloads_total", &[("result", "success")]),
        2.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_never_hands_the_table_to_another_owner() {
    let (_stable, _canary, good, weir) = all_on_canary().await;
    let generation = weir.generation().await;
    // The file owns the table; a `kube:` section would make the Kubernetes source its owner
    // beside the file's own reloads: refused, with the reason, and counted.
    weir.write_config(&format!(
        "{good}kube: {{namespace: shop, rollout: shop, route: web}}\n"
    ));
    weir.wait_log("that takes a restart").await;
    assert!(
        weir.log()
            .contains("the table is owned by the config file, and this config would hand it to the Kubernetes source"),
        "{}",
        weir.log()
    );
    assert_eq!(weir.generation().await, generation);
    assert_eq!(
        sample(
            &weir.metrics().await,
            "weir_config_reloads_total",
            &[("result", "failure")]
        ),
        1.0
    );
    let mut c = H1::connect(weir.addr).await;
    assert_eq!(c.get("/", &[]).await.backend(), "canary");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_canary_is_retried_on_stable_and_still_counted_against_canary() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let dead = backend::dead_address().await;
    let weir = Weir::start(&config(
        &stable.addr.to_string(),
        &dead.to_string(),
        "  canary_weight: 100\n",
        "",
    ));
    let mut c = H1::connect(weir.addr).await;
    for _ in 0..25 {
        let r = c.get("/", &[]).await;
        assert_eq!(
            (r.status.as_u16(), r.backend()),
            (200, "stable"),
            "{}",
            r.text()
        );
    }
    let text = weir.metrics().await;
    let canary = [("route", "web"), ("backend", "canary")];
    assert_eq!(
        sample(
            &text,
            "weir_upstream_errors_total",
            &[canary[0], canary[1], ("kind", "connect")]
        ),
        25.0
    );
    assert_eq!(
        sample(
            &text,
            "weir_requests_total",
            &[canary[0], canary[1], ("class", "5xx")]
        ),
        25.0
    );
    assert_eq!(
        sample(
            &text,
            "weir_requests_total",
            &[("backend", "stable"), ("code", "200")]
        ),
        25.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_backends_dead_gives_503_naming_the_cause() {
    let dead = backend::dead_address().await;
    let weir = Weir::start(&config(
        &dead.to_string(),
        &dead.to_string(),
        "  canary_weight: 50\n",
        "",
    ));
    let mut c = H1::connect(weir.addr).await;
    let r = c.get("/", &[]).await;
    assert_eq!(r.status, 503);
    assert!(
        r.text().contains("could not connect to upstream"),
        "{}",
        r.text()
    );
    assert_eq!(
        sample(
            &weir.metrics().await,
            "weir_upstream_errors_total",
            &[("kind", "connect")]
        ),
        2.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_upstream_gets_504_after_the_response_timeout() {
    let slow = backend::start(
        "stable",
        Behaviour {
            delay: Duration::from_secs(3),
            ..Default::default()
        },
    )
    .await;
    let yaml = config(&slow.addr.to_string(), &slow.addr.to_string(), "", "").replace(
        "routes:",
        "upstream_defaults: {response_timeout: 300ms}\nroutes:",
    );
    let weir = Weir::start(&yaml);
    let started = Instant::now();
    let r = H1::connect(weir.addr).await.get("/", &[]).await;
    assert_eq!(r.status, 504, "{}", r.text());
    assert!(r.text().contains("timed out"), "{}", r.text());
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        sample(
            &weir.metrics().await,
            "weir_upstream_errors_total",
            &[("kind", "timeout")]
        ),
        1.0
    );

    // A route deadline shorter than the upstream's timeout wins.
    let generation = weir.generation().await;
    weir.write_config(
        &yaml
            .replace("upstream_defaults: {response_timeout: 300ms}", "")
            .replace("- name: web\n", "- name: web\n  timeout: 200ms\n"),
    );
    weir.wait_generation_above(generation).await;
    let r = H1::connect(weir.addr).await.get("/", &[]).await;
    assert_eq!(r.status, 504, "{}", r.text());
    assert!(r.text().contains("route timeout"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_response_timeout_holds_on_a_pooled_connection_too() {
    let up = backend::start("stable", Behaviour::default()).await;
    let yaml = config(&up.addr.to_string(), &up.addr.to_string(), "", "").replace(
        "routes:",
        "upstream_defaults: {response_timeout: 300ms}\nroutes:",
    );
    let weir = Weir::start(&yaml);
    let mut c = H1::connect(weir.addr).await;
    // Fast exchanges leave one pooled upstream connection (its deadline set and cleared each
    // time); the slow one after them must still be cut off at 300 ms.
    for _ in 0..3 {
        assert_eq!(c.get("/", &[]).await.status, 200);
    }
    assert_eq!(up.conns.load(std::sync::atomic::Ordering::SeqCst), 1);
    let started = Instant::now();
    let r = c.get("/", &[("x-delay-ms", "3000")]).await;
    let took = started.elapsed();
    assert_eq!(r.status, 504, "{}", r.text());
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(2),
        "answered after {took:?}"
    );
    // The timed-out connection is not reused; the next request gets a fresh one.
    assert_eq!(c.get("/", &[]).await.status, 200);
    assert_eq!(up.conns.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_in_flight_requests_finish_then_exits() {
    let slow = backend::start(
        "stable",
        Behaviour {
            delay: Duration::from_millis(1500),
            ..Default::default()
        },
    )
    .await;
    let mut weir = Weir::start(&config(
        &slow.addr.to_string(),
        &slow.addr.to_string(),
        "",
        "",
    ));
    let addr = weir.addr;
    let in_flight = tokio::spawn(async move { H1::connect(addr).await.get("/", &[]).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    weir.signal("TERM");
    let r = in_flight.await.unwrap();
    assert_eq!(
        r.status,
        200,
        "the in-flight request finished: {}",
        r.text()
    );
    let status = tokio::task::spawn_blocking(move || {
        let s = weir.wait_exit(Duration::from_secs(10));
        (s, weir)
    })
    .await
    .unwrap();
    assert!(
        status.0.is_some_and(|s| s.success()),
        "weir exits cleanly after draining: {:?}",
        status.0
    );
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "nothing accepts after shutdown"
    );
}

#[test]
fn weir_check_names_file_line_and_field() {
    let dir = common::temp_dir("check");
    let file = dir.join("bad.yaml");
    std::fs::write(
        &file,
        "listeners: [{address: \"127.0.0.1:8080\"}]\nroutes:\n- name: web\n  stable: {addresses: [\"127.0.0.1:1\"]}\n  canary_weight: lots\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["check", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bad.yaml:5: routes[0].canary_weight"),
        "{stderr}"
    );

    // A prefix is matched against the path only: one with a query could never match.
    std::fs::write(
        &file,
        "listeners: [{address: \"127.0.0.1:8080\"}]\nroutes:\n- name: web\n  match: {path_prefix: \"/search?q=1\"}\n  stable: {addresses: [\"127.0.0.1:1\"]}\n",
    )
    .unwrap();
    let out = weir_check(&file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bad.yaml:4: routes[0].match.path_prefix: has a query"),
        "{stderr}"
    );

    std::fs::write(&file, "listeners: [{address: \"127.0.0.1:8080\"}]\nroutes:\n- name: web\n  stable: {addresses: [\"127.0.0.1:1\"]}\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["check", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_example_config_in_deploy_passes_weir_check() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/weir.example.yaml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["check", "--config", example])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn weir_check(config: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["check", "--config"])
        .arg(config)
        .output()
        .unwrap()
}

#[test]
fn every_weir_config_in_deploy_passes_weir_check() {
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    for config in ["sidecar/weir.yaml", "rollout/weir-standalone.yaml"] {
        let out = weir_check(&deploy.join(config));
        assert!(
            out.status.success(),
            "{config}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The edge config reads its certificate from the mounted Secret: give it one.
    let dir = common::temp_dir("edge");
    std::fs::copy(deploy.join("edge/weir.yaml"), dir.join("weir.yaml")).unwrap();
    std::fs::create_dir_all(dir.join("tls")).unwrap();
    let pki = common::tls::TestPki::new();
    std::fs::write(dir.join("tls/tls.crt"), &pki.cert_pem).unwrap();
    std::fs::write(dir.join("tls/tls.key"), &pki.key_pem).unwrap();
    let out = weir_check(&dir.join("weir.yaml"));
    assert!(
        out.status.success(),
        "edge: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}
