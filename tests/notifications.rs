//! Notifications end to end: the weir binary running a rollout whose canary goes bad, webhook
//! receivers on 127.0.0.1 — one that records what it is sent (JSON and Slack), one that accepts
//! and never answers. The abort reaches the first with its evidence while the second still
//! holds its request: a receiver that hangs delays neither the abort nor the others.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

use common::backend::{self, Behaviour};
use common::load::Load;
use common::weir::Weir;

const ROLLOUT: &str = "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: shop}\nspec:\n  replicas: 3\n  strategy:\n    canary:\n      stableService: shop-stable\n      canaryService: shop-canary\n      analysis: {templates: [{templateName: live}], args: [{name: route, value: web}]}\n      steps:\n      - setWeight: 20\n      - pause: {}\n";

/// What a recording receiver was sent: (path, authorization header, body), in order.
type Received = Arc<Mutex<Vec<(String, String, Value)>>>;

async fn recorder() -> (std::net::SocketAddr, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let received: Received = Arc::default();
    let store = received.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let store = store.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let store = store.clone();
                    async move {
                        let path = req.uri().path().to_string();
                        let auth = req
                            .headers()
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_string();
                        let body = req.into_body().collect().await.map(|b| b.to_bytes());
                        let body = body.unwrap_or_default();
                        let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        store.lock().unwrap().push((path, auth, value));
                        Ok::<_, hyper::Error>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    (addr, received)
}

/// Accepts connections and never answers; counts them, and keeps them open.
async fn hanging() -> (std::net::SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(tcp);
        }
    });
    (addr, accepted)
}

