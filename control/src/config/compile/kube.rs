//! The `kube:` section: which Kubernetes objects weir follows, and which route they drive.

use std::time::Duration;

use weir_proxy::table::spec::TableSpec;

use crate::config::check::Checker;
use crate::config::model::{RawHttpRoutes, RawKube, RawPort};
use crate::config::{
    GatewayVersion, HttpRouteParents, HttpRoutesSource, KubeSourceConfig, PortRef, SmiVersion,
    WatchedNamespaces, WeightSource,
};

pub fn kube(raw: &RawKube, table: &TableSpec, check: &mut Checker) -> KubeSourceConfig {
    let sources = [
        raw.rollout.is_some(),
        raw.rollout_selector.is_some(),
        raw.traffic_split.is_some(),
        raw.http_routes.is_some(),
    ];
    let weights = match (&raw.rollout, &raw.rollout_selector, &raw.traffic_split) {
        _ if sources.iter().filter(|s| **s).count() != 1 => {
            check.report(
                "kube",
                "name exactly one of `rollout`, `rollout_selector`, `traffic_split`, `http_routes`",
            );
            WeightSource::Rollout {
                name: String::new(),
            }
        }
        (Some(name), _, _) => WeightSource::Rollout { name: name.clone() },
        (_, Some(labels), _) => WeightSource::RolloutSelector {
            labels: labels.clone(),
        },
        (_, _, Some(split)) => {
            let version = match split.version.as_deref() {
                None | Some("v1alpha1") => SmiVersion::V1alpha1,
                Some("v1alpha2") => SmiVersion::V1alpha2,
                Some("v1alpha3") => SmiVersion::V1alpha3,
                Some(other) => {
                    check.report(
                        "kube.traffic_split.version",
                        format!("{other:?}: use v1alpha1, v1alpha2 or v1alpha3"),
                    );
                    SmiVersion::V1alpha1
                }
            };
            if raw.stable_service.is_none() {
                check.report(
                    "kube.stable_service",
                    "a TrafficSplit source needs the stable Service's name",
                );
            }
            WeightSource::TrafficSplit {
                name: split.name.clone(),
                version,
            }
        }
        _ => match &raw.http_routes {
            Some(h) => WeightSource::HttpRoutes(http_routes(h, &raw.namespace, check)),
            None => WeightSource::Rollout {
                name: String::new(),
            },
        },
    };
    if raw.namespace.is_empty() {
        check.report("kube.namespace", "must not be empty");
    }
    if raw.http_routes.is_some() {
        if !raw.route.is_empty() {
            check.report(
                "kube.route",
                "HTTPRoutes make their own routes: `route` is for a Rollout or TrafficSplit",
            );
        }
    } else if !table.routes.iter().any(|r| r.name == raw.route) {
        check.report("kube.route", format!("no route is named {:?}", raw.route));
    }
    let port = |p: &RawPort| match p {
        RawPort::Number(n) => PortRef::Number(*n),
        RawPort::Name(s) => PortRef::Name(s.clone()),
    };
    let mut cfg = KubeSourceConfig::new(
        raw.namespace.clone(),
        weights,
        raw.route.clone(),
        table.clone(),
    );
    cfg.stable_service = raw.stable_service.clone();
    cfg.canary_service = raw.canary_service.clone();
    cfg.ports = raw
        .ports
        .iter()
        .map(|(k, v)| (k.clone(), port(v)))
        .collect();
    cfg.default_port = raw.default_port.as_ref().map(port);
    if let Err(e) = cfg.validate() {
        check.report("kube", e);
    }
    cfg
}

/// One Lease per thing served: weirs serving two Gateways each elect their own status writer
/// (sharing one, a Gateway's replicas would wait on the other's). Sidecars serving Services
/// share one per namespace.
fn default_lease(parents: &HttpRouteParents) -> String {
    match parents {
        HttpRouteParents::Gateway { name, .. } => format!("weir-gateway-{name}"),
        HttpRouteParents::Services(_) => "weir-httproute-status".to_string(),
    }
}

fn http_routes(raw: &RawHttpRoutes, namespace: &str, check: &mut Checker) -> HttpRoutesSource {
    let parents = match (&raw.gateway, &raw.services) {
        (Some(g), None) => HttpRouteParents::Gateway {
            name: g.name.clone(),
            namespace: g.namespace.clone(),
            section_name: g.section_name.clone(),
        },
        (None, Some(services)) => HttpRouteParents::Services(services.clone()),
        _ => {
            check.report(
                "kube.http_routes",
                "name exactly one of `gateway` (an edge weir) and `services` (a sidecar)",
            );
            HttpRouteParents::Services(Vec::new())
        }
    };
    let version = match raw.version.as_deref() {
        None | Some("v1") => GatewayVersion::V1,
        Some("v1beta1") => GatewayVersion::V1beta1,
        Some(other) => {
            check.report(
                "kube.http_routes.version",
                format!("{other:?}: use v1 or v1beta1"),
            );
            GatewayVersion::V1
        }
    };
    let lease_duration = check
        .duration("kube.http_routes.lease_duration", raw.lease_duration)
        .unwrap_or(Duration::from_secs(15));
    if lease_duration < Duration::from_secs(1) {
        check.report("kube.http_routes.lease_duration", "must be at least 1s");
    }
    let namespaces = match raw.namespaces.as_deref() {
        Some([all]) if all == "*" => WatchedNamespaces::All,
        Some(list) if list.is_empty() || list.iter().any(|n| n.is_empty() || n == "*") => {
            check.report(
                "kube.http_routes.namespaces",
                "list namespace names, or write [\"*\"] alone for every namespace",
            );
            WatchedNamespaces::All
        }
        Some(list) => {
            let mut list = list.to_vec();
            if !list.iter().any(|n| n == namespace) {
                // The Gateway's (or the Services') own namespace is always watched.
                list.push(namespace.to_string());
            }
            WatchedNamespaces::Only(list)
        }
        None => match &parents {
            HttpRouteParents::Gateway { .. } => WatchedNamespaces::All,
            HttpRouteParents::Services(_) => WatchedNamespaces::Only(vec![namespace.to_string()]),
        },
    };
    let addresses = raw
        .gateway
        .as_ref()
        .map(|g| g.addresses.clone())
        .unwrap_or_default();
    if addresses.iter().any(String::is_empty) {
        check.report(
            "kube.http_routes.gateway.addresses",
            "an address must not be empty",
        );
    }
    let lease = default_lease(&parents);
    HttpRoutesSource {
        namespaces,
        addresses,
        parents,
        controller_name: raw.controller_name.clone(),
        version,
        lease_name: raw.lease_name.clone().unwrap_or(lease),
        lease_duration,
    }
}
