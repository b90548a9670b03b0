//! The HTTPRoutes of the Gateway API project, the Argo Rollouts Gateway API plugin and Flagger,
//! read unchanged (fixtures/gateway-api) and translated into tables the data plane compiles —
//! and the controllers' edits (setWeight, setHeaderRoute, Flagger's A/B and session affinity)
//! matched and split as the spec says.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use weir_control::config::{
    GatewayVersion, HttpRouteParents, HttpRoutesSource, KubeSourceConfig, WatchedNamespaces,
    WeightSource,
};
use weir_control::source::kube::gateway::{translate, RouteStatus};
use weir_control::source::kube::gateway_view::GatewayView;
use weir_control::source::kube::httproute::{FilterView, HttpRouteView, ParentRef};
use weir_control::source::kube::objects::{SliceEndpoint, SlicePort, SliceView};
use weir_control::source::kube::Observed;
use weir_proxy::stats::{LiveStats, Metrics};
use weir_proxy::table::spec::TableSpec;
use weir_proxy::table::{Compiler, RouteTable};
use weir_proxy::upstream::Upstreams;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/gateway-api");

/// Every `kind: HTTPRoute` document of a file.
fn http_routes(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|doc| {
            let v: Value = serde::Deserialize::deserialize(doc).ok()?;
            (v["kind"] == "HTTPRoute").then_some(v)
        })
        .map(|mut v| {
            // As the API server stores it: in a namespace.
            if v["metadata"]["namespace"].is_null() {
                v["metadata"]["namespace"] = json!("default");
            }
            v
        })
        .collect()
}

fn source(parents: HttpRouteParents) -> HttpRoutesSource {
    HttpRoutesSource {
        parents,
        controller_name: "weir.example/gateway".into(),
        version: GatewayVersion::V1,
        lease_name: "weir-httproute-status".into(),
        lease_duration: std::time::Duration::from_secs(15),
        namespaces: WatchedNamespaces::All,
        addresses: Vec::new(),
    }
}

/// The Gateway a weir serving `parents` reads: one HTTP listener on port 80 (named as the
/// parentRef's section, if it names one) that takes routes from every namespace and host.
fn gateway_for(parents: &HttpRouteParents) -> Option<GatewayView> {
    let HttpRouteParents::Gateway {
        name,
        namespace,
        section_name,
    } = parents
    else {
        return None;
    };
    let object = json!({
        "metadata": {"name": name, "namespace": namespace.as_deref().unwrap_or("default")},
        "spec": {"gatewayClassName": "weir", "listeners": [{
            "name": section_name.as_deref().unwrap_or("http"), "port": 80, "protocol": "HTTP",
            "allowedRoutes": {"namespaces": {"from": "All"}}}]},
    });
    Some(GatewayView::parse(&object).unwrap())
}

fn config(source: HttpRoutesSource) -> KubeSourceConfig {
    KubeSourceConfig::new(
        "default",
        WeightSource::HttpRoutes(source),
        "",
        TableSpec::default(),
    )
}

/// The parents a route's first parentRef names, as a weir serving it would be configured;
/// None for a parent weir cannot be (a multi-cluster ServiceImport).
fn parents_of(route: &HttpRouteView) -> Option<HttpRouteParents> {
    let p: &ParentRef = route.parent_refs.first()?;
    match (p.group(), p.kind()) {
        ("" | "core", "Service") => Some(HttpRouteParents::Services(vec![p.name.clone()])),
        ("gateway.networking.k8s.io", "Gateway") => Some(HttpRouteParents::Gateway {
            name: p.name.clone(),
            // A parentRef without a namespace names a Gateway in the route's.
            namespace: Some(p.namespace.clone().unwrap_or(route.namespace.clone())),
            section_name: p.section_name.clone(),
        }),
        _ => None,
    }
}

