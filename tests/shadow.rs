//! The dark canary through the real binary (issue 50): a `setMirrorRoute` step at weight 0, then
//! an analysis of the mirrored pairs (`shadow-errors`, `shadow-latency`). Real backends on
//! 127.0.0.1, real clients; the canary's own answers never reach a client.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::H1;
use common::weir::Weir;

const TEMPLATE: &str = r#"
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: shadow
spec:
  args:
  - name: route
  metrics:
  - name: shadow-errors
    interval: 1s
    count: "1"
    successCondition: result != "Failed"
    failureCondition: result == "Failed"
    provider:
      plugin:
        weir/live: {route: "{{args.route}}", metric: shadow-errors, maxDuration: 20s}
  - name: shadow-latency
    interval: 1s
    count: "1"
    successCondition: result != "Failed"
    failureCondition: result == "Failed"
    provider:
      plugin:
        weir/live: {route: "{{args.route}}", metric: shadow-latency, maxDuration: 20s}
"#;

const ROLLOUT: &str = "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: shop}\nspec:\n  strategy:\n    canary:\n\
     \x20     trafficRouting:\n        managedRoutes: [{name: dark}]\n\
     \x20     steps:\n\
     \x20     - setMirrorRoute: {name: dark, percentage: 100, match: [{path: {prefix: /}}]}\n\
     \x20     - analysis: {templates: [{templateName: shadow}], args: [{name: route, value: web}]}\n\
     \x20     - setMirrorRoute: {name: dark}\n\
     \x20     - setWeight: 50\n\
     \x20     - pause: {}\n";

fn start(stable: SocketAddr, canary: SocketAddr) -> Weir {
    start_rollout(stable, canary, ROLLOUT, "", "")
}

/// `rollout` on the route `web`, its backends' fields followed by `backend_extra`, after the
/// config's `first` lines.
fn start_rollout(
    stable: SocketAddr,
    canary: SocketAddr,
    rollout: &str,
    backend_extra: &str,
    first: &str,
) -> Weir {
    let dir = common::temp_dir("shadow");
    std::fs::write(dir.join("rollout.yaml"), rollout).unwrap();
    std::fs::write(dir.join("analysis.yaml"), TEMPLATE).unwrap();
    let config = dir.join("weir.yaml");
    std::fs::write(
        &config,
        format!(
            "{first}listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n- name: web\n  stable: {{addresses: [\"{stable}\"]{backend_extra}}}\n  canary: {{addresses: [\"{canary}\"]{backend_extra}}}\n\
             rollout:\n  manifests: [rollout.yaml, analysis.yaml]\n  route: web\n"
        ),
    )
    .unwrap();
    Weir::start_with(dir, config, &[])
}

/// `conns` clients sending GETs, each timed, until `stop` passes; every answer must be the
/// stable's 200. Returns how many and the slowest.
async fn load(weir: &Weir, conns: usize, stop: Instant) -> (u64, Duration) {
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let addr = weir.addr;
        tasks.push(tokio::spawn(async move {
            let mut c = H1::connect(addr).await;
            let (mut n, mut slowest) = (0u64, Duration::ZERO);
            while Instant::now() < stop {
                let sent = Instant::now();
                let r = c.get("/items", &[]).await;
                slowest = slowest.max(sent.elapsed());
                assert_eq!((r.status.as_u16(), r.backend()), (200, "stable"));
                n += 1;
            }
            (n, slowest)
        }));
    }
    let mut total = (0, Duration::ZERO);
    for t in tasks {
        let (n, s) = t.await.unwrap();
        total = (total.0 + n, total.1.max(s));
    }
    total
}

fn step_metric<'s>(s: &'s serde_json::Value, name: &str) -> Option<&'s serde_json::Value> {
    s["analysis"]["step"]["run"]["metrics"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)
}

/// A canary that fails one request in four: Failed on the pairs while its weight is still 0,
/// aborted, and no client ever got one of its answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regressed_canary_is_aborted_at_weight_zero_from_mirrored_pairs() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start(
        "canary",
        Behaviour {
            error_every: Some(std::sync::Arc::new(4.into())),
            ..Behaviour::default()
        },
    )
    .await;
    let weir = start(stable.addr, canary.addr);
    weir.wait_rollout(Duration::from_secs(10), |s| s["step"] == 2)
        .await;
    let stop = Instant::now() + Duration::from_secs(4);
    let driver = load(&weir, 4, stop);
    let (answered, _) = driver.await;
    let s = weir
        .wait_rollout(Duration::from_secs(10), |s| s["phase"] == "Degraded")
        .await;
    let message = s["message"].as_str().unwrap_or_default();
    assert!(message.contains("shadow-errors"), "{s:#}");
    assert!(message.contains("on the same requests"), "{message}");
    assert_eq!(s["weights"]["canary"], 0.0, "{s:#}");
    // Every client answer was the stable's (checked in `load`); the canary saw only copies.
    assert!(answered > 50, "{answered}");
    assert!(canary.hits() > 0, "the canary got copies");
}

