//! One conformance test's world: the fake API server holding the suite's base manifests, the
//! test's own manifests and the objects a cluster's controllers add (pods, EndpointSlices), the
//! pods as loopback echo servers, and the weirs under test — one per Gateway, started with the
//! kube source's config for an edge weir, or (`crate::mesh`) sidecars serving Services. The checks the Go tests call are in `status` (route
//! and Gateway status) and `roundtrip` (requests); the ones that combine both are here.

pub mod cluster;
pub mod distribution;
pub mod echo;
pub mod roundtrip;
pub mod status;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::common;
use crate::common::weir::Weir;
use crate::fake_kube::{FakeApiServer, FakeCluster};
use cluster::Pod;
use roundtrip::{Expected, GwAddr};
use status::{Cond, Parent};

/// The suite's namespaces and backends (`confsuite.*`).
pub const INFRA_NS: &str = "gateway-conformance-infra";
pub const WEB_BACKEND_NS: &str = "gateway-conformance-web-backend";
pub const INFRA_V1: &str = "infra-backend-v1";
pub const INFRA_V2: &str = "infra-backend-v2";
pub const INFRA_V3: &str = "infra-backend-v3";

pub struct Suite {
    pub cluster: FakeCluster,
    pub pods: Vec<Pod>,
    /// By label: the Gateway an edge weir serves, or what a mesh test calls its weir.
    weirs: BTreeMap<String, Weir>,
    /// The Gateways served (none in the mesh profile).
    gateways: Vec<String>,
    _server: FakeApiServer,
}

/// A weir to start: its label, the namespace its kubeconfig defaults to, its config file.
pub struct WeirSpec {
    pub label: String,
    pub namespace: String,
    pub config: String,
    /// An edge weir, whose label is the name of the Gateway it serves.
    pub gateway: bool,
}

/// The config of an edge weir serving the Gateway `name` of the infra namespace; the address
/// it reports in the Gateway's status is its own, as an operator configures it.
fn weir_config(gateway: &str) -> String {
    weir_config_on(gateway, "{address: \"127.0.0.1:0\"}")
}

/// The same, listening as `listener` says (a listener taking the Gateway's certificates:
/// `{address: ..., tls: {from_gateway: true}}`).
pub fn weir_config_on(gateway: &str, listener: &str) -> String {
    format!(
        "listeners: [{listener}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         kube:\n  namespace: {INFRA_NS}\n  http_routes:\n    controller_name: {}\n    \
         gateway: {{name: {gateway}, addresses: [\"127.0.0.1\"]}}\n",
        cluster::CONTROLLER
    )
}

/// Starts pods on the first free block of loopback addresses from a per-process base, so that
/// tests (numbered `id`, distinct within this target) and other runs of this target can run at
/// the same time.
async fn start_pods(objects: &[Value], id: u8) -> Vec<Pod> {
    let base = 16 + (std::process::id() % 200) as u8;
    for attempt in 0..20u8 {
        let block = [base.wrapping_add(attempt * 7) % 230 + 16, id];
        match cluster::start_pods(objects, block).await {
            Ok(pods) => return pods,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(e) => panic!("starting the pods: {e}"),
        }
    }
    panic!("no free block of loopback addresses for test {id}");
}

impl Suite {
    /// The base manifests and the GatewayClass applied, pods and their EndpointSlices running,
    /// a weir started for each of `gateways`, then the test's `manifest` applied, as the suite
    /// applies a test's manifests to a cluster whose implementation is already running.
    pub async fn start(id: u8, manifest: &str, gateways: &[&str]) -> Arc<Suite> {
        let weirs: Vec<WeirSpec> = gateways
            .iter()
            .map(|g| WeirSpec {
                label: g.to_string(),
                namespace: INFRA_NS.to_string(),
                config: weir_config(g),
                gateway: true,
            })
            .collect();
        let base = cluster::manifests("base_manifests.yaml");
        Suite::start_world(id, &base, &cluster::manifests(manifest), &weirs).await
    }

    /// The world of any profile: `base` and the GatewayClass applied, the pods of `base` and
    /// `own` running with their EndpointSlices, the `weirs` started, then `own` applied.
    pub async fn start_world(
        id: u8,
        base: &[Value],
        own: &[Value],
        weirs: &[WeirSpec],
    ) -> Arc<Suite> {
        let all: Vec<Value> = base.iter().chain(own).cloned().collect();
        let pods = start_pods(&all, id).await;
        let cluster = FakeCluster::new();
        cluster.apply(cluster::gateway_class());
        for object in base {
            cluster.apply(object.clone());
        }
        for pod in &pods {
            cluster.apply(pod.object());
        }
        for slice in cluster::endpoint_slices(&all, &pods) {
            cluster.apply(slice);
        }
        let server = FakeApiServer::start(cluster.clone()).await;
        let mut started = BTreeMap::new();
        for spec in weirs {
            let dir = common::temp_dir("conformance");
            let kubeconfig = common::kubeconfig(&dir, &server.url(), &spec.namespace);
            std::fs::write(dir.join("weir.yaml"), &spec.config).unwrap();
            let weir = Weir::start_env(
                dir.clone(),
                dir.join("weir.yaml"),
                &[],
                &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
            );
            started.insert(spec.label.clone(), weir);
        }
        for object in own {
            cluster.apply(object.clone());
        }
        Arc::new(Suite {
            cluster,
            pods,
            weirs: started,
            gateways: weirs
                .iter()
                .filter(|w| w.gateway)
                .map(|w| w.label.clone())
                .collect(),
            _server: server,
        })
    }