/// One ready endpoint per Service, on its own loopback port.
fn slices(namespace: &str, services: &[&str]) -> BTreeMap<String, SliceView> {
    services
        .iter()
        .enumerate()
        .map(|(i, service)| {
            let slice = SliceView {
                name: format!("{service}-abc"),
                namespace: namespace.into(),
                service: Some(service.to_string()),
                address_type: "IPv4".into(),
                ports: vec![SlicePort {
                    name: Some("http".into()),
                    port: Some(9000 + i as u16),
                    protocol: "TCP".into(),
                    app_protocol: None,
                }],
                endpoints: vec![SliceEndpoint {
                    addresses: vec!["127.0.0.1".into()],
                    ready: true,
                }],
            };
            (format!("{namespace}/{}", slice.name), slice)
        })
        .collect()
}

fn compile(table: &TableSpec) -> RouteTable {
    let metrics = Arc::new(Metrics::new());
    let compiler = Compiler {
        upstreams: Arc::new(Upstreams::new(metrics.clone(), 1)),
        metrics,
        live: Arc::new(LiveStats::new()),
    };
    compiler
        .compile(table)
        .unwrap_or_else(|e| panic!("table refused: {e}\n{table:#?}"))
}

fn condition<'s>(status: &'s RouteStatus, kind: &str) -> (bool, &'s str) {
    let c = status
        .conditions
        .iter()
        .find(|c| c.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} in {status:?}"));
    (c.status, c.reason)
}

