//! From a Service's name to its ready endpoints' addresses, through its EndpointSlices.

use std::collections::BTreeSet;

use super::observed::Observed;
use crate::config::{KubeSourceConfig, PortRef};

/// Ready addresses of a Service, `host:port`, sorted and without duplicates.
pub fn service_addresses(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    service: &str,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    service_addresses_on(cfg, obs, service, None, warnings)
}

/// Like [`service_addresses`], for a reference that names the Service's `port` (an HTTPRoute
/// backendRef): without a `kube.ports` choice, the slice port with that number (the Service
/// port equals its target port), else the slice's one TCP port.
pub fn service_addresses_on(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    service: &str,
    port: Option<u16>,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let port_ref = cfg.ports.get(service).or(cfg.default_port.as_ref());
    let mut out = BTreeSet::new();
    for slice in obs.slices.values() {
        if slice.service.as_deref() != Some(service) {
            continue;
        }
        let port = match port_ref {
            Some(PortRef::Number(n)) => Some(*n),
            Some(PortRef::Name(want)) => slice
                .ports
                .iter()
                .find(|p| p.name.as_deref() == Some(want.as_str()))
                .and_then(|p| p.port),
            None => {
                let tcp: Vec<_> = slice
                    .ports
                    .iter()
                    .filter(|p| p.protocol == "TCP" && p.port.is_some())
                    .collect();
                match tcp.as_slice() {
                    _ if port.is_some() && tcp.iter().any(|p| p.port == port) => port,
                    [one] => one.port,
                    _ => None,
                }
            }
        };
        let Some(port) = port else {
            warnings.push(format!(
                "EndpointSlice {} of Service {service}: no port to use ({}); set the Service's port",
                slice.name,
                match port_ref {
                    Some(PortRef::Name(n)) => format!("no port named {n:?}"),
                    _ => format!("{} TCP ports", slice.ports.len()),
                }
            ));
            continue;
        };
        for endpoint in slice.endpoints.iter().filter(|e| e.ready) {
            for address in &endpoint.addresses {
                if slice.address_type == "IPv6" || address.contains(':') {
                    out.insert(format!("[{address}]:{port}"));
                } else {
                    out.insert(format!("{address}:{port}"));
                }
            }
        }
    }
    out.into_iter().collect()
}