/// A canary 2 s slower than the stable: the copies wait, the clients do not; more copies than
/// may be in flight are not made, and those pairs are counted as excluded — never guessed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_canary_delays_no_client_and_full_mirrors_are_counted() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start(
        "canary",
        Behaviour {
            delay: Duration::from_secs(2),
            ..Behaviour::default()
        },
    )
    .await;
    let weir = start(stable.addr, canary.addr);
    weir.wait_rollout(Duration::from_secs(10), |s| s["step"] == 2)
        .await;
    // More than 256 requests within the copies' 2 s.
    let (answered, slowest) = load(&weir, 8, Instant::now() + Duration::from_millis(1500)).await;
    assert!(answered > 300, "{answered}");
    assert!(
        slowest < Duration::from_millis(500),
        "a client waited {slowest:?} for a 2 s canary"
    );
    // The exclusions are counted when a copy is not made, and reported within a second; the
    // copies' answers, and so any verdict on them, take the canary's 2 s.
    let s = weir
        .wait_rollout(Duration::from_secs(3), |s| {
            step_metric(s, "shadow-errors").is_some_and(|m| {
                m["evidence"]["pairs"]["excluded"]
                    .as_array()
                    .is_some_and(|e| !e.is_empty())
            })
        })
        .await;
    let pairs = &step_metric(&s, "shadow-errors").unwrap()["evidence"]["pairs"];
    let excluded = pairs["excluded"].as_array().unwrap();
    let full = excluded
        .iter()
        .find(|e| e[0] == "mirrors_full")
        .unwrap_or_else(|| panic!("{pairs:#}"));
    // 256 copies may be in flight: of more than 300 requests, the rest were not copied.
    assert!(
        full[1].as_u64().unwrap() >= answered.saturating_sub(256) / 2,
        "{pairs:#} of {answered}"
    );
    // The slow canary is aborted on its pairs, at weight 0.
    let s = weir
        .wait_rollout(Duration::from_secs(15), |s| s["phase"] == "Degraded")
        .await;
    assert!(
        s["message"]
            .as_str()
            .unwrap_or_default()
            .contains("shadow-latency"),
        "{s:#}"
    );
    assert_eq!(s["weights"]["canary"], 0.0);
}

/// A gRPC canary whose calls fail UNAVAILABLE in their trailers, as gRPC servers say it (the
/// status 200 head says nothing): its pairs read the trailers, on both sides, and the dark step
/// aborts it. gRPC is POST, so the mirror's rule names the method (the route's opt-in).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_canary_failing_in_its_trailers_is_aborted_from_its_pairs() {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start(
        "canary",
        Behaviour {
            grpc_status: Some("14"),
            ..Behaviour::default()
        },
    )
    .await;
    let rollout = ROLLOUT.replace(
        "match: [{path: {prefix: /}}]",
        "match: [{method: {exact: POST}, path: {prefix: /}}]",
    );
    let weir = start_rollout(stable.addr, canary.addr, &rollout, ", protocol: http2", "");
    weir.wait_rollout(Duration::from_secs(10), |s| s["step"] == 2)
        .await;
    let mut h2 = common::client::h2c(weir.addr).await;
    let stop = Instant::now() + Duration::from_secs(4);
    let mut calls = 0u32;
    while Instant::now() < stop {
        let req = http::Request::post("http://test.local/pkg.Service/Method")
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(Full::new(Bytes::from_static(b"\0\0\0\0\x02hi")))
            .unwrap();
        let resp = h2.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        let trailers = resp
            .into_body()
            .collect()
            .await
            .unwrap()
            .trailers()
            .cloned();
        // Every client's answer is the stable's: OK.
        assert_eq!(
            trailers
                .and_then(|t| t.get("grpc-status").cloned())
                .unwrap(),
            "0"
        );
        calls += 1;
    }
    let s = weir
        .wait_rollout(Duration::from_secs(10), |s| s["phase"] == "Degraded")
        .await;
    let message = s["message"].as_str().unwrap_or_default();
    assert!(message.contains("shadow-errors"), "{s:#}");
    assert_eq!(s["weights"]["canary"], 0.0, "{s:#}");
    assert!(
        calls > 20 && canary.hits() > 0,
        "{calls} calls, {} copies",
        canary.hits()
    );
}