/// Every HTTPRoute of the three projects is read; each one weir can carry out becomes one
/// route per rule in a table that compiles, and each one it cannot is not accepted, with the
/// spec's reason, instead of being served differently from what it says.
#[test]
fn every_fixture_httproute_is_read_and_served_or_refused_with_a_reason() {
    let mut files = 0;
    let mut served = 0;
    let mut refused = Vec::new();
    let mut served_files = Vec::new();
    let mut not_ours = 0;
    for dir in ["examples", "argo-plugin"] {
        let mut paths: Vec<_> = std::fs::read_dir(format!("{FIXTURES}/{dir}"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
            .collect();
        paths.sort();
        for path in paths {
            for mut object in http_routes(&path) {
                files += 1;
                if object["spec"]["parentRefs"].is_null() {
                    // Several examples (traffic splitting among them) attach to nothing; here
                    // they are attached to a Gateway, so that their rules are translated too.
                    object["spec"]["parentRefs"] = json!([{"name": "test-gateway"}]);
                }
                let route = HttpRouteView::parse(&object)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let Some(parents) = parents_of(&route) else {
                    // Attached to nothing weir can be: no status, no routes from weir.
                    not_ours += 1;
                    continue;
                };
                let source = source(parents);
                let mut services: Vec<&str> = route
                    .rules
                    .iter()
                    .flat_map(|r| r.backend_refs.iter().map(|b| b.object.name.as_str()))
                    .collect();
                for rule in &route.rules {
                    for f in &rule.filters {
                        if let FilterView::RequestMirror(m) = f {
                            services.push(m.backend_ref.name.as_str());
                        }
                    }
                }
                let obs = Observed {
                    slices: slices(&route.namespace, &services),
                    http_routes: BTreeMap::from([(route.name.clone(), route.clone())]),
                    gateway: gateway_for(&source.parents),
                    ..Observed::default()
                };
                let (table, translated) = translate(&config(source.clone()), &source, &obs);
                let Some(status) = translated.statuses.first() else {
                    panic!(
                        "{}: not attached to {:?}",
                        path.display(),
                        route.parent_refs[0]
                    );
                };
                assert_eq!(status.name, route.name);
                let has_unsupported = route.rules.iter().any(|r| {
                    r.filters
                        .iter()
                        .chain(r.backend_refs.iter().flat_map(|b| &b.filters))
                        .any(|f| matches!(f, FilterView::Unsupported(_)))
                });
                let non_service = route
                    .rules
                    .iter()
                    .flat_map(|r| &r.backend_refs)
                    .any(|b| !b.object.is_service());
                if has_unsupported {
                    assert_eq!(
                        condition(status, "Accepted"),
                        (false, "UnsupportedValue"),
                        "{}",
                        path.display()
                    );
                    assert!(table.routes.is_empty(), "{}", path.display());
                    refused.push(path.file_name().unwrap().to_string_lossy().to_string());
                    continue;
                }
                assert_eq!(
                    condition(status, "Accepted"),
                    (true, "Accepted"),
                    "{}: {status:?}",
                    path.display()
                );
                let elsewhere = route.rules.iter().flat_map(|r| &r.backend_refs).any(|b| {
                    b.object
                        .namespace
                        .as_ref()
                        .is_some_and(|ns| *ns != route.namespace)
                });
                if non_service {
                    assert_eq!(condition(status, "ResolvedRefs"), (false, "InvalidKind"));
                } else if elsewhere {
                    // No ReferenceGrant is observed here: a Service in another namespace is
                    // not resolved, and the route says so.
                    assert_eq!(
                        condition(status, "ResolvedRefs"),
                        (false, "RefNotPermitted")
                    );
                } else {
                    assert_eq!(
                        condition(status, "ResolvedRefs"),
                        (true, "ResolvedRefs"),
                        "{}: {status:?}",
                        path.display()
                    );
                }
                assert_eq!(table.routes.len(), route.rules.len(), "{}", path.display());
                // Each rule's redirect and rewrite reach its route.
                for (rule, spec) in route.rules.iter().zip(&table.routes) {
                    let has = |f: fn(&FilterView) -> bool| rule.filters.iter().any(f);
                    assert_eq!(
                        spec.redirect.is_some(),
                        has(|f| matches!(f, FilterView::RequestRedirect(_))),
                        "{}: {}",
                        path.display(),
                        spec.name
                    );
                    assert_eq!(
                        spec.rewrite.is_some(),
                        has(|f| matches!(f, FilterView::UrlRewrite(_))),
                        "{}: {}",
                        path.display(),
                        spec.name
                    );
                }
                compile(&table);
                served_files.push(path.file_name().unwrap().to_string_lossy().to_string());
                served += 1;
            }
        }
    }
    // 57 example files hold HTTPRoutes besides Gateways, and the plugin's 16 examples one each.
    // 66 HTTPRoutes in the two directories: 1 attached to a ServiceImport, 5 using CORS,
    // 60 served (redirects and rewrites among them).
    assert_eq!(files, 66, "HTTPRoutes read");
    assert_eq!(
        not_ours, 1,
        "only the multi-cluster ServiceImport parent is not weir's"
    );
    assert_eq!(served, 60, "served; refused: {refused:?}");
    assert_eq!(refused.len(), 5, "{refused:?}");
    // CORS is not weir's: those examples are refused, each of them; redirects and rewrites are
    // served.
    assert!(
        refused.iter().all(|r| r.contains("-cors_")),
        "only CORS is refused: {refused:?}"
    );
    for expected in ["standard_http-redirect.yaml", "standard_http-rewrite.yaml"] {
        assert!(
            served_files.iter().any(|r| r == expected),
            "{expected}: {served_files:?}"
        );
    }
}

fn argo_route(weights: (u32, u32)) -> Value {
    let path = format!("{FIXTURES}/argo-plugin/cilium_httproute.yml");
    let mut route = http_routes(Path::new(&path)).remove(0);
    // The plugin's setWeight: canary W, stable 100 - W, the rest of the object unchanged.
    route["metadata"]["namespace"] = json!("default");
    route["spec"]["rules"][0]["backendRefs"][0]["weight"] = json!(weights.0);
    route["spec"]["rules"][0]["backendRefs"][1]["weight"] = json!(weights.1);
    route
}

fn observed(routes: &[Value], services: &[&str]) -> Observed {
    Observed {
        slices: slices("default", services),
        gateway: gateway_for(&HttpRouteParents::Gateway {
            name: "cilium".into(),
            namespace: None,
            section_name: None,
        }),
        http_routes: routes
            .iter()
            .map(|r| {
                let view = HttpRouteView::parse(r).unwrap_or_else(|e| panic!("{e}"));
                (view.name.clone(), view)
            })
            .collect(),
        ..Observed::default()
    }
}

const ARGO_SERVICES: [&str; 2] = [
    "argo-rollouts-stable-service",
    "argo-rollouts-canary-service",
];

/// The Argo plugin's setWeight and setHeaderRoute on its own example route: the weights are
/// the split, the Services the Rollout names are labelled stable and canary, and the injected
/// header rule beats the weighted `/` rule.
#[test]
fn argo_plugin_set_weight_and_set_header_route() {
    let gateway = HttpRouteParents::Gateway {
        name: "cilium".into(),
        namespace: None,
        section_name: None,
    };
    let src = source(gateway);
    let mut cfg = config(src.clone());
    cfg.stable_service = Some(ARGO_SERVICES[0].into());
    cfg.canary_service = Some(ARGO_SERVICES[1].into());

    let route = argo_route((70, 30));
    let (table, t) = translate(
        &cfg,
        &src,
        &observed(std::slice::from_ref(&route), &ARGO_SERVICES),
    );
    assert_eq!(t.statuses.len(), 1);
    let compiled = compile(&table);
    let r = &compiled.routes()[0];
    assert_eq!(&*r.name, "default/argo-rollouts-http-route/0");
    assert_eq!(r.shares_bp(), [7000, 3000]);
    assert_eq!(r.canary_weight_bp(), 3000);
    assert_eq!(&*r.backend(0).name, "stable");

    // setHeaderRoute: a named rule, the step's header added to the source rule's matches, the
    // canary ref alone, appended at the end of the rules.
    let mut with_header = route;
    let rules = with_header["spec"]["rules"].as_array_mut().unwrap();
    rules.push(json!({
        "name": "canary-header",
        "matches": [{"path": {"type": "PathPrefix", "value": "/"},
                     "headers": [{"type": "Exact", "name": "X-Canary", "value": "yes"}]}],
        "backendRefs": [{"group": "", "kind": "Service", "name": ARGO_SERVICES[1], "port": 80}],
    }));
    let (table, _) = translate(&cfg, &src, &observed(&[with_header], &ARGO_SERVICES));
    let compiled = compile(&table);
    let mut tester = http::HeaderMap::new();
    tester.insert("x-canary", "yes".parse().unwrap());
    let host = Some(&b"demo.example.com"[..]);
    let found = compiled
        .find(host, false, b"GET", b"/shop", &tester)
        .unwrap();
    assert_eq!(
        &*found.name,
        "default/argo-rollouts-http-route/canary-header"
    );
    assert_eq!(found.shares_bp(), [10_000]);
    let plain = compiled
        .find(host, false, b"GET", b"/shop", &http::HeaderMap::new())
        .unwrap();
    assert_eq!(&*plain.name, "default/argo-rollouts-http-route/0");
    // Another host: the route's hostnames hold.
    assert!(compiled
        .find(Some(b"other.example.com"), false, b"GET", b"/", &tester)
        .is_none());
}

/// A route attached elsewhere (another Gateway, another section, another Service) is not
/// ours and gets no status from weir.
#[test]
fn only_routes_attached_to_what_weir_serves_are_taken() {
    let src = source(HttpRouteParents::Gateway {
        name: "other".into(),
        namespace: None,
        section_name: None,
    });
    let (table, t) = translate(
        &config(src.clone()),
        &src,
        &observed(&[argo_route((50, 50))], &ARGO_SERVICES),
    );
    assert!(table.routes.is_empty());
    assert!(t.statuses.is_empty());

    let mesh = source(HttpRouteParents::Services(vec![
        "argo-rollouts-service".into()
    ]));
    let path = format!("{FIXTURES}/argo-plugin/cilium-header-based_httproute.yaml");
    let gamma = http_routes(Path::new(&path));
    let (table, t) = translate(
        &config(mesh.clone()),
        &mesh,
        &observed(&gamma, &ARGO_SERVICES),
    );
    assert_eq!(table.routes.len(), 1, "{t:?}");
    assert_eq!(t.statuses[0].parent.kind(), "Service");
}

/// A backendRef whose Service has no EndpointSlice is reported (ResolvedRefs False,
/// BackendNotFound); the route still serves, its share going to the refs that resolved.
#[test]
fn an_unresolved_backend_is_reported_and_its_share_goes_to_the_others() {
    let src = source(HttpRouteParents::Gateway {
        name: "cilium".into(),
        namespace: None,
        section_name: None,
    });
    let (table, t) = translate(
        &config(src.clone()),
        &src,
        &observed(&[argo_route((80, 20))], &ARGO_SERVICES[..1]),
    );
    assert_eq!(
        condition(&t.statuses[0], "ResolvedRefs"),
        (false, "BackendNotFound")
    );
    assert_eq!(condition(&t.statuses[0], "Accepted"), (true, "Accepted"));
    let compiled = compile(&table);
    assert_eq!(compiled.routes()[0].shares_bp(), [10_000]);
}

/// GAMMA, a weir serving the Service `shop`: a request for it goes to its own endpoints while
/// no route attaches, and gets 404 when no rule of the routes attached matches; a consumer route (in another namespace, its parentRef naming `shop` in the
/// Services' namespace) attaches; a route naming a Service weir does not serve does not.
#[test]
fn a_mesh_weir_falls_through_to_the_service_and_takes_consumer_routes() {
    let mesh = source(HttpRouteParents::Services(vec!["shop".into()]));
    let cfg = config(mesh.clone());
    let producer = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "shop-v2", "namespace": "default"},
        "spec": {"parentRefs": [{"group": "", "kind": "Service", "name": "shop", "port": 80}],
                 "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/v2"}}],
                            "backendRefs": [{"name": "shop-v2", "port": 80}]}]},
    });
    let consumer = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "beta-testers", "namespace": "client"},
        "spec": {"parentRefs": [{"group": "", "kind": "Service", "name": "shop", "namespace": "default"}],
                 "rules": [{"matches": [{"headers": [{"name": "x-beta", "value": "1"}]}],
                            "backendRefs": [{"name": "shop-v2", "namespace": "default", "port": 80}]}]},
    });
    let elsewhere = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "cart", "namespace": "default"},
        "spec": {"parentRefs": [{"group": "", "kind": "Service", "name": "cart"}],
                 "rules": [{"backendRefs": [{"name": "shop-v2", "port": 80}]}]},
    });
    let mut obs = observed(&[producer, consumer, elsewhere], &["shop", "shop-v2"]);
    obs.gateway = None;
    let grant = json!({"metadata": {"name": "g", "namespace": "default"},
        "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "client"}],
                 "to": [{"group": "", "kind": "Service"}]}});
    obs.grants.insert(
        "default/g".into(),
        weir_control::source::kube::gateway_view::GrantView::parse(&grant).unwrap(),
    );
    let (table, t) = translate(&cfg, &mesh, &obs);
    let mut names: Vec<&str> = t.statuses.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["beta-testers", "shop-v2"], "{t:?}");
    for s in &t.statuses {
        assert_eq!(condition(s, "Accepted"), (true, "Accepted"), "{s:?}");
        assert_eq!(
            condition(s, "ResolvedRefs"),
            (true, "ResolvedRefs"),
            "{s:?}"
        );
    }
    let compiled = compile(&table);
    let find = |path: &[u8], headers: &http::HeaderMap| {
        compiled
            .find(
                Some(b"shop.default.svc.cluster.local"),
                false,
                b"GET",
                path,
                headers,
            )
            .map(|r| (r.name.to_string(), r.backend(0).name.to_string()))
    };
    let none = http::HeaderMap::new();
    let mut beta = http::HeaderMap::new();
    beta.insert("x-beta", "1".parse().unwrap());
    assert_eq!(
        find(b"/v2/items", &none),
        Some(("default/shop-v2/0".into(), "shop-v2".into()))
    );
    assert_eq!(
        find(b"/cart", &beta),
        Some(("client/beta-testers/0".into(), "shop-v2".into()))
    );
    // No rule matches: routes attach to the Service, so theirs is all its routing (404).
    assert_eq!(find(b"/cart", &none), None);
    // No route attached: the Service's own endpoints, as if weir were not there.
    let mut bare = obs.clone();
    bare.http_routes.clear();
    let (table, _) = translate(&cfg, &mesh, &bare);
    let compiled = compile(&table);
    let found = compiled
        .find(Some(b"shop"), false, b"GET", b"/cart", &none)
        .map(|r| (r.name.to_string(), r.backend(0).name.to_string()));
    assert_eq!(found, Some(("service/default/shop".into(), "shop".into())));
}

