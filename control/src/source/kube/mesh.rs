//! GAMMA: what a weir serving Services (`kube.http_routes.services`) makes of a parentRef that
//! names one, and of a Service port no route covers. Pure: the Services as observed in, the
//! attachment, the ports each route serves and the Services' own fallbacks out.
//!
//! **Ports.** A parentRef naming a Service may name one of its ports (`port`, or `sectionName`
//! as the port's name): the route then serves requests addressed to that Service port only
//! (MeshPorts). weir reads a request's port from its Host (`echo:8080`), else the scheme's
//! default. The Service's *default port* — the one `kube.ports` chooses, else its one HTTP
//! port — also takes requests addressed to a port the Service does not have: a sidecar's
//! clients may address weir's own listener port, and a Service without port 80 is still
//! reached by a Host with no port, as before ports were read at all.
//!
//! **Fallbacks.** A Service port no route covers goes to that port's own endpoints, as if weir
//! were not there (GEP-1294: a route's presence replaces the implicit routing of the ports it
//! covers only).

use std::collections::{BTreeMap, BTreeSet};

use weir_proxy::table::spec::{BackendSpec, Origin, PortMatch, RouteSpec, UpstreamProtocol};

use super::attach::{Attached, Refused, Serving};
use super::endpoints::resolve;
use super::hostnames::Hosts;
use super::httproute::{is_core_group, HttpRouteView, ParentRef};
use super::observed::Observed;
use super::service::{ServiceView, TargetPort};
use crate::config::{KubeSourceConfig, PortRef};

/// The Service ports a route's accepted parentRefs cover, per Service served.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Covered {
    /// A parentRef with no port: every port of the Service.
    #[default]
    All,
    Ports(BTreeSet<u16>),
}

impl Covered {
    fn add(&mut self, port: Option<u16>) {
        match (port, &mut *self) {
            (None, _) => *self = Covered::All,
            (Some(p), Covered::Ports(ports)) => {
                ports.insert(p);
            }
            (Some(_), Covered::All) => {}
        }
    }

    fn covers(&self, port: u16) -> bool {
        match self {
            Covered::All => true,
            Covered::Ports(ports) => ports.contains(&port),
        }
    }
}

/// Per served Service, what its attached routes cover.
pub type Coverage = BTreeMap<String, Covered>;

/// Record that a route attached to `service` through a parentRef for `port` (None: all).
pub fn cover(coverage: &mut Coverage, service: &str, port: Option<u16>) {
    coverage
        .entry(service.to_string())
        .or_insert_with(|| Covered::Ports(BTreeSet::new()))
        .add(port);
}

/// A parentRef of `route` that names one of `services` in `namespace`: attached (for the
/// Service's names, and its port when the ref names one), or refused when it names a port the
/// Service does not have. None: not a ref to a Service this weir serves.
pub fn attach_service(
    obs: &Observed,
    namespace: &str,
    services: &[String],
    route: &HttpRouteView,
    parent: &ParentRef,
) -> Option<Result<Attached, Refused>> {
    let parent_namespace = parent.namespace.as_deref().unwrap_or(&route.namespace);
    let ours = is_core_group(parent.group())
        && parent.kind() == "Service"
        && parent_namespace == namespace
        && services.contains(&parent.name);
    if !ours {
        return None;
    }
    // GAMMA ignores a route's hostnames: the Service is the host. One Service served: every
    // request is for it; several: its names tell them apart.
    let hosts = match services.len() {
        1 => Hosts::Any,
        _ => Hosts::Only(service_hosts(namespace, &parent.name)),
    };
    let service = obs.services.get(&format!("{namespace}/{}", parent.name));
    Some(parent_port(service, parent).map(|port| Attached {
        hosts,
        listeners: Vec::new(),
        port,
        per_port: BTreeMap::new(),
    }))
}

