//! The weir binary as the data plane of Gateway API HTTPRoutes: a local fake of the Kubernetes
//! API server (control/tests/common/fake_kube.rs — a fake of the API server, not of weir)
//! serves HTTPRoutes and EndpointSlices that point at real upstreams on 127.0.0.1; requests go
//! through weir and the tests check where they land. The routes are the fixtures' own (the Argo
//! plugin's example), or written as Flagger writes them (fixtures/gateway-api/flagger/BEHAVIOUR.md;
//! Flagger stores no generated HTTPRoute), edited in the sequence those controllers apply.

mod common;
#[path = "../control/tests/common/fake_kube.rs"]
mod fake_kube;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::backend::{self, Behaviour, TestBackend};
use common::client::{Response, H1};
use common::weir::Weir;
use fake_kube::{FakeApiServer, FakeCluster};
use http_body_util::Full;
use serde_json::{json, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/gateway-api");

fn slice(namespace: &str, service: &str, port: u16) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{service}-x1"), "namespace": namespace,
                     "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
    })
}

/// A kubeconfig for the fake API server, and weir started with `kube` as its kube section.
/// The Argo plugin's example HTTPRoute, unchanged but for its namespace (and `status`, when
/// given), in a fake cluster with its stable and canary Services' slices on fresh upstreams.
async fn argo_plugin_cluster(
    status: Option<Value>,
) -> (Value, TestBackend, TestBackend, FakeCluster) {
    let text =
        std::fs::read_to_string(format!("{FIXTURES}/argo-plugin/cilium_httproute.yml")).unwrap();
    let mut route: Value = serde_yaml_ng::from_str(&text).unwrap();
    route["metadata"]["namespace"] = json!("default");
    if let Some(status) = status {
        route["status"] = status;
    }
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let cluster = FakeCluster::new();
    for (service, upstream) in [
        ("argo-rollouts-stable-service", &stable),
        ("argo-rollouts-canary-service", &canary),
    ] {
        cluster.apply(slice("default", service, upstream.addr.port()));
    }
    cluster.apply(route.clone());
    cluster.apply(cilium_gateway());
    (route, stable, canary, cluster)
}

/// The Gateway the plugin's example routes name (the examples ship none): `cilium` in the
/// routes' namespace, one HTTP listener taking routes from its own namespace.
fn cilium_gateway() -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "Gateway",
        "metadata": {"name": "cilium", "namespace": "default"},
        "spec": {"gatewayClassName": "cilium",
                 "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
    })
}

fn start_weir(server: &FakeApiServer, namespace: &str, kube: &str) -> Weir {
    let dir: PathBuf = common::temp_dir("gateway");
    let kubeconfig = common::kubeconfig(&dir, &server.url(), namespace);
    std::fs::write(
        dir.join("weir.yaml"),
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             kube: {{namespace: {namespace}, http_routes: {kube}}}\n"
        ),
    )
    .unwrap();
    Weir::start_env(
        dir.clone(),
        dir.join("weir.yaml"),
        &[],
        &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
    )
}

async fn request(
    c: &mut H1,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
) -> Response {
    let mut b = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", host);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    c.send(b.body(Full::new(Bytes::new())).unwrap()).await
}

/// Where `n` requests land, by backend (weir's own answers as `weir <status>`).
async fn landing(
    weir: &Weir,
    n: usize,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
) -> HashMap<String, usize> {
    let mut c = H1::connect(weir.addr).await;
    let mut seen = HashMap::new();
    for _ in 0..n {
        let r = request(&mut c, "GET", path, host, headers).await;
        let key = match r.backend() {
            "" => format!("weir {}", r.status.as_u16()),
            b => b.to_string(),
        };
        *seen.entry(key).or_default() += 1;
    }
    seen
}