/// The canary answers some requests otherwise than the stable: a 404 where the stable says
/// 200, a body of its own. The pairs' evidence reports both, with the requests' paths, and
/// what was the same; none of it is a verdict: the healthy canary passes its dark step.
/// Under both HTTP/1 engines: the byte engine hashes the bodies it relays, hyper's the frames.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_differ_are_reported_with_their_paths_and_never_judged() {
    for engine in ["passthrough", "hyper"] {
        answers_that_differ_under(engine).await;
    }
}

async fn answers_that_differ_under(engine: &str) {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start(
        "canary",
        Behaviour {
            status_on: Some(("/gone", 404)),
            ..Behaviour::default()
        },
    )
    .await;
    let first = format!("limits: {{http1_engine: {engine}}}\n");
    let weir = start_rollout(stable.addr, canary.addr, ROLLOUT, "", &first);
    weir.wait_rollout(Duration::from_secs(10), |s| s["step"] == 2)
        .await;
    // One client, about 400 requests a second at most, for at most 30 s: each backend
    // answers `x-body-bytes` with that many bytes alike, and anything else with an echo that
    // names it (the same request, another body).
    let (stop_tx, mut stop) = tokio::sync::watch::channel(false);
    let addr = weir.addr;
    let client = tokio::spawn(async move {
        let mut c = H1::connect(addr).await;
        let until = Instant::now() + Duration::from_secs(30);
        let mut n = 0u64;
        while !*stop.borrow_and_update() && Instant::now() < until {
            let r = match n % 3 {
                0 => c.get("/same?id=1", &[("x-body-bytes", "70000")]).await,
                1 => c.get("/items?id=2", &[]).await,
                _ => c.get("/gone?token=secret", &[]).await,
            };
            // The stable's 200 (the canary's answers come once the step after the dark one
            // gives it weight).
            if r.backend() == "stable" {
                assert_eq!(r.status.as_u16(), 200);
            }
            n += 1;
            tokio::time::sleep(Duration::from_micros(2500)).await;
        }
        n
    });
    let s = weir
        .wait_rollout(Duration::from_secs(20), |s| {
            step_metric(s, "shadow-errors").is_some_and(|m| {
                let a = &m["evidence"]["pairs"]["answers"];
                // The measurement's words, updated each second, say it too.
                let words = m["measurements"][0]["message"].as_str().unwrap_or_default();
                a["same"].as_u64() > Some(10)
                    && a["status"].as_u64() > Some(10)
                    && a["body"].as_u64() > Some(10)
                    && words.contains("/gone (200 → 404)")
            })
        })
        .await;
    let answers = &step_metric(&s, "shadow-errors").unwrap()["evidence"]["pairs"]["answers"];
    let examples = answers["examples"].as_array().unwrap();
    let find = |path: &str| examples.iter().find(|e| e["path"] == path);
    let gone = find("/gone").unwrap_or_else(|| panic!("{answers:#}"));
    assert_eq!(
        (
            &gone["differs"],
            &gone["stableStatus"],
            &gone["canaryStatus"]
        ),
        (&"status".into(), &200.into(), &404.into()),
        "{answers:#}"
    );
    assert_eq!(find("/items").unwrap()["differs"], "body", "{answers:#}");
    // Bodies alike, over the hashed bound included, are not examples; no query is kept.
    assert!(find("/same").is_none(), "{answers:#}");
    assert!(!answers.to_string().contains("secret"), "{answers:#}");
    let compared = answers["compared"].as_u64().unwrap();
    let parts: u64 = ["same", "status", "body", "unread"]
        .iter()
        .map(|k| answers[k].as_u64().unwrap())
        .sum();
    assert_eq!(compared, parts, "{answers:#}");
    let words = step_metric(&s, "shadow-errors").unwrap()["measurements"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        words.contains("the canary answered otherwise than the stable"),
        "{words}"
    );
    // Reported, never judged: the dark step passes and the rollout goes on to its pause.
    let s = weir
        .wait_rollout(Duration::from_secs(25), |s| {
            s["step"] == 5 || s["phase"] == "Degraded"
        })
        .await;
    assert_ne!(s["phase"], "Degraded", "{s:#}");
    let _ = stop_tx.send(true);
    assert!(client.await.unwrap() > 30);
}