/// Where a route attached through `parents` (each a served Service, with the Service port it
/// names, if any) is served: the union of the Services' names, on the ports named — all of
/// them when some parentRef names none. The ports are recorded in `coverage`. One group per
/// route: exact for the usual route of one Service; a route naming several served Services
/// with different ports serves the union of their ports for all of them.
pub fn serving(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    parents: &[(&ParentRef, &Attached)],
    coverage: &mut Coverage,
) -> Vec<Serving> {
    let mut hosts = Hosts::Disjoint;
    let mut named = BTreeSet::new();
    let mut any_port = false;
    for (parent, a) in parents {
        hosts = hosts.union(a.hosts.clone());
        cover(coverage, &parent.name, a.port);
        match a.port {
            Some(port) => {
                named.insert(port);
            }
            None => any_port = true,
        }
    }
    if hosts == Hosts::Disjoint {
        return Vec::new();
    }
    let ports = match (any_port, parents.first()) {
        (false, Some((parent, _))) => port_match(cfg, obs, &parent.name, &named),
        _ => PortMatch::Any,
    };
    let listener_port = match (any_port, named.len(), named.first()) {
        (false, 1, Some(port)) => Some(*port),
        _ => None,
    };
    vec![Serving {
        hosts,
        ports,
        listener_port,
    }]
}

/// The Service port a parentRef names by `port` and/or `sectionName` (both must then agree),
/// None when it names none.
fn parent_port(service: Option<&ServiceView>, parent: &ParentRef) -> Result<Option<u16>, Refused> {
    if parent.port.is_none() && parent.section_name.is_none() {
        return Ok(None);
    }
    let id = format!("Service {}", parent.name);
    let Some(service) = service else {
        // Not seen (yet): a number can still be served; a name cannot be read without it.
        return match (parent.port, &parent.section_name) {
            (Some(port), None) => Ok(Some(port)),
            _ => Err(Refused {
                reason: "NoMatchingParent",
                message: format!("{id} is not found: its port cannot be resolved"),
            }),
        };
    };
    let found = service.ports.iter().find(|p| {
        parent.port.is_none_or(|n| p.port == n)
            && parent
                .section_name
                .as_ref()
                .is_none_or(|s| p.name.as_ref() == Some(s))
    });
    match found {
        Some(p) if p.protocol == "TCP" => Ok(Some(p.port)),
        _ => {
            let wanted = match (parent.port, &parent.section_name) {
                (Some(n), Some(s)) => format!("TCP port {n} named {s}"),
                (Some(n), None) => format!("TCP port {n}"),
                (None, Some(s)) => format!("TCP port named {s}"),
                (None, None) => String::new(),
            };
            Err(Refused {
                reason: "NoMatchingParent",
                message: format!("{id} has no {wanted} (it has {})", listing(service)),
            })
        }
    }
}

/// `80 (http), 9901 (admin)`: a Service's ports, for a message.
fn listing(service: &ServiceView) -> String {
    let ports: Vec<String> = service
        .ports
        .iter()
        .map(|p| match &p.name {
            Some(name) => format!("{} ({name})", p.port),
            None => p.port.to_string(),
        })
        .collect();
    ports.join(", ")
}

/// The Service port that takes requests for ports the Service does not have: the one
/// `kube.ports` (or `kube.default_port`) names, else the Service's one HTTP port.
fn default_port(cfg: &KubeSourceConfig, service: &ServiceView) -> Option<u16> {
    let configured = cfg.ports.get(&service.name).or(cfg.default_port.as_ref());
    let port = match configured {
        Some(PortRef::Name(name)) => service.ports.iter().find(|p| p.name.as_ref() == Some(name)),
        // A number names the endpoints' (target) port.
        Some(PortRef::Number(n)) => service
            .ports
            .iter()
            .find(|p| p.target == TargetPort::Number(*n)),
        None => service.port(None).ok(),
    };
    port.map(|p| p.port)
}

/// The request ports a route serving `ports` of `service` answers: those ports, and when the
/// default port is among them, every port the Service does not have too.
pub fn port_match(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    service: &str,
    ports: &BTreeSet<u16>,
) -> PortMatch {
    let known = obs.services.get(&format!("{}/{service}", cfg.namespace));
    match known {
        Some(svc) if default_port(cfg, svc).is_some_and(|d| ports.contains(&d)) => {
            PortMatch::Except(
                svc.ports
                    .iter()
                    .map(|p| p.port)
                    .filter(|p| !ports.contains(p))
                    .collect(),
            )
        }
        _ => PortMatch::Only(ports.iter().copied().collect()),
    }
}