/// The table in force: routes by name → their backends' (name, share %).
async fn table(weir: &Weir) -> (u64, Vec<(String, Vec<(String, f64)>)>) {
    let (_, text) = common::client::get_text(weir.admin, "/routes").await;
    let v: Value = serde_json::from_str(&text).unwrap();
    let routes = v["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let backends = r["backends"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| {
                    (
                        b["name"].as_str().unwrap().to_string(),
                        b["share"].as_f64().unwrap(),
                    )
                })
                .collect();
            (r["name"].as_str().unwrap().to_string(), backends)
        })
        .collect();
    (v["generation"].as_u64().unwrap_or(0), routes)
}

/// Waits until the table satisfies `ok`; returns how long that took.
async fn until(
    weir: &Weir,
    within: Duration,
    what: &str,
    ok: impl Fn(&[(String, Vec<(String, f64)>)]) -> bool,
) -> Duration {
    let start = Instant::now();
    loop {
        let (_, routes) = table(weir).await;
        if ok(&routes) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "{what}: not within {within:?}; table {routes:?}\nlog:\n{}",
            weir.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn shares(routes: &[(String, Vec<(String, f64)>)], route: &str) -> Vec<f64> {
    routes
        .iter()
        .find(|(n, _)| n == route)
        .map(|(_, b)| b.iter().map(|(_, s)| *s).collect())
        .unwrap_or_default()
}

// ---- Flagger ----------------------------------------------------------------------------------

const FLAGGER_NS: &str = "sa-test";

/// The HTTPRoute Flagger's `gatewayapi:v1` router writes for the session-affinity Canary of
/// its e2e test (fixtures: flagger/extracted/test_gatewayapi_test-session-affinity_L22-71.yaml):
/// named after the apex Service, parentRefs = gatewayRefs, hostnames = service.hosts, and
/// `rules` as given.
fn flagger_route(canary: &Value, rules: Value) -> Value {
    let service = &canary["spec"]["service"];
    let gateway = &service["gatewayRefs"][0];
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": canary["metadata"]["name"], "namespace": FLAGGER_NS},
        "spec": {
            "parentRefs": [{"name": gateway["name"], "namespace": gateway["namespace"]}],
            "hostnames": service["hosts"],
            "rules": rules,
        }
    })
}

fn backend_ref(name: &str, port: &Value, weight: u32) -> Value {
    json!({"group": "", "kind": "Service", "name": name, "port": port, "weight": weight})
}

