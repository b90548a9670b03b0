//! The Kubernetes source end to end against a fake of the Kubernetes API server (see
//! `common/fake_kube.rs`: it fakes the API server, not weir), with a real `kube::Client` over
//! loopback, the real Rollout objects from fixtures/argo-rollouts/live, and the data
//! plane's table as the thing observed.

#[path = "common/fake_kube.rs"]
mod fake_kube;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_kube::{FakeApiServer, FakeCluster};
use serde_json::{json, Value};
use weir_control::source::kube::{
    start_with_client, KubeHandle, KubeSourceConfig, PortRef, SmiVersion, WeightSource,
};
use weir_proxy::table::spec::{BackendSpec, RouteSpec, TableSpec};
use weir_proxy::DataPlane;

const LIVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../fixtures/argo-rollouts/live"
);
const NS: &str = "jesse-test";
/// The fixture with `status.canary.weights` (canary 20, stable 60), services
/// canary-demo-stable / canary-demo-preview.
const WEIGHTED: &str = "canary-demo-weights";

fn fixture(file: &str) -> Value {
    let text = std::fs::read_to_string(format!("{LIVE}/{file}")).expect("read fixture");
    serde_yaml_ng::from_str(&text).expect("parse fixture")
}

fn slice(name: &str, service: &str, endpoints: &[(&str, bool)]) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": NS,
                     "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": endpoints.iter().map(|(ip, ready)| json!({
            "addresses": [ip], "conditions": {"ready": ready}
        })).collect::<Vec<_>>(),
    })
}

fn base() -> TableSpec {
    let mut other = RouteSpec::new("other", BackendSpec::new(["127.0.0.1:2"]));
    other.matches[0].path = weir_proxy::table::spec::PathMatch::Prefix("/other".into());
    TableSpec {
        routes: vec![
            RouteSpec::new("web", BackendSpec::new(["127.0.0.1:1"])),
            other,
        ],
    }
}

fn config(weights: WeightSource) -> KubeSourceConfig {
    let mut cfg = KubeSourceConfig::new(NS, weights, "web", base());
    cfg.default_port = Some(PortRef::Name("http".into()));
    cfg.debounce = Duration::from_millis(20);
    cfg.retry_initial = Duration::from_millis(50);
    cfg.retry_max = Duration::from_millis(200);
    cfg
}

/// A cluster with the weighted fixture Rollout and ready endpoints for both Services.
fn cluster() -> FakeCluster {
    let c = FakeCluster::new();
    c.apply(fixture("canary_canary-rollout5.yaml"));
    c.apply(fixture("canary_canary-rollout.yaml")); // another Rollout in the namespace
    c.apply(slice(
        "stable-a",
        "canary-demo-stable",
        &[("10.0.0.1", true), ("10.0.0.2", true)],
    ));
    c.apply(slice(
        "canary-a",
        "canary-demo-preview",
        &[("10.0.1.1", true)],
    ));
    c.apply(slice("noise", "something-else", &[("10.9.0.1", true)]));
    c
}

struct Running {
    server: Option<FakeApiServer>,
    cluster: FakeCluster,
    plane: Arc<DataPlane>,
    handle: KubeHandle,
}

async fn run(cluster: FakeCluster, weights: WeightSource) -> Running {
    run_with(cluster, config(weights)).await
}

async fn run_with(cluster: FakeCluster, cfg: KubeSourceConfig) -> Running {
    let server = FakeApiServer::start(cluster.clone()).await;
    let plane = DataPlane::new();
    let handle = start_with_client(server.client(NS), cfg, plane.clone()).expect("start");
    Running {
        server: Some(server),
        cluster,
        plane,
        handle,
    }
}