fn translated(route: Value) -> (TableSpec, RouteStatus) {
    let route = HttpRouteView::parse(&route).unwrap_or_else(|e| panic!("{e}"));
    let parents = HttpRouteParents::Gateway {
        name: "gw".into(),
        namespace: None,
        section_name: None,
    };
    let source = source(parents);
    let obs = Observed {
        slices: slices("default", &["infra-backend-v1"]),
        http_routes: BTreeMap::from([(route.name.clone(), route.clone())]),
        gateway: gateway_for(&source.parents),
        ..Observed::default()
    };
    let (table, translated) = translate(&config(source.clone()), &source, &obs);
    let status = translated.statuses.into_iter().next().expect("a status");
    (table, status)
}

/// RequestRedirect and URLRewrite as the conformance manifests write them become the routes'
/// redirect and rewrite; a redirect beside backendRefs wins; a value outside the spec makes the
/// route not Accepted with UnsupportedValue.
#[test]
fn redirects_and_rewrites_are_translated_and_bad_values_refused() {
    use weir_proxy::table::spec::{PathModifier, RedirectSpec, RewriteSpec};
    let route = json!({
        "metadata": {"name": "filters", "namespace": "default"},
        "spec": {
            "parentRefs": [{"name": "gw"}],
            "rules": [
                {"matches": [{"path": {"type": "PathPrefix", "value": "/original-prefix"}}],
                 "filters": [{"type": "RequestRedirect", "requestRedirect": {
                     "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/replacement-prefix"},
                     "statusCode": 301, "scheme": "https", "hostname": "example.org", "port": 8443}}]},
                {"matches": [{"path": {"type": "PathPrefix", "value": "/both"}}],
                 "filters": [{"type": "RequestRedirect", "requestRedirect": {}}],
                 "backendRefs": [{"name": "infra-backend-v1", "port": 8080}]},
                {"matches": [{"path": {"type": "PathPrefix", "value": "/prefix/one"}}],
                 "filters": [{"type": "URLRewrite", "urlRewrite": {
                     "hostname": "one.example.org",
                     "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/one"}}}],
                 "backendRefs": [{"name": "infra-backend-v1", "port": 8080}]}
            ]
        }
    });
    let (table, status) = translated(route);
    assert_eq!(
        condition(&status, "Accepted"),
        (true, "Accepted"),
        "{status:?}"
    );
    assert_eq!(
        table.routes[0].redirect,
        Some(RedirectSpec {
            scheme: Some("https".into()),
            hostname: Some("example.org".into()),
            port: Some(8443),
            path: Some(PathModifier::ReplacePrefixMatch(
                "/replacement-prefix".into()
            )),
            status: 301,
            // The port of the Gateway listener the route attached to (`gateway_for`'s 80).
            listener_port: Some(80),
        })
    );
    assert_eq!(
        table.routes[1].redirect,
        Some(RedirectSpec {
            listener_port: Some(80),
            ..RedirectSpec::found()
        })
    );
    assert_eq!(
        table.routes[2].rewrite,
        Some(RewriteSpec {
            hostname: Some("one.example.org".into()),
            path: Some(PathModifier::ReplacePrefixMatch("/one".into())),
        })
    );
    let compiled = compile(&table);
    assert!(!compiled.routes()[0].h1_passthrough);

    for (filter, words) in [
        (
            json!({"type": "RequestRedirect", "requestRedirect": {"statusCode": 305}}),
            "statusCode 305",
        ),
        (
            json!({"type": "URLRewrite", "urlRewrite": {
                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/x"}}}),
            "every match of the route to be a path prefix",
        ),
    ] {
        let route = json!({
            "metadata": {"name": "bad", "namespace": "default"},
            "spec": {
                "parentRefs": [{"name": "gw"}],
                "rules": [{"matches": [{"path": {"type": "Exact", "value": "/exact"}}],
                           "filters": [filter],
                           "backendRefs": [{"name": "infra-backend-v1", "port": 8080}]}]
            }
        });
        let (table, status) = translated(route);
        assert_eq!(
            condition(&status, "Accepted"),
            (false, "UnsupportedValue"),
            "{status:?}"
        );
        let message = &status
            .conditions
            .iter()
            .find(|c| c.kind == "Accepted")
            .expect("Accepted")
            .message;
        assert!(message.contains(words), "{words} in {message}");
        assert!(table.routes.is_empty());
    }
}

/// GAMMA with a Service of several ports (MeshPorts): a parentRef's `port` or `sectionName`
/// makes the route serve that Service port only; the request's port is its Host's, a Host
/// without one port 80, and a port the Service does not have goes to the default port (`http`)
/// as a sidecar's clients may address weir's own port. A Service port no route covers goes to
/// its own endpoints; a parentRef naming a port the Service lacks is `NoMatchingParent`; a
/// request addressed to a pod of the Service goes to that pod.
#[test]
fn a_mesh_route_for_one_service_port_leaves_the_others_to_the_service() {
    let mesh = source(HttpRouteParents::Services(vec!["shop".into()]));
    let cfg = config(mesh.clone());
    let route = |name: &str, parent: Value, prefix: &str| {
        json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"parentRefs": [parent],
                     "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": prefix}}],
                                "backendRefs": [{"name": "shop-v2", "port": 80}]}]},
        })
    };
    let http = route(
        "shop-http",
        json!({"group": "", "kind": "Service", "name": "shop", "port": 80}),
        "/v2",
    );
    let admin = route(
        "shop-admin",
        json!({"group": "", "kind": "Service", "name": "shop", "sectionName": "admin"}),
        "/debug",
    );
    let missing = route(
        "shop-missing",
        json!({"group": "", "kind": "Service", "name": "shop", "port": 9999}),
        "/",
    );
    let named_wrong = route(
        "shop-wrong-name",
        json!({"group": "", "kind": "Service", "name": "shop", "port": 80, "sectionName": "admin"}),
        "/",
    );
    let mut obs = observed(
        &[http.clone(), admin, missing, named_wrong],
        &["shop", "shop-v2"],
    );
    obs.gateway = None;
    let service: k8s_openapi::api::core::v1::Service = serde_json::from_value(json!({
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": {"ports": [
            {"name": "http", "port": 80, "targetPort": 9000},
            {"name": "admin", "port": 9901, "targetPort": "admin"},
            {"name": "dns", "port": 53, "protocol": "UDP"}]},
    }))
    .unwrap();
    obs.services.insert(
        "default/shop".into(),
        weir_control::source::kube::service::ServiceView::from_service(&service).unwrap(),
    );
    // The pods' admin port, as the slice controller resolves the named targetPort.
    let shop_slice = obs.slices.get_mut("default/shop-abc").unwrap();
    shop_slice.ports.push(SlicePort {
        name: Some("admin".into()),
        port: Some(9901),
        protocol: "TCP".into(),
        app_protocol: None,
    });

    let (table, t) = translate(&cfg, &mesh, &obs);
    let accepted = |name: &str| {
        let s = t.statuses.iter().find(|s| s.name == name).unwrap();
        condition(s, "Accepted")
    };
    assert_eq!(accepted("shop-http"), (true, "Accepted"));
    assert_eq!(accepted("shop-admin"), (true, "Accepted"));
    assert_eq!(accepted("shop-missing"), (false, "NoMatchingParent"));
    assert_eq!(accepted("shop-wrong-name"), (false, "NoMatchingParent"));
    let message = |name: &str| {
        let s = t.statuses.iter().find(|s| s.name == name).unwrap();
        let accepted = s.conditions.iter().find(|c| c.kind == "Accepted").unwrap();
        accepted.message.clone()
    };
    assert_eq!(
        message("shop-missing"),
        "Service shop has no TCP port 9999 (it has 80 (http), 9901 (admin), 53 (dns))"
    );
    assert_eq!(
        message("shop-wrong-name"),
        "Service shop has no TCP port 80 named admin (it has 80 (http), 9901 (admin), 53 (dns))"
    );

    let compiled = compile(&table);
    let find = |compiled: &RouteTable, host: &str, path: &str| {
        compiled
            .find(
                Some(host.as_bytes()),
                false,
                b"GET",
                path.as_bytes(),
                &http::HeaderMap::new(),
            )
            .map(|r| {
                let b = &r.spec.backends[0];
                (r.name.to_string(), b.spec.addresses.join(","))
            })
    };
    let v2 = Some((
        "default/shop-http/0".to_string(),
        "127.0.0.1:9001".to_string(),
    ));
    for host in ["shop", "shop:80", "shop.default.svc:80", "shop:15001"] {
        assert_eq!(find(&compiled, host, "/v2/items"), v2, "{host}");
    }
    // Port 80 is the route's: what its rules do not match is 404, not the Service's.
    assert_eq!(find(&compiled, "shop", "/cart"), None);
    // The admin port is the other route's only.
    assert_eq!(
        find(&compiled, "shop:9901", "/debug/vars"),
        Some(("default/shop-admin/0".into(), "127.0.0.1:9001".into()))
    );
    assert_eq!(find(&compiled, "shop:9901", "/v2/items"), None);
    assert_eq!(find(&compiled, "shop", "/debug/vars"), None);
    // Addressed to one of the Service's pods (its IP and a port of its slices), not to the
    // Service: passed to that pod untouched by the routes (MeshFrontend).
    for (host, pod) in [
        ("127.0.0.1:9000", "127.0.0.1:9000"),
        ("127.0.0.1:9901", "127.0.0.1:9901"),
    ] {
        assert_eq!(
            find(&compiled, host, "/v2/items"),
            Some((format!("pod/default/{pod}"), pod.to_string())),
            "{host}"
        );
    }

    // With the port-80 route alone, the admin port is the Service's own, on its target port;
    // the UDP port is no HTTP route's.
    let mut alone = obs.clone();
    alone.http_routes.retain(|name, _| name == "shop-http");
    let (table, _) = translate(&cfg, &mesh, &alone);
    let compiled = compile(&table);
    assert_eq!(
        find(&compiled, "shop:9901", "/anything"),
        Some(("service/default/shop:9901".into(), "127.0.0.1:9901".into()))
    );
    assert_eq!(find(&compiled, "shop:53", "/anything"), None);
    assert_eq!(find(&compiled, "shop", "/v2"), v2);
    // No route at all: every port to the Service, the default port by its old name.
    alone.http_routes.clear();
    let (table, _) = translate(&cfg, &mesh, &alone);
    let compiled = compile(&table);
    assert_eq!(
        find(&compiled, "shop:15001", "/cart"),
        Some(("service/default/shop".into(), "127.0.0.1:9000".into()))
    );
    assert_eq!(
        find(&compiled, "shop:9901", "/cart"),
        Some(("service/default/shop:9901".into(), "127.0.0.1:9901".into()))
    );
}