/// Flagger's weighted rule: PathPrefix / to primary P, canary C.
fn weighted(port: &Value, primary: u32, canary: u32) -> Value {
    json!({
        "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
        "backendRefs": [backend_ref("podinfo-primary", port, primary), backend_ref("podinfo-canary", port, canary)],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flagger_canary_session_affinity_and_ab_applied_in_sequence() {
    let text = std::fs::read_to_string(format!(
        "{FIXTURES}/flagger/extracted/test_gatewayapi_test-session-affinity_L22-71.yaml"
    ))
    .unwrap();
    let canary: Value = serde_yaml_ng::from_str(&text).unwrap();
    let port = canary["spec"]["service"]["port"].clone();
    let host = canary["spec"]["service"]["hosts"][0]
        .as_str()
        .unwrap()
        .to_string();
    let cookie = canary["spec"]["analysis"]["sessionAffinity"]["cookieName"]
        .as_str()
        .unwrap()
        .to_string();

    let primary = backend::start("primary", Behaviour::default()).await;
    let canary_backend = backend::start("canary", Behaviour::default()).await;
    let cluster = FakeCluster::new();
    cluster.apply(slice(FLAGGER_NS, "podinfo-primary", primary.addr.port()));
    cluster.apply(slice(
        FLAGGER_NS,
        "podinfo-canary",
        canary_backend.addr.port(),
    ));
    // A new Canary's route: 100 / 0.
    cluster.apply(flagger_route(&canary, json!([weighted(&port, 100, 0)])));
    // The Gateway of Flagger's e2e install, served at v1 as a real API server serves it
    // (the CRD's versions share one schema; the fake does not convert, so it is stored so).
    let text = std::fs::read_to_string(format!(
        "{FIXTURES}/flagger/extracted/test_gatewayapi_install_L30-44.yaml"
    ))
    .unwrap();
    let mut gateway: Value = serde_yaml_ng::from_str(&text).unwrap();
    gateway["apiVersion"] = json!("gateway.networking.k8s.io/v1");
    cluster.apply(gateway);
    let server = FakeApiServer::start(cluster.clone()).await;
    let weir = start_weir(
        &server,
        FLAGGER_NS,
        "{controller_name: weir.example/gateway, gateway: {name: gateway, namespace: istio-ingress}}",
    );
    let route = "sa-test/podinfo/0";
    until(&weir, Duration::from_secs(10), "first table", |r| {
        shares(r, route) == [100.0, 0.0]
    })
    .await;
    let seen = landing(&weir, 100, "/", &host, &[]).await;
    assert_eq!(seen.get("primary"), Some(&100), "{seen:?}");
    // The route's hostnames hold: another host matches no route.
    let other = landing(&weir, 1, "/", "elsewhere.example.com", &[]).await;
    assert_eq!(other.get("weir 404"), Some(&1), "{other:?}");

    // A step: 90 / 10, followed within a second.
    cluster.apply(flagger_route(&canary, json!([weighted(&port, 90, 10)])));
    let took = until(&weir, Duration::from_secs(1), "90/10", |r| {
        shares(r, route) == [90.0, 10.0]
    })
    .await;
    let seen = landing(&weir, 1000, "/", &host, &[]).await;
    let to_canary = seen.get("canary").copied().unwrap_or(0);
    assert!(
        (90..=110).contains(&to_canary),
        "{seen:?} ({took:?} to follow)"
    );

    // Session affinity while the canary weight is above 0: the sticky rule first, then the
    // weighted rule whose canary ref sets the cookie through a backendRef filter.
    let value = "7d3f9a";
    let mut sticky_weighted = weighted(&port, 90, 10);
    sticky_weighted["backendRefs"][1]["filters"] = json!([{
        "type": "ResponseHeaderModifier",
        "responseHeaderModifier": {"add": [{"name": "Set-Cookie", "value": format!("{cookie}={value}; Max-Age=86400")}]}
    }]);
    let sticky = json!({
        "matches": [{"path": {"type": "PathPrefix", "value": "/"},
                     "headers": [{"type": "RegularExpression", "name": "Cookie", "value": format!(".*{cookie}.*{value}.*")}]}],
        "backendRefs": [backend_ref("podinfo-primary", &port, 0), backend_ref("podinfo-canary", &port, 100)],
    });
    cluster.apply(flagger_route(&canary, json!([sticky, sticky_weighted])));
    until(&weir, Duration::from_secs(1), "session affinity", |r| {
        r.len() == 2
    })
    .await;
    let mut c = H1::connect(weir.addr).await;
    let mut set_cookie = None;
    for _ in 0..200 {
        let r = request(&mut c, "GET", "/", &host, &[]).await;
        let cookie_header = r
            .headers
            .get("set-cookie")
            .map(|v| v.to_str().unwrap_or("").to_string());
        match r.backend() {
            "canary" => {
                set_cookie = cookie_header;
                break;
            }
            // Primary's answers carry no cookie.
            _ => assert_eq!(cookie_header, None),
        }
    }
    let set_cookie = set_cookie.expect("a canary answer within 200 requests carries the cookie");
    assert!(
        set_cookie.starts_with(&format!("{cookie}={value}")),
        "{set_cookie}"
    );
    let sent = format!("session=1; {cookie}={value}");
    let seen = landing(&weir, 50, "/", &host, &[("cookie", sent.as_str())]).await;
    assert_eq!(
        seen.get("canary"),
        Some(&50),
        "a sticky client stays on canary: {seen:?}"
    );

    // A/B: the analysis match routes testers to canary; everyone else to primary.
    let ab = json!({
        "matches": [{"headers": [{"type": "Exact", "name": "x-canary", "value": "insider"}]}],
        "backendRefs": [backend_ref("podinfo-primary", &port, 0), backend_ref("podinfo-canary", &port, 100)],
    });
    let rest = json!({
        "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
        "backendRefs": [backend_ref("podinfo-primary", &port, 100)],
    });
    cluster.apply(flagger_route(&canary, json!([ab, rest])));
    until(&weir, Duration::from_secs(1), "A/B", |r| {
        shares(r, "sa-test/podinfo/1") == [100.0]
    })
    .await;
    let testers = landing(&weir, 50, "/api", &host, &[("x-canary", "insider")]).await;
    assert_eq!(testers.get("canary"), Some(&50), "{testers:?}");
    let others = landing(&weir, 50, "/api", &host, &[("x-canary", "outsider")]).await;
    assert_eq!(others.get("primary"), Some(&50), "{others:?}");

    // The API server goes away: the last good table keeps serving.
    drop(server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let testers = landing(&weir, 20, "/api", &host, &[("x-canary", "insider")]).await;
    assert_eq!(testers.get("canary"), Some(&20), "{testers:?}");
}

// ---- the Argo Rollouts Gateway API plugin -----------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argo_plugin_set_weight_and_set_header_route_on_its_example_route() {
    // The plugin's example, unchanged: gateway cilium, host demo.example.com, stable and canary
    // Services on port 80, no weights (1 and 1).
    let (mut route, _stable, _canary, cluster) = argo_plugin_cluster(None).await;
    let server = FakeApiServer::start(cluster.clone()).await;
    let weir = start_weir(
        &server,
        "default",
        // The example is written as v1beta1; the fake API server does not convert between
        // versions as a real one does, so weir reads v1beta1, as it would on a cluster whose
        // CRD serves only that version.
        "{controller_name: weir.example/gateway, gateway: {name: cilium}, version: v1beta1}",
    );
    let name = "default/argo-rollouts-http-route/0";
    until(&weir, Duration::from_secs(10), "example as written", |r| {
        shares(r, name) == [50.0, 50.0]
    })
    .await;

    // setWeight 30: canary 30, stable 70; the rest of the object as it was.
    route["spec"]["rules"][0]["backendRefs"][0]["weight"] = json!(70);
    route["spec"]["rules"][0]["backendRefs"][1]["weight"] = json!(30);
    cluster.apply(route.clone());
    until(&weir, Duration::from_secs(1), "setWeight 30", |r| {
        shares(r, name) == [70.0, 30.0]
    })
    .await;
    let seen = landing(&weir, 1000, "/", "demo.example.com", &[]).await;
    let to_canary = seen.get("canary").copied().unwrap_or(0);
    assert!((285..=315).contains(&to_canary), "{seen:?}");

    // Verification: /routes shows the object and generation in force, the weights, and the
    // split observed over the last 60 s; the metric carries the observed share.
    let (_, text) = common::client::get_text(weir.admin, "/routes").await;
    let routes: Value = serde_json::from_str(&text).unwrap();
    let r = &routes["routes"][0];
    assert_eq!(r["origin"]["kind"], "HTTPRoute");
    assert_eq!(r["origin"]["name"], "argo-rollouts-http-route");
    assert_eq!(r["origin"]["generation"], 2);
    let canary_ref = &r["backends"][1];
    assert_eq!(canary_ref["name"], "argo-rollouts-canary-service");
    assert_eq!(canary_ref["share"], 30.0);
    assert_eq!(canary_ref["observed_requests"], to_canary);
    let observed = canary_ref["observed_share"].as_f64().unwrap();
    assert!(
        (observed - to_canary as f64 / 10.0).abs() < 1e-9,
        "{observed}"
    );
    let metric = common::weir::sample(
        &weir.metrics().await,
        "weir_observed_share_ratio",
        &[
            ("route", "default/argo-rollouts-http-route/0"),
            ("backend", "argo-rollouts-canary-service"),
        ],
    );
    assert!(
        (metric - to_canary as f64 / 1000.0).abs() < 1e-9,
        "{metric}"
    );

    // setHeaderRoute: a rule named after the managed route, appended, canary only.
    let rules = route["spec"]["rules"].as_array_mut().unwrap();
    rules.push(json!({
        "name": "header-route",
        "matches": [{"path": {"type": "PathPrefix", "value": "/"},
                     "headers": [{"type": "RegularExpression", "name": "X-Test", "value": "beta.*"}]}],
        "backendRefs": [{"group": "", "kind": "Service", "name": "argo-rollouts-canary-service", "port": 80}],
    }));
    cluster.apply(route.clone());
    until(&weir, Duration::from_secs(1), "setHeaderRoute", |r| {
        r.len() == 2
    })
    .await;
    let testers = landing(&weir, 50, "/", "demo.example.com", &[("x-test", "beta-7")]).await;
    assert_eq!(testers.get("canary"), Some(&50), "{testers:?}");

    // removeManagedRoutes, then setWeight 0 at the end of the rollout.
    route["spec"]["rules"].as_array_mut().unwrap().truncate(1);
    route["spec"]["rules"][0]["backendRefs"][0]["weight"] = json!(100);
    route["spec"]["rules"][0]["backendRefs"][1]["weight"] = json!(0);
    cluster.apply(route);
    until(&weir, Duration::from_secs(1), "done", |r| {
        r.len() == 1 && shares(r, name) == [100.0, 0.0]
    })
    .await;
    let seen = landing(&weir, 50, "/", "demo.example.com", &[("x-test", "beta-7")]).await;
    assert_eq!(seen.get("stable"), Some(&50), "{seen:?}");
}

// ---- conformance-style cases ------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_precedence_mirror_and_zero_weights() {
    let a = backend::start("a", Behaviour::default()).await;
    let b = backend::start("b", Behaviour::default()).await;
    let c: TestBackend = backend::start("c", Behaviour::default()).await;
    let cluster = FakeCluster::new();
    for (service, be) in [("svc-a", &a), ("svc-b", &b), ("svc-c", &c)] {
        cluster.apply(slice("conf", service, be.addr.port()));
    }
    let r = |name: &str, w: u32| json!({"name": name, "port": 80, "weight": w});
    cluster.apply(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "conformance", "namespace": "conf"},
        "spec": {
            "parentRefs": [{"group": "", "kind": "Service", "name": "shop"}],
            "rules": [
                {"backendRefs": [r("svc-a", 70), r("svc-b", 30), r("svc-c", 0)]},
                {"matches": [{"path": {"type": "Exact", "value": "/checkout"}}],
                 "backendRefs": [r("svc-b", 1)]},
                {"matches": [{"headers": [{"name": "X-Debug", "value": "1"}]}],
                 "backendRefs": [r("svc-c", 1)]},
                {"matches": [{"path": {"type": "PathPrefix", "value": "/api"}, "method": "POST"}],
                 "backendRefs": [r("svc-c", 1)]},
                {"matches": [{"path": {"type": "PathPrefix", "value": "/shadow"}}],
                 "filters": [{"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "svc-c", "port": 80}, "percent": 50}}],
                 "backendRefs": [r("svc-a", 1)]},
                {"matches": [{"path": {"type": "PathPrefix", "value": "/none"}}],
                 "backendRefs": [r("svc-a", 0), r("svc-b", 0)]},
            ]
        }
    }));
    let server = FakeApiServer::start(cluster.clone()).await;
    let weir = start_weir(
        &server,
        "conf",
        "{controller_name: weir.example/mesh, services: [shop]}",
    );
    until(&weir, Duration::from_secs(10), "six rules", |r| {
        r.len() == 6
    })
    .await;

    // 70/30/0 over 500 requests: the weight-0 backend gets none, the others their share.
    let seen = landing(&weir, 500, "/", "shop", &[]).await;
    assert_eq!(seen.get("c"), None, "{seen:?}");
    let to_a = seen.get("a").copied().unwrap_or(0);
    assert!((340..=360).contains(&to_a), "{seen:?}");
    assert_eq!(to_a + seen.get("b").copied().unwrap_or(0), 500, "{seen:?}");

    // Precedence: an exact path beats the `/` prefix; a header match beats the bare `/`; a
    // method match counts; a longer prefix beats `/`.
    assert_eq!(
        landing(&weir, 5, "/checkout", "shop", &[]).await.get("b"),
        Some(&5)
    );
    assert_eq!(
        landing(&weir, 5, "/checkout/x", "shop", &[]).await.get("c"),
        None
    );
    assert_eq!(
        landing(&weir, 5, "/", "shop", &[("x-debug", "1")])
            .await
            .get("c"),
        Some(&5)
    );
    let mut conn = H1::connect(weir.addr).await;
    let post = request(&mut conn, "POST", "/api/orders", "shop", &[]).await;
    assert_eq!(post.backend(), "c");
    let get = request(&mut conn, "GET", "/api/orders", "shop", &[]).await;
    assert_ne!(get.backend(), "c");

    // Mirror 50 %: the client's answer is a's; half the requests are copied to c.
    let before = c.hits();
    let seen = landing(&weir, 200, "/shadow", "shop", &[]).await;
    assert_eq!(seen.get("a"), Some(&200), "{seen:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.hits() - before < 100 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The mirror's rotation is exact per 10,000 requests and within a few over 200.
    let copies = c.hits() - before;
    assert!(
        (95..=105).contains(&copies),
        "{copies} mirrored copies of 200 at 50 %"
    );

    // Every weight 0: 500.
    let seen = landing(&weir, 3, "/none", "shop", &[]).await;
    assert_eq!(seen.get("weir 500"), Some(&3), "{seen:?}");
}

// ---- status, written by one elected replica ---------------------------------------------------

fn our_entry(route: &Value) -> Option<Value> {
    route["status"]["parents"]
        .as_array()?
        .iter()
        .find(|p| p["controllerName"] == "weir.example/gateway")
        .cloned()
}

fn count(requests: &[String], prefix: &str, contains: &str) -> usize {
    requests
        .iter()
        .filter(|r| r.starts_with(prefix) && r.contains(contains))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_is_written_by_one_elected_replica_and_follows_the_generation() {
    // Another implementation's entry is already there: it must stay.
    let other = json!({"parentRef": {"name": "cilium"}, "controllerName": "io.cilium/gateway-controller",
                       "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                                       "observedGeneration": 1, "lastTransitionTime": "2026-11-30T00:00:00Z"}]});
    let (mut route, _stable, _canary, cluster) =
        argo_plugin_cluster(Some(json!({"parents": [other.clone()]}))).await;
    let server = FakeApiServer::start(cluster.clone()).await;
    let kube = "{controller_name: weir.example/gateway, gateway: {name: cilium}, version: v1beta1, lease_duration: 2s}";
    let mut first = Some(start_weir(&server, "default", kube));
    let second = start_weir(&server, "default", kube);
    let v1beta1 = "gateway.networking.k8s.io/v1beta1";
    let stored = || {
        cluster
            .get(v1beta1, "HTTPRoute", "default", "argo-rollouts-http-route")
            .unwrap()
    };
    let wait_status = |generation: i64, within: Duration| {
        let stored = &stored;
        async move {
            let deadline = Instant::now() + within;
            loop {
                if let Some(entry) = our_entry(&stored()) {
                    let c = &entry["conditions"];
                    if c[0]["observedGeneration"] == generation {
                        return entry;
                    }
                }
                assert!(
                    Instant::now() < deadline,
                    "no status for generation {generation}: {}",
                    stored()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };

    let entry = wait_status(1, Duration::from_secs(10)).await;
    assert_eq!(
        entry["parentRef"],
        json!({"kind": "Gateway", "name": "cilium"})
    );
    let conditions = entry["conditions"].as_array().unwrap();
    assert_eq!(conditions[0]["type"], "Accepted");
    assert_eq!(conditions[0]["status"], "True");
    assert_eq!(conditions[1]["type"], "ResolvedRefs");
    assert_eq!(conditions[1]["status"], "True");
    assert_eq!(
        stored()["status"]["parents"][0],
        other,
        "another controller's entry is kept"
    );

    let holder = |cluster: &FakeCluster| {
        cluster
            .get(
                "coordination.k8s.io/v1",
                "Lease",
                "default",
                "weir-gateway-cilium",
            )
            .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from))
            .unwrap_or_default()
    };
    let leader_pid = holder(&cluster);
    let pids = [first.as_ref().unwrap().pid(), second.pid()];
    assert!(
        pids.iter().any(|p| leader_pid.ends_with(&format!("-{p}"))),
        "{leader_pid} holds the lease, not one of {pids:?}"
    );

    // Steady state: no status write, lease renewals from the holder only.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cluster.requests();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = cluster.requests();
    let window = &after[before.len()..];
    assert_eq!(count(window, "PUT", "/status"), 0, "{window:?}");
    let renewals = count(window, "PUT", "/leases/");
    assert!(
        (2..=8).contains(&renewals),
        "{renewals} lease renewals in 3 s: {window:?}"
    );
    assert_eq!(
        window
            .iter()
            .filter(|r| !r.ends_with("?watch") && !r.contains("/leases/"))
            .count(),
        0,
        "only watches and the holder's renewals at steady state: {window:?}"
    );

    // A controller edits the route: the new generation is reported once weir serves it.
    route["spec"]["rules"][0]["backendRefs"][0]["weight"] = json!(80);
    route["spec"]["rules"][0]["backendRefs"][1]["weight"] = json!(20);
    let before_edit = cluster.requests().len();
    cluster.apply(route.clone());
    wait_status(2, Duration::from_secs(2)).await;
    // Per change, with two replicas: the holder reads the route and writes its status; the
    // other makes no request at all (both learn the change from their watches).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let edit: Vec<String> = cluster.requests()[before_edit..]
        .iter()
        .filter(|r| !r.ends_with("?watch") && !r.contains("/leases/"))
        .cloned()
        .collect();
    assert_eq!(
        edit,
        [
            "GET /apis/gateway.networking.k8s.io/v1beta1/namespaces/default/httproutes/argo-rollouts-http-route",
            "PUT /apis/gateway.networking.k8s.io/v1beta1/namespaces/default/httproutes/argo-rollouts-http-route/status",
        ]
    );
    let (_, routes) = table(&second).await;
    assert_eq!(
        shares(&routes, "default/argo-rollouts-http-route/0"),
        [80.0, 20.0]
    );

    // The holder goes away: the other replica takes the lease and writes the next status.
    let first_pid = pids[0];
    if leader_pid.ends_with(&format!("-{first_pid}")) {
        drop(first.take());
    } else {
        drop(second);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while holder(&cluster) == leader_pid {
        assert!(Instant::now() < deadline, "the lease was not taken over");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    route["spec"]["rules"][0]["backendRefs"][0]["weight"] = json!(50);
    route["spec"]["rules"][0]["backendRefs"][1]["weight"] = json!(50);
    cluster.apply(route);
    wait_status(3, Duration::from_secs(3)).await;
}