/// The first event named `event` sent to `path`, waited for up to `limit`.
async fn wait_event(received: &Received, path: &str, event: &str, limit: Duration) -> Value {
    let start = Instant::now();
    loop {
        if let Some(e) = events(received, path)
            .into_iter()
            .find(|e| e["event"] == event)
        {
            return e;
        }
        assert!(
            start.elapsed() < limit,
            "no {event} event at {path} within {limit:?}: {:#?}",
            events(received, path)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// weir with route `web` over `stable` and `canary`, a rollout of `rollout.yaml` (and the live
/// analysis), its Secrets in `secrets/`, and `notifications`.
fn start(
    dir: std::path::PathBuf,
    stable: std::net::SocketAddr,
    canary: std::net::SocketAddr,
    rollout: &str,
    notifications: &str,
) -> Weir {
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    std::fs::write(dir.join("rollout.yaml"), rollout).unwrap();
    std::fs::write(dir.join("analysis.yaml"), common::LIVE_TEMPLATE).unwrap();
    let config = dir.join("weir.yaml");
    std::fs::write(
        &config,
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n- name: web\n  stable: {{addresses: [\"{stable}\"]}}\n  canary: {{addresses: [\"{canary}\"]}}\n\
             rollout:\n  manifests: [rollout.yaml, analysis.yaml]\n  services: {{shop-stable: web, shop-canary: web}}\n  secrets_dir: secrets\n\
             notifications:\n{notifications}"
        ),
    )
    .unwrap();
    Weir::start_with(dir, config, &[])
}

fn events(received: &Received, path: &str) -> Vec<Value> {
    let all = received.lock().unwrap();
    all.iter()
        .filter(|(p, _, _)| p == path)
        .map(|(_, _, v)| v.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_abort_reaches_the_receivers_with_its_evidence_and_a_hanging_one_delays_nothing() {
    let errors = Arc::new(AtomicU64::new(1000));
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start(
        "canary",
        Behaviour {
            error_every: Some(errors.clone()),
            ..Default::default()
        },
    )
    .await;
    let (receiver, received) = recorder().await;
    let (hang, hung) = hanging().await;

    let dir = common::temp_dir("notifications");
    std::fs::create_dir_all(dir.join("secrets/hooks")).unwrap();
    std::fs::write(dir.join("secrets/hooks/token"), "Bearer s3cr3t\n").unwrap();
    let hooks = format!(
        "- name: hanging\n  url: http://{hang}/\n  timeout: 60s\n  retries: 0\n  events: [aborted]\n\
         - name: ops\n  url: http://{receiver}/json\n  headers: {{Authorization: {{secret: {{name: hooks, key: token}}}}}}\n\
         - name: chat\n  url: http://{receiver}/slack\n  format: slack\n  events: [aborted]\n"
    );
    let weir = start(dir, stable.addr, canary.addr, ROLLOUT, &hooks);
    let load = Load::start(weir.addr, 300, Duration::from_secs(40));
    weir.wait_rollout(Duration::from_secs(10), |s| {
        s["phase"] == "Paused" && s["weights"]["canary"] == 20.0
    })
    .await;

    // The recorder is told of the step and the pause; the hanging receiver wants only
    // `aborted`, so it has been sent nothing yet.
    let paused = wait_event(&received, "/json", "paused", Duration::from_secs(5)).await;
    assert_eq!(
        (paused["step"].as_u64(), paused["weight"].as_f64()),
        (Some(2), Some(20.0)),
        "{paused:#}"
    );
    wait_event(&received, "/json", "step-reached", Duration::from_secs(1)).await;
    assert_eq!(hung.load(Ordering::SeqCst), 0);

    errors.store(20, Ordering::SeqCst); // 5 % 5xx from now on
    let s = weir
        .wait_rollout(Duration::from_secs(15), |s| s["phase"] == "Degraded")
        .await;
    let aborted_at = Instant::now();
    assert_eq!(s["aborted"], true);

    // The recorder has the abort within a moment, with the failed metric as evidence...
    let abort = wait_event(&received, "/json", "aborted", Duration::from_secs(5)).await;
    assert!(aborted_at.elapsed() < Duration::from_secs(5));
    assert_eq!(abort["rollout"], "shop");
    assert_eq!(abort["phase"], "Degraded");
    assert!(
        abort["time"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{abort:#}"
    );
    let failed: Vec<&Value> = abort["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|run| run["metrics"].as_array().into_iter().flatten())
        .filter(|m| m["name"] == "success-rate" && m["phase"] == "Failed")
        .collect();
    assert!(
        !failed.is_empty(),
        "no failed metric in the evidence: {abort:#}"
    );
    assert!(
        abort["message"]
            .as_str()
            .unwrap_or("")
            .contains("success-rate"),
        "{abort:#}"
    );
    let kinds: Vec<String> = events(&received, "/json")
        .iter()
        .filter_map(|e| e["event"].as_str().map(String::from))
        .collect();
    assert!(kinds.contains(&"analysis-failed".to_string()), "{kinds:?}");
    // ...its Secret header sent, without the file's newline...
    let auths: Vec<String> = received
        .lock()
        .unwrap()
        .iter()
        .filter(|(p, _, _)| p == "/json")
        .map(|(_, a, _)| a.clone())
        .collect();
    assert!(auths.iter().all(|a| a == "Bearer s3cr3t"), "{auths:?}");
    // ...and the Slack receiver a sentence.
    let slack = loop {
        if let Some(e) = events(&received, "/slack").into_iter().next() {
            break e;
        }
        assert!(
            aborted_at.elapsed() < Duration::from_secs(5),
            "no Slack message"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let text = slack["text"].as_str().unwrap_or("");
    assert!(
        text.starts_with("weir: rollout *shop* was aborted at step")
            && text.contains("success-rate: Failed"),
        "{text}"
    );

    // The hanging receiver was sent the abort too, and still holds it: neither the abort nor
    // the other receivers waited for it.
    assert_eq!(hung.load(Ordering::SeqCst), 1);
    // The status shows deliveries as of its last publication (at least once a second).
    let delivered = |s: &Value, name: &str| {
        let hooks = s["notifications"].as_array().cloned().unwrap_or_default();
        let hook = hooks.into_iter().find(|h| h["name"] == name);
        hook.and_then(|h| h["delivered"].as_u64())
    };
    let s = weir
        .wait_rollout(Duration::from_secs(5), |s| {
            delivered(s, "chat") == Some(1) && delivered(s, "ops") >= Some(3)
        })
        .await;
    let hooks = s["notifications"].as_array().cloned().unwrap_or_default();
    let hook = |name: &str| {
        hooks
            .iter()
            .find(|h| h["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        (
            hook("hanging")["delivered"].as_u64(),
            hook("hanging")["failed"].as_u64()
        ),
        (Some(0), Some(0)),
        "{s:#}"
    );
    assert!(hook("ops")["delivered"].as_u64() >= Some(3), "{s:#}");
    assert_eq!(hook("chat")["delivered"].as_u64(), Some(1), "{s:#}");
    let metrics = weir.metrics().await;
    assert!(
        metrics.contains(
            "weir_notifications_total{webhook=\"ops\",event=\"aborted\",outcome=\"delivered\"} 1"
        ),
        "{metrics}"
    );
    load.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_is_down_is_retried_then_counted_failed() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    // A port nothing listens on.
    let down = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    // No analysis: the rollout pauses at its second step.
    let rollout = ROLLOUT.replace(
        "      analysis: {templates: [{templateName: live}], args: [{name: route, value: web}]}\n",
        "",
    );
    let hooks = format!(
        "- name: down\n  url: http://{down}/\n  retries: 2\n  backoff: 100ms\n  events: [paused]\n"
    );
    let weir = start(
        common::temp_dir("notifications-down"),
        stable.addr,
        canary.addr,
        &rollout,
        &hooks,
    );
    weir.wait_rollout(Duration::from_secs(10), |s| s["phase"] == "Paused")
        .await;
    // Three attempts (100 ms, then 200 ms apart), then failed, with why.
    let s = weir
        .wait_rollout(Duration::from_secs(10), |s| {
            s["notifications"][0]["failed"].as_u64() == Some(1)
        })
        .await;
    let why = s["notifications"][0]["last_error"].as_str().unwrap_or("");
    assert!(why.contains("cannot connect"), "{s:#}");
    // The URL may hold a secret (Slack's do): the error names it `<url>`.
    assert!(
        why.starts_with("POST <url>: ") && !why.contains(&format!("http://{down}/")),
        "{why}"
    );
    let metrics = weir.metrics().await;
    assert!(
        metrics.contains(
            "weir_notifications_total{webhook=\"down\",event=\"paused\",outcome=\"failed\"} 1"
        ),
        "{metrics}"
    );
}
