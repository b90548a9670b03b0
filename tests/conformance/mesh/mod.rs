//! The Gateway API mesh profile (GAMMA, GEP-1426) for HTTPRoute, run against the weir binary
//! configured as a sidecar serving Services (`kube.http_routes.services`), over the same
//! harness as the edge profile: the fake API server, loopback echo pods, EndpointSlices as the
//! slice controller writes them, requests and status judged as the suite judges them.
//!
//! **Modelled, not copied.** The upstream mesh tests (`conformance/tests/mesh/` of
//! kubernetes-sigs/gateway-api) and their base manifests (`conformance/mesh/manifests.yaml`)
//! are not among this repository's fixtures. `manifests/` models them: the base manifests on
//! the upstream file (namespaces `gateway-conformance-mesh` and `-consumer`, Services `echo`,
//! `echo-v1`, `echo-v2` with ports `http` 80, `http-alt` 8080, `https` 443, `tcp` 9090, `grpc`
//! 7070, the echo-advanced Deployments; targets of 80 and 443 moved to 8080 and 8443 so the
//! pods bind no privileged port); each test's route on the upstream test's manifest, or, where
//! the upstream mesh test is its Gateway test over the mesh's backends (matching, query and
//! method matching, header modifiers), on the Gateway fixture with the Service `echo` port 80
//! as parentRef and `echo-v1`/`echo-v2` as backends (the upstream mesh query and method tests
//! have two backends: the Gateway manifests' rules for a third are left out). The cases are
//! the upstream tests' own, as read from them; where the upstream test has none for what the
//! brief asks (a weir serving two Services, a route for a Service weir does not serve), the
//! test is weir's own and says so.
//!
//! **The client.** Upstream, requests are made from an echo pod (the mesh's client) to the
//! Service's name; the mesh intercepts them. Here the request goes to weir's listener with the
//! Host a client would send (`echo`, `echo-v1.gateway-conformance-mesh`, …), as a sidecar in
//! front of the Service receives it, and the answer is judged with the Gateway suite's
//! `CompareRoundTrip` (the mesh client reads echo-advanced's text answer into the same fields:
//! status, headers, pod name, namespace).
//!
//! **Readiness.** weir answers 404 until its table is loaded, and writes a route's status only
//! once the table carrying it is in force: every test with a route waits for its status before
//! its requests, so that an expected 404 is weir's answer, not its start.
//!
//! **The Service port.** The Services have two HTTP ports (80 and 8080). weir reads the port a
//! request was addressed to from its Host (`echo-v1:8080`; none is 80), as MeshPorts' cases
//! send it; the weir under test is configured with `kube.ports: {SERVICE: http}`, the Service's
//! default port (also the one for ports the Service does not have).
//!
//! | upstream test | here |
//! |---|---|
//! | MeshBasic | `basic` |
//! | MeshHTTPRouteSimpleSameNamespace | `simple_same_namespace` (with the status weir writes) |
//! | MeshHTTPRouteMatching | `matching` |
//! | MeshHTTPRouteQueryParamMatching | `query_param_matching` (and its 404 cases: `..._unmatched`) |
//! | MeshHTTPRouteMethodMatching (modelled on the Gateway test) | `method_matching` (and `..._unmatched`) |
//! | MeshHTTPRouteWeight | `weight` |
//! | MeshHTTPRouteRequestHeaderModifier | `request_header_modifier` |
//! | (ResponseHeaderModification over a Service: MeshFrontend's filter, the Gateway test's cases) | `response_header_modifier` |
//! | MeshFrontend | `frontend` (its pod-IP case apart: `frontend_pod_ip`) |
//! | MeshPorts | `ports` |
//! | MeshConsumerRoute | `consumer_route` (with a ReferenceGrant added, and the upstream manifest as is; ignored apart: the producer client's case) |
//! | weir's own: two Services told apart by Host | `services_by_host` |
//! | weir's own: no status for a Service not served | `status_other_service` |
//! | MeshFrontendHostname, MeshTrafficSplit, redirects, rewrites, named rules, GRPCRoute | not transcribed |

mod basic;
mod consumer_route;
mod frontend;
mod matching;
mod method_matching;
mod ports;
mod query_param_matching;
mod request_header_modifier;
mod response_header_modifier;
mod services_by_host;
mod simple_same_namespace;
pub mod status;
mod status_other_service;
mod weight;

use std::sync::Arc;

use crate::harness::cluster::{self, CONTROLLER};
use crate::harness::roundtrip::GwAddr;
use crate::harness::{Suite, WeirSpec};

pub const MESH_NS: &str = "gateway-conformance-mesh";
pub const CONSUMER_NS: &str = "gateway-conformance-mesh-consumer";
pub const ECHO: &str = "echo";
pub const ECHO_V1: &str = "echo-v1";
pub const ECHO_V2: &str = "echo-v2";

const MANIFESTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/conformance/mesh/manifests"
);
/// The label of the one weir a mesh test runs.
const SIDECAR: &str = "mesh-sidecar";

/// What the sidecar under test serves, and where it watches routes.
pub struct Sidecar<'a> {
    pub services: &'a [&'a str],
    pub namespaces: &'a [&'a str],
}

/// The producer namespace's weir for `services`, watching that namespace only.
pub fn serving<'a>(services: &'a [&'a str]) -> Sidecar<'a> {
    Sidecar {
        services,
        namespaces: &[MESH_NS],
    }
}

/// A sidecar's config: the Services (each on its `http` port, see the module docs) and the
/// namespaces its routes may come from.
fn weir_config(sidecar: &Sidecar) -> String {
    let ports: Vec<String> = sidecar
        .services
        .iter()
        .map(|s| format!("{s}: http"))
        .collect();
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
         admin: {{address: \"127.0.0.1:0\"}}\n\
         kube:\n  namespace: {MESH_NS}\n  ports: {{{}}}\n  http_routes:\n    \
         controller_name: {CONTROLLER}\n    services: [{}]\n    namespaces: [{}]\n",
        ports.join(", "),
        sidecar.services.join(", "),
        sidecar.namespaces.join(", "),
    )
}

/// The mesh's base manifests, the sidecar started, then the test's `manifests` applied. Requests go to the sidecar's listener, with the first Service served as the Host
/// unless a case says otherwise.
pub async fn start(id: u8, manifests: &[&str], sidecar: Sidecar<'_>) -> (Arc<Suite>, GwAddr) {
    let base = cluster::manifests_in(MANIFESTS, "manifests.yaml");
    let own: Vec<_> = manifests
        .iter()
        .flat_map(|m| cluster::manifests_in(MANIFESTS, m))
        .collect();
    let weir = WeirSpec {
        label: SIDECAR.to_string(),
        namespace: MESH_NS.to_string(),
        config: weir_config(&sidecar),
        gateway: false,
    };
    let suite = Suite::start_world(id, &base, &own, &[weir]).await;
    let addr = GwAddr {
        url_host: sidecar.services[0].to_string(),
        socket: suite.weir(SIDECAR).addr,
    };
    (suite, addr)
}