/// The names a client reaches a Service by, in-cluster DNS.
pub fn service_hosts(namespace: &str, service: &str) -> Vec<String> {
    vec![
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// In a mesh, a request for a served Service that no HTTPRoute covers goes to that Service's own
/// endpoints, as if weir were not there: one catch-all route per uncovered Service port (one
/// for the whole Service while the Service itself is not seen). Once a route covers a port,
/// its rules replace that port's implicit routing (GEP-1294's route presence), and a request
/// none of them matches gets 404, as the mesh conformance tests expect. With one Service
/// served, every request is for it.
pub fn service_fallbacks(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    services: &[String],
    coverage: &Coverage,
    warnings: &mut Vec<String>,
) -> Vec<RouteSpec> {
    let mut out = Vec::new();
    let none = Covered::Ports(BTreeSet::new());
    for service in services {
        let covered = coverage.get(service).unwrap_or(&none);
        let hosts = match services.len() {
            1 => Vec::new(),
            _ => service_hosts(&cfg.namespace, service),
        };
        let name = format!("service/{}/{service}", cfg.namespace);
        let Some(svc) = obs.services.get(&format!("{}/{service}", cfg.namespace)) else {
            // Not seen: its slices' port as `kube.ports` or the slices alone choose it, for
            // every request — unless a route covers some port already.
            if *covered == none {
                out.extend(fallback(cfg, obs, service, None, &name, &hosts, warnings));
            }
            continue;
        };
        let default = default_port(cfg, svc);
        for p in svc.ports.iter().filter(|p| p.protocol == "TCP") {
            if covered.covers(p.port) {
                continue;
            }
            let named = match default == Some(p.port) {
                true => name.clone(),
                false => format!("{name}:{}", p.port),
            };
            let ports = port_match(cfg, obs, service, &BTreeSet::from([p.port]));
            if let Some(mut spec) =
                fallback(cfg, obs, service, Some(p.port), &named, &hosts, warnings)
            {
                spec.ports = ports;
                out.push(spec);
            }
        }
    }
    out
}

/// A catch-all route to one port of a Service's endpoints (None: the port `resolve` chooses),
/// None while it has no ready endpoint.
fn fallback(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    service: &str,
    port: Option<u16>,
    name: &str,
    hosts: &[String],
    warnings: &mut Vec<String>,
) -> Option<RouteSpec> {
    let endpoints = resolve(cfg, obs, &cfg.namespace, service, port, warnings);
    if endpoints.addresses.is_empty() {
        return None;
    }
    let mut backend = BackendSpec::new(endpoints.addresses);
    if endpoints.h2c {
        backend.protocol = UpstreamProtocol::Http2;
    }
    let mut spec = RouteSpec::new(name, backend);
    spec.backends[0].name = service.to_string();
    spec.hosts = hosts.to_vec();
    spec.origin = Some(Origin {
        kind: "Service".to_string(),
        namespace: cfg.namespace.clone(),
        name: service.to_string(),
        generation: 0,
    });
    Some(spec)
}

/// A request addressed to a pod of a served Service — its IP and one of its slices' ports, as a
/// client that resolved the pod itself sends it — not to the Service's name: passed to that pod
/// and port as if weir were not there, whatever routes the Service has (MeshFrontend: routes
/// apply to a Service's frontend only). Only the served Services' own pods are reached this
/// way: a Host naming any other address is no route's, never an open relay.
pub fn pod_routes(cfg: &KubeSourceConfig, obs: &Observed, services: &[String]) -> Vec<RouteSpec> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for slice in obs.slices.values() {
        let Some(service) = slice.service.as_ref().filter(|s| services.contains(s)) else {
            continue;
        };
        if slice.namespace != cfg.namespace || slice.address_type == "FQDN" {
            continue;
        }
        for port in slice.ports.iter().filter(|p| p.protocol == "TCP") {
            let Some(number) = port.port else {
                continue;
            };
            for address in slice.endpoints.iter().flat_map(|e| &e.addresses) {
                if !seen.insert((address.clone(), number)) {
                    continue;
                }
                let upstream = match address.contains(':') {
                    true => format!("[{address}]:{number}"),
                    false => format!("{address}:{number}"),
                };
                let mut backend = BackendSpec::new([upstream.clone()]);
                if port.app_protocol.as_deref() == Some("kubernetes.io/h2c") {
                    backend.protocol = UpstreamProtocol::Http2;
                }
                let mut spec = RouteSpec::new(format!("pod/{}/{upstream}", cfg.namespace), backend);
                spec.backends[0].name = service.clone();
                spec.hosts = vec![address.to_ascii_lowercase()];
                spec.ports = PortMatch::Only(vec![number]);
                spec.origin = Some(Origin {
                    kind: "EndpointSlice".to_string(),
                    namespace: slice.namespace.clone(),
                    name: slice.name.clone(),
                    generation: 0,
                });
                out.push(spec);
            }
        }
    }
    out
}
