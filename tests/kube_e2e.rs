//! The weir binary following Argo's weights in a "cluster": a local fake of the Kubernetes API
//! server (control/tests/common/fake_kube.rs — a fake of the API server, not of weir) serving
//! the real live Rollout objects from fixtures/argo-rollouts, EndpointSlices that point at real
//! upstreams on 127.0.0.1, and weir reaching it through an ordinary kubeconfig.

mod common;
#[path = "../control/tests/common/fake_kube.rs"]
mod fake_kube;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::H1;
use common::weir::{sample, Weir};
use fake_kube::{FakeApiServer, FakeCluster};
use serde_json::{json, Value};

const NS: &str = "jesse-test";
const LIVE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/argo-rollouts/live");

fn fixture(file: &str) -> Value {
    serde_yaml_ng::from_str(&std::fs::read_to_string(format!("{LIVE}/{file}")).unwrap()).unwrap()
}

fn slice(name: &str, service: &str, port: u16) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": NS, "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
    })
}

async fn weight(weir: &Weir) -> f64 {
    let (_, routes) = common::client::get_text(weir.admin, "/routes").await;
    let routes: Value = serde_json::from_str(&routes).unwrap();
    routes["routes"][0]["canary_weight"]
        .as_f64()
        .unwrap_or(-1.0)
}

async fn wait_weight(weir: &Weir, want: f64, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let w = weight(weir).await;
        if w == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "weight {w}, wanted {want}; log:\n{}",
            weir.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn split(weir: &Weir, n: usize) -> HashMap<String, usize> {
    let mut c = H1::connect(weir.addr).await;
    let mut seen = HashMap::new();
    for _ in 0..n {
        let r = c.get("/", &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        *seen.entry(r.backend().to_string()).or_default() += 1;
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_follows_argo_weights_from_a_cluster_and_survives_the_api_going_away() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let cluster = FakeCluster::new();
    let mut rollout = fixture("canary_canary-rollout5.yaml"); // weights: canary 20, stable 60
    cluster.apply(rollout.clone());
    cluster.apply(slice("stable-a", "canary-demo-stable", stable.addr.port()));
    cluster.apply(slice("canary-a", "canary-demo-preview", canary.addr.port()));
    let server = FakeApiServer::start(cluster.clone()).await;

    let dir = common::temp_dir("kube");
    let kubeconfig = common::kubeconfig(&dir, &server.url(), NS);
    std::fs::write(
        dir.join("weir.yaml"),
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n- name: web\n  stable: {{addresses: [\"127.0.0.1:1\"]}}\n\
             kube: {{namespace: {NS}, rollout: canary-demo-weights, route: web, default_port: http}}\n"
        ),
    )
    .unwrap();
    let weir = Weir::start_env(
        dir.clone(),
        dir.join("weir.yaml"),
        &[],
        &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
    );

    // canary 20 of 20 + 60: 25 %, with the EndpointSlices' addresses.
    wait_weight(&weir, 25.0, Duration::from_secs(10)).await;
    let seen = split(&weir, 2_000).await;
    let to_canary = *seen.get("canary").unwrap_or(&0);
    assert!((450..=550).contains(&to_canary), "{seen:?}");
    // /routes names the object whose weights are in force, and its generation.
    let (_, routes) = common::client::get_text(weir.admin, "/routes").await;
    let routes: Value = serde_json::from_str(&routes).unwrap();
    assert_eq!(
        routes["routes"][0]["origin"],
        json!({"kind": "Rollout", "namespace": NS, "name": "canary-demo-weights", "generation": 1})
    );
    let (_, ready) = common::client::get_text(weir.admin, "/ready").await;
    let ready: Value = serde_json::from_str(&ready).unwrap();
    assert_eq!(ready["detail"]["kube"]["synced"], true, "{ready}");

    // Argo moves the weight: weir follows within a second.
    rollout["status"]["canary"]["weights"]["canary"]["weight"] = json!(50);
    rollout["status"]["canary"]["weights"]["stable"]["weight"] = json!(50);
    let changed = Instant::now();
    cluster.apply(rollout.clone());
    wait_weight(&weir, 50.0, Duration::from_secs(1)).await;
    assert!(changed.elapsed() < Duration::from_secs(1));

    // Argo aborts: canary to 0 at once.
    rollout["status"]["abort"] = json!(true);
    cluster.apply(rollout.clone());
    wait_weight(&weir, 0.0, Duration::from_secs(1)).await;
    rollout["status"]["abort"] = json!(false);
    cluster.apply(rollout.clone());
    wait_weight(&weir, 50.0, Duration::from_secs(2)).await;

    // The API server goes away: traffic keeps flowing on the last table, and it shows.
    let addr = server.stop().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let seen = split(&weir, 200).await;
    assert_eq!(seen.values().sum::<usize>(), 200);
    assert!(seen.get("canary").is_some_and(|c| *c > 50), "{seen:?}");
    let metrics = weir.metrics().await;
    assert!(
        sample(&metrics, "weir_kube_sync_staleness_seconds", &[]) >= 1.0,
        "{metrics}"
    );

    // It comes back with news: weir catches up.
    rollout["status"]["canary"]["weights"]["canary"]["weight"] = json!(10);
    rollout["status"]["canary"]["weights"]["stable"]["weight"] = json!(90);
    cluster.apply(rollout);
    let _server = FakeApiServer::start_on(cluster.clone(), addr)
        .await
        .unwrap();
    wait_weight(&weir, 10.0, Duration::from_secs(40)).await;
    drop(weir);
    let _ = std::fs::remove_dir_all(dir);
}