    /// The weir labelled `label` (an edge weir's label is its Gateway's name).
    pub fn weir(&self, label: &str) -> &Weir {
        &self.weirs[label]
    }

    /// Every weir's log, for a failure's message.
    pub fn logs(&self) -> String {
        self.weirs
            .iter()
            .map(|(g, w)| format!("--- weir {g}:\n{}", w.log()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn pods_of<'a>(&'a self, deployment: &'a str) -> impl Iterator<Item = &'a Pod> + 'a {
        self.pods.iter().filter(move |p| p.deployment == deployment)
    }

    /// `GatewayAndHTTPRoutesMustBeAccepted` for the infra Gateway `gateway`: its address, each
    /// route Accepted by it (one parent per listed section, all of them when none), every
    /// listener ResolvedRefs, Accepted and Programmed. Returns where requests go.
    pub async fn gateway_and_routes_must_be_accepted(
        &self,
        gateway: &str,
        sections: &[&str],
        routes: &[(&str, &str)],
    ) -> GwAddr {
        let gw = (INFRA_NS, gateway);
        let address = status::gateway_address(&self.cluster, gw).await;
        for route in routes {
            let parents: Vec<Parent> = (0..sections.len().max(1))
                .map(|_| Parent {
                    gateway: (INFRA_NS.into(), gateway.into()),
                    conditions: vec![status::ACCEPTED],
                })
                .collect();
            status::route_must_have_parents(&self.cluster, *route, &parents, route.0 != INFRA_NS)
                .await;
        }
        let listeners: [Cond; 3] = [
            ("ResolvedRefs", "True", ""),
            ("Accepted", "True", ""),
            ("Programmed", "True", ""),
        ];
        status::gateway_listeners_must_have(&self.cluster, gw, &listeners).await;
        GwAddr {
            url_host: address,
            socket: self.weir(gateway).addr,
        }
    }

    /// The common opening of the tests on the `same-namespace` Gateway: the suite started with
    /// `manifest`, `GatewayAndHTTPRoutesMustBeAccepted` for `route` (in the infra namespace),
    /// then, where the Go test calls it, `HTTPRouteMustHaveResolvedRefsConditionsTrue`.
    pub async fn same_namespace(
        id: u8,
        manifest: &str,
        route: &str,
        resolved_refs: bool,
    ) -> (Arc<Suite>, GwAddr) {
        let suite = Suite::start(id, manifest, &["same-namespace"]).await;
        let gw = suite
            .gateway_and_routes_must_be_accepted("same-namespace", &[], &[(INFRA_NS, route)])
            .await;
        if resolved_refs {
            status::route_must_have_resolved_refs(
                &suite.cluster,
                (INFRA_NS, route),
                (INFRA_NS, "same-namespace"),
            )
            .await;
        }
        (suite, gw)
    }

    /// `NamespacesMustBeReady` for the infra namespace, as far as this harness runs it: the
    /// Gateways it serves Accepted and Programmed at their generation (the base manifests'
    /// other Gateways have no weir here), its pods ready (they are, once started).
    pub async fn namespaces_must_be_ready(&self) {
        for gateway in &self.gateways {
            status::wait_object(
                &self.cluster,
                "Gateway",
                (INFRA_NS, gateway),
                "namespace ready: Gateway Accepted and Programmed",
                std::time::Duration::from_millis(100),
                |gw| {
                    status::latest(gw, &gw["status"]["conditions"])?;
                    for c in [("Accepted", "True", ""), ("Programmed", "True", "")] {
                        if !status::has_condition(&gw["status"]["conditions"], c) {
                            return Err(format!("no {c:?}"));
                        }
                    }
                    Ok(())
                },
            )
            .await;
        }
    }

    /// Each case `MakeRequestAndExpectEventuallyConsistentResponse`, all at once (the Go
    /// tests' cases are parallel subtests); a case with `MirroredTo` and no percentage also
    /// waits for its mirror (`ExpectMirroredRequest`). Fails with every failing case.
    pub async fn expect_all(self: &Arc<Self>, gw: &GwAddr, cases: Vec<Expected>) {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, case) in cases.into_iter().enumerate() {
            let (suite, gw) = (self.clone(), gw.clone());
            tasks.spawn(async move {
                let case = if case.mirrored_to.is_empty() {
                    case
                } else {
                    case.with_request_id(&format!("{i}-{}", std::process::id()))
                };
                roundtrip::eventually(&gw, &case, roundtrip::CONSECUTIVE_SUCCESSES).await;
                distribution::expect_mirrored(&suite, &case).await;
            });
        }
        let mut failures = Vec::new();
        while let Some(done) = tasks.join_next().await {
            if let Err(e) = done {
                let panic = e.into_panic();
                failures.push(
                    panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default(),
                );
            }
        }
        assert!(
            failures.is_empty(),
            "{} case(s) failed:\n{}\n{}",
            failures.len(),
            failures.join("\n"),
            self.logs()
        );
    }
}