/// An edge weir whose Gateway has listeners on several ports: a route is served on the ports of
/// the listeners that took it, for the hosts each took it for; where those differ by port, one
/// route per port group, named after its ports.
#[test]
fn a_route_on_listeners_of_two_ports_is_served_per_port() {
    let edge = source(HttpRouteParents::Gateway {
        name: "gw".into(),
        namespace: None,
        section_name: None,
    });
    let cfg = config(edge.clone());
    let route = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"parentRefs": [{"name": "gw"}],
                 "rules": [{"backendRefs": [{"name": "shop", "port": 80}]}]},
    });
    let mut obs = observed(&[route], &["shop"]);
    obs.gateway = Some(
        GatewayView::parse(&json!({
            "metadata": {"name": "gw", "namespace": "default"},
            "spec": {"gatewayClassName": "weir", "listeners": [
                {"name": "foo", "port": 80, "protocol": "HTTP", "hostname": "foo.com"},
                {"name": "bar", "port": 8080, "protocol": "HTTP", "hostname": "bar.com"}]},
        }))
        .unwrap(),
    );
    let (table, t) = translate(&cfg, &edge, &obs);
    assert_eq!(condition(&t.statuses[0], "Accepted"), (true, "Accepted"));
    let names: Vec<&str> = table.routes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["default/web/0@80", "default/web/0@8080"]);
    let compiled = compile(&table);
    let find = |host: &str| {
        compiled
            .find(
                Some(host.as_bytes()),
                false,
                b"GET",
                b"/",
                &http::HeaderMap::new(),
            )
            .map(|r| r.name.to_string())
    };
    assert_eq!(find("foo.com").as_deref(), Some("default/web/0@80"));
    assert_eq!(find("bar.com:8080").as_deref(), Some("default/web/0@8080"));
    assert_eq!(find("bar.com"), None);
    assert_eq!(find("foo.com:8080"), None);
}