impl Running {
    /// The data plane's driven route, once `pred` holds for it; panics after `within`.
    async fn until(
        &self,
        within: Duration,
        what: &str,
        pred: impl Fn(&RouteSpec) -> bool,
    ) -> RouteSpec {
        let start = Instant::now();
        loop {
            let table = self.plane.table.load();
            if let Some(r) = table.spec().routes.iter().find(|r| r.name == "web") {
                if pred(r) {
                    return r.clone();
                }
            }
            if start.elapsed() > within {
                panic!(
                    "{what}: not within {within:?}; table: {:?}; problem: {:?}",
                    table.spec().routes.iter().find(|r| r.name == "web"),
                    self.handle.problem()
                );
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn generation(&self) -> u64 {
        self.plane.table.load().generation()
    }
}

fn canary_addrs(r: &RouteSpec) -> Vec<String> {
    r.canary().map(|c| c.addresses.clone()).unwrap_or_default()
}

fn set_weights(rollout: &mut Value, canary: i64, stable: i64) {
    rollout["status"]["canary"]["weights"]["canary"]["weight"] = json!(canary);
    rollout["status"]["canary"]["weights"]["stable"]["weight"] = json!(stable);
}

#[tokio::test]
async fn kube_live_fixture_weights_are_relative_to_their_sum() {
    let t = run(
        cluster(),
        WeightSource::Rollout {
            name: WEIGHTED.into(),
        },
    )
    .await;
    // canary 20 / stable 60 → 25 %.
    let r = t
        .until(Duration::from_secs(5), "first table", |r| {
            r.canary_weight_bp() == 2500
        })
        .await;
    assert_eq!(
        r.stable().unwrap().addresses,
        ["10.0.0.1:8080", "10.0.0.2:8080"]
    );
    assert_eq!(canary_addrs(&r), ["10.0.1.1:8080"]);
    // The other route is the base config's, untouched.
    let table = t.plane.table.load();
    assert_eq!(table.spec().routes[1], base().routes[1]);
    assert_eq!(t.handle.staleness(), Some(Duration::ZERO));
    let metrics = t.plane.metrics.encode(weir_proxy::stats::Format::Classic);
    assert!(
        metrics.contains("weir_kube_sync_staleness_seconds 0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("weir_kube_last_sync_timestamp_seconds"),
        "{metrics}"
    );
}

#[tokio::test]
async fn kube_weight_change_is_followed_within_a_second() {
    let t = run(
        cluster(),
        WeightSource::Rollout {
            name: WEIGHTED.into(),
        },
    )
    .await;
    t.until(Duration::from_secs(5), "first table", |r| {
        r.canary_weight_bp() == 2500
    })
    .await;
    let mut rollout = fixture("canary_canary-rollout5.yaml");
    set_weights(&mut rollout, 50, 50);
    let changed = Instant::now();
    t.cluster.apply(rollout.clone());
    t.until(Duration::from_secs(1), "50 %", |r| {
        r.canary_weight_bp() == 5000
    })
    .await;
    assert!(changed.elapsed() < Duration::from_secs(1));
    set_weights(&mut rollout, 5, 15);
    t.cluster.apply(rollout.clone());
    t.until(Duration::from_secs(1), "5 of 20 = 25 %", |r| {
        r.canary_weight_bp() == 2500
    })
    .await;
    set_weights(&mut rollout, 100, 0);
    t.cluster.apply(rollout);
    t.until(Duration::from_secs(1), "100 %", |r| {
        r.canary_weight_bp() == 10_000
    })
    .await;
}

#[tokio::test]
async fn kube_abort_sends_canary_to_zero() {
    let t = run(
        cluster(),
        WeightSource::Rollout {
            name: WEIGHTED.into(),
        },
    )
    .await;
    t.until(Duration::from_secs(5), "first table", |r| {
        r.canary_weight_bp() == 2500
    })
    .await;
    let mut rollout = fixture("canary_canary-rollout5.yaml");
    rollout["status"]["abort"] = json!(true);
    rollout["status"]["phase"] = json!("Degraded");
    t.cluster.apply(rollout);
    let r = t
        .until(Duration::from_secs(1), "abort → 0", |r| {
            r.canary_weight_bp() == 0
        })
        .await;
    assert_eq!(
        r.stable().unwrap().addresses,
        ["10.0.0.1:8080", "10.0.0.2:8080"]
    );
}

#[tokio::test]
async fn kube_aborted_live_fixture_routes_to_stable() {
    let c = FakeCluster::new();
    let mut aborted = fixture("rollout-aborted_rollout.yaml");
    aborted["metadata"]["namespace"] = json!(NS);
    c.apply(aborted);
    c.apply(slice("stable-a", "stable-svc", &[("10.0.0.7", true)]));
    let mut cfg = config(WeightSource::Rollout {
        name: "rollout-background-analysis".into(),
    });
    // This Rollout names no Services (a basic canary): the config supplies them.
    cfg.stable_service = Some("stable-svc".into());
    let t = run_with(c, cfg).await;
    let r = t
        .until(Duration::from_secs(5), "aborted → stable only", |r| {
            r.stable().unwrap().addresses == ["10.0.0.7:8080"]
        })
        .await;
    assert_eq!(r.canary_weight_bp(), 0);
}

#[tokio::test]
async fn kube_rollout_without_weights_routes_all_to_stable() {
    let t = run(
        cluster(),
        WeightSource::RolloutSelector {
            labels: "app=canary-demo".into(),
        },
    )
    .await;
    // canary-demo has no status.canary.weights and no stableService: base stable addresses, the
    // canary Service's endpoints (none here) and weight 0.
    let r = t
        .until(Duration::from_secs(5), "first table", |r| {
            r.canary_weight_bp() == 0 && t.handle.applied().is_some()
        })
        .await;
    assert_eq!(r.stable().unwrap().addresses, ["127.0.0.1:1"]);
}

#[tokio::test]
async fn kube_blue_green_live_fixture_sends_all_to_active() {
    let c = FakeCluster::new();
    c.apply(fixture("blue-green_bluegreen-rollout.yaml"));
    c.apply(slice("active", "bluegreen-demo", &[("10.0.5.1", true)]));
    c.apply(slice(
        "preview",
        "bluegreen-demo-preview",
        &[("10.0.6.1", true)],
    ));
    let t = run(
        c,
        WeightSource::Rollout {
            name: "bluegreen-demo".into(),
        },
    )
    .await;
    let r = t
        .until(Duration::from_secs(5), "active", |r| {
            r.stable().unwrap().addresses == ["10.0.5.1:8080"]
        })
        .await;
    assert_eq!(r.canary_weight_bp(), 0);
    assert_eq!(canary_addrs(&r), ["10.0.6.1:8080"]);
}

#[tokio::test]
async fn kube_deleted_rollout_falls_back_to_stable() {
    let t = run(
        cluster(),
        WeightSource::Rollout {
            name: WEIGHTED.into(),
        },
    )
    .await;
    t.until(Duration::from_secs(5), "first table", |r| {
        r.canary_weight_bp() == 2500
    })
    .await;
    assert!(t
        .cluster
        .delete("argoproj.io/v1alpha1", "Rollout", NS, WEIGHTED));
    let r = t
        .until(Duration::from_secs(1), "deleted → stable", |r| {
            r.canary_weight_bp() == 0
        })
        .await;
    assert_eq!(
        r.stable().unwrap().addresses,
        ["10.0.0.1:8080", "10.0.0.2:8080"]
    );
    assert!(r.canary().is_none());
}

#[tokio::test]
async fn kube_endpoint_slice_changes_swap_the_table() {
    let t = run(
        cluster(),
        WeightSource::Rollout {
            name: WEIGHTED.into(),
        },
    )
    .await;
    t.until(Duration::from_secs(5), "first table", |r| {
        r.canary_weight_bp() == 2500
    })
    .await;
    let before = t.generation();
    // One endpoint stops being ready, a second slice of the Service appears.
    t.cluster.apply(slice(
        "stable-a",
        "canary-demo-stable",
        &[("10.0.0.1", true), ("10.0.0.2", false)],
    ));
    t.cluster.apply(slice(
        "stable-b",
        "canary-demo-stable",
        &[("10.0.0.3", true)],
    ));
    let r = t
        .until(Duration::from_secs(1), "new stable endpoints", |r| {
            r.stable().unwrap().addresses == ["10.0.0.1:8080", "10.0.0.3:8080"]
        })
        .await;
    assert_eq!(r.canary_weight_bp(), 2500);
    assert!(t.generation() > before);
    // The canary loses its only ready endpoint: its share goes to stable.
    t.cluster.apply(slice(
        "canary-a",
        "canary-demo-preview",
        &[("10.0.1.1", false)],
    ));
    let r = t
        .until(Duration::from_secs(1), "no canary", |r| {
            r.canary().is_none()
        })
        .await;
    assert_eq!(r.canary_weight_bp(), 0);
    // Every stable endpoint gone: nothing sensible to apply, the last table stays.
    let gen = t.generation();
    t.cluster
        .delete("discovery.k8s.io/v1", "EndpointSlice", NS, "stable-a");
    t.cluster
        .delete("discovery.k8s.io/v1", "EndpointSlice", NS, "stable-b");
    let start = Instant::now();
    while t.handle.problem().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "no problem reported"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(t.generation(), gen);
    assert!(t.handle.problem().unwrap().contains("no ready endpoints"));
}

#[tokio::test]
async fn kube_api_outage_keeps_the_table_and_catches_up() {
    let mut t = run(
        cluster(),
        WeightSource::Rollout {
            name: WEIGHTED.into(),
        },
    )
    .await;
    t.until(Duration::from_secs(5), "first table", |r| {
        r.canary_weight_bp() == 2500
    })
    .await;
    let gen = t.generation();
    let addr = t.server.take().unwrap().stop().await;

    // While the API is away: the table stays, staleness grows.
    let start = Instant::now();
    while t.handle.staleness() == Some(Duration::ZERO) {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "staleness never rose"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(t.handle.staleness().unwrap() >= Duration::from_millis(500));
    assert_eq!(t.generation(), gen);
    assert_eq!(
        t.plane
            .table
            .load()
            .route("web")
            .unwrap()
            .canary_weight_bp(),
        2500
    );
    tokio::time::sleep(Duration::from_millis(1100)).await; // a gauge tick
    let metrics = t.plane.metrics.encode(weir_proxy::stats::Format::Classic);
    assert!(
        !metrics.contains("weir_kube_sync_staleness_seconds 0\n"),
        "{metrics}"
    );

    // Newer objects appear meanwhile; the old history is gone (410 on resume).
    let mut rollout = fixture("canary_canary-rollout5.yaml");
    set_weights(&mut rollout, 40, 60);
    t.cluster.apply(rollout);
    t.cluster.apply(slice(
        "canary-a",
        "canary-demo-preview",
        &[("10.0.1.1", true), ("10.0.1.2", true)],
    ));
    t.cluster.compact();

    let server = FakeApiServer::start_on(t.cluster.clone(), addr)
        .await
        .expect("rebind");
    t.server = Some(server);
    // Each watch re-lists on its own: wait for both to have caught up.
    t.until(Duration::from_secs(3), "caught up", |r| {
        r.canary_weight_bp() == 4000 && canary_addrs(r) == ["10.0.1.1:8080", "10.0.1.2:8080"]
    })
    .await;
    let start = Instant::now();
    while t.handle.staleness() != Some(Duration::ZERO) {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "still stale after recovery"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn kube_gone_triggers_a_relist() {
    let t = run(
        cluster(),
        WeightSource::Rollout {
            name: WEIGHTED.into(),
        },
    )
    .await;
    t.until(Duration::from_secs(5), "first table", |r| {
        r.canary_weight_bp() == 2500
    })
    .await;
    let lists = t.cluster.lists("rollouts");
    assert_eq!(lists, 1);
    t.cluster.expire_watches(); // open watches get ERROR 410 Expired
    let start = Instant::now();
    while t.cluster.lists("rollouts") == lists {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "no re-list after 410"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // And the re-established watch delivers changes.
    let mut rollout = fixture("canary_canary-rollout5.yaml");
    set_weights(&mut rollout, 1, 9);
    t.cluster.apply(rollout);
    t.until(Duration::from_secs(2), "10 %", |r| {
        r.canary_weight_bp() == 1000
    })
    .await;
}

#[tokio::test]
async fn kube_malformed_object_keeps_its_last_good_version() {
    let t = run(
        cluster(),
        WeightSource::Rollout {
            name: WEIGHTED.into(),
        },
    )
    .await;
    t.until(Duration::from_secs(5), "first table", |r| {
        r.canary_weight_bp() == 2500
    })
    .await;
    let mut rollout = fixture("canary_canary-rollout5.yaml");
    rollout["status"]["canary"]["weights"]["canary"]["weight"] = json!("lots");
    t.cluster.apply(rollout);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        t.plane
            .table
            .load()
            .route("web")
            .unwrap()
            .canary_weight_bp(),
        2500
    );
    assert_eq!(t.handle.staleness(), Some(Duration::ZERO));
    let mut rollout = fixture("canary_canary-rollout5.yaml");
    set_weights(&mut rollout, 3, 1);
    t.cluster.apply(rollout);
    t.until(Duration::from_secs(1), "readable again", |r| {
        r.canary_weight_bp() == 7500
    })
    .await;
}

fn traffic_split(version: &str, canary: Value, stable: Value) -> Value {
    json!({
        "apiVersion": format!("split.smi-spec.io/{version}"),
        "kind": "TrafficSplit",
        "metadata": {"name": "rollout-example-traffic-split", "namespace": NS},
        "spec": {
            "service": "root-svc",
            "backends": [
                {"service": "canary-demo-preview", "weight": canary},
                {"service": "canary-demo-stable", "weight": stable},
            ]
        }
    })
}

async fn run_split(version: SmiVersion, split: Value) -> Running {
    let c = cluster();
    c.apply(split);
    let mut cfg = config(WeightSource::TrafficSplit {
        name: "rollout-example-traffic-split".into(),
        version,
    });
    cfg.stable_service = Some("canary-demo-stable".into());
    run_with(c, cfg).await
}

#[tokio::test]
async fn kube_traffic_split_v1alpha1_quantities() {
    let t = run_split(
        SmiVersion::V1alpha1,
        traffic_split("v1alpha1", json!("500m"), json!("1500m")),
    )
    .await;
    let r = t
        .until(Duration::from_secs(5), "500m of 2", |r| {
            r.canary_weight_bp() == 2500
        })
        .await;
    assert_eq!(canary_addrs(&r), ["10.0.1.1:8080"]);
    t.cluster
        .apply(traffic_split("v1alpha1", json!("1"), json!("0.5")));
    t.until(Duration::from_secs(1), "1 of 1.5", |r| {
        r.canary_weight_bp() == 6667
    })
    .await;
    t.cluster
        .apply(traffic_split("v1alpha1", json!("100"), json!("0")));
    t.until(Duration::from_secs(1), "all canary", |r| {
        r.canary_weight_bp() == 10_000
    })
    .await;
}

#[tokio::test]
async fn kube_traffic_split_v1alpha3_integers() {
    let t = run_split(
        SmiVersion::V1alpha3,
        traffic_split("v1alpha3", json!(10), json!(90)),
    )
    .await;
    t.until(Duration::from_secs(5), "10 %", |r| {
        r.canary_weight_bp() == 1000
    })
    .await;
    t.cluster
        .apply(traffic_split("v1alpha3", json!(0), json!(100)));
    t.until(Duration::from_secs(1), "0 %", |r| r.canary_weight_bp() == 0)
        .await;
    // A v1alpha1 object is another API version: not watched.
    assert_eq!(t.cluster.lists("trafficsplits"), 1);
}

/// The next watch event that is not a BOOKMARK: a server may send those at any time (kube
/// asks for them by default), and a client passes over them.
async fn next_but_bookmarks<S, T>(stream: &mut S) -> Option<S::Item>
where
    S: futures_util::Stream<Item = Result<kube::api::WatchEvent<T>, kube::Error>> + Unpin,
{
    use futures_util::StreamExt;
    loop {
        match stream.next().await {
            Some(Ok(kube::api::WatchEvent::Bookmark(_))) => continue,
            other => return other,
        }
    }
}

/// The fake itself: a watch from a compacted resourceVersion gets the real server's 410, and a
/// label-selected watch sees an object that stops matching as DELETED.
#[tokio::test]
async fn kube_fake_apiserver_speaks_the_protocol() {
    use futures_util::StreamExt;
    use kube::api::{Api, WatchEvent, WatchParams};
    use kube::core::DynamicObject;

    let c = cluster();
    let server = FakeApiServer::start(c.clone()).await;
    let ar = kube::core::ApiResource {
        group: "discovery.k8s.io".into(),
        version: "v1".into(),
        api_version: "discovery.k8s.io/v1".into(),
        kind: "EndpointSlice".into(),
        plural: "endpointslices".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(NS), NS, &ar);
    let list = api
        .list(
            &kube::api::ListParams::default()
                .labels("kubernetes.io/service-name=canary-demo-stable"),
        )
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let rv = list.metadata.resource_version.unwrap();

    let wp = WatchParams::default().labels("kubernetes.io/service-name=canary-demo-stable");
    let mut stream = api.watch(&wp, &rv).await.unwrap().boxed();
    c.apply(slice("stable-a", "moved-away", &[("10.0.0.1", true)]));
    match tokio::time::timeout(Duration::from_secs(2), next_but_bookmarks(&mut stream)).await {
        Ok(Some(Ok(WatchEvent::Deleted(o)))) => {
            assert_eq!(o.metadata.name.as_deref(), Some("stable-a"))
        }
        other => panic!("expected DELETED, got {other:?}"),
    }

    c.compact();
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match tokio::time::timeout(Duration::from_secs(2), next_but_bookmarks(&mut stream)).await {
        Ok(Some(Ok(WatchEvent::Error(status)))) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"))
        }
        other => panic!("expected 410, got {other:?}"),
    }
}

/// A Service as a real cluster has them: an HTTP port whose `targetPort` is a container
/// port's *name*, beside a metrics port; its EndpointSlice as the slice controller writes it,
/// each port under the Service port's name with the number the name resolved to.
fn multi_port_service(name: &str, ips: &[&str], target: u16) -> [Value; 2] {
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": {"app": name}, "ports": [
            {"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"},
            {"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"},
        ]},
    });
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{name}-x7k2p"), "namespace": NS,
                     "labels": {"kubernetes.io/service-name": name,
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": "IPv4",
        "ports": [{"name": "metrics", "port": 9090, "protocol": "TCP"},
                  {"name": "http", "port": target, "protocol": "TCP"}],
        "endpoints": ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}}))
            .collect::<Vec<_>>(),
    });
    [service, slice]
}

/// Both Services with two ports and no `ports:` in weir's config: the port named `http` is
/// the one an HTTP proxy is for, reached at the target port its name resolved to.
fn multi_port_cluster() -> FakeCluster {
    let c = FakeCluster::new();
    c.apply(fixture("canary_canary-rollout5.yaml"));
    for object in multi_port_service("canary-demo-stable", &["10.0.0.1", "10.0.0.2"], 8080)
        .into_iter()
        .chain(multi_port_service(
            "canary-demo-preview",
            &["10.0.1.1"],
            8081,
        ))
    {
        c.apply(object);
    }
    c
}

#[tokio::test]
async fn kube_multi_port_services_resolve_through_the_port_name_for_a_rollout() {
    let mut cfg = config(WeightSource::Rollout {
        name: WEIGHTED.into(),
    });
    cfg.default_port = None;
    let t = run_with(multi_port_cluster(), cfg).await;
    let r = t
        .until(Duration::from_secs(5), "first table", |r| {
            r.canary_weight_bp() == 2500
        })
        .await;
    assert_eq!(
        r.stable().unwrap().addresses,
        ["10.0.0.1:8080", "10.0.0.2:8080"]
    );
    assert_eq!(canary_addrs(&r), ["10.0.1.1:8081"]);
}

#[tokio::test]
async fn kube_multi_port_services_resolve_through_the_port_name_for_a_traffic_split() {
    let c = multi_port_cluster();
    c.apply(traffic_split("v1alpha3", json!(10), json!(90)));
    let mut cfg = config(WeightSource::TrafficSplit {
        name: "rollout-example-traffic-split".into(),
        version: SmiVersion::V1alpha3,
    });
    cfg.default_port = None;
    cfg.stable_service = Some("canary-demo-stable".into());
    let t = run_with(c, cfg).await;
    let r = t
        .until(Duration::from_secs(5), "first table", |r| {
            r.canary_weight_bp() == 1000
        })
        .await;
    assert_eq!(
        r.stable().unwrap().addresses,
        ["10.0.0.1:8080", "10.0.0.2:8080"]
    );
    assert_eq!(canary_addrs(&r), ["10.0.1.1:8081"]);
}
