//! From a Service to its ready endpoints' addresses, as Kubernetes resolves them: the Service
//! port a reference names → that port's name → the EndpointSlice port of that name, whose
//! number is the target port (by number or by name, resolved per pod by the slice
//! controller). Every slice of the Service counts, only ready endpoints, IPv4 and IPv6.

use std::collections::BTreeSet;

use super::objects::{SlicePort, SliceView};
use super::observed::Observed;
use super::service::{ServicePort, TargetPort};
use crate::config::{KubeSourceConfig, PortRef};

/// A Service's ready endpoints for one of its ports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Endpoints {
    /// `host:port`, sorted, without duplicates.
    pub addresses: Vec<String>,
    /// The port is declared `appProtocol: kubernetes.io/h2c`: HTTP/2 without TLS upstream.
    pub h2c: bool,
}

/// Ready addresses of a Service in the source's namespace, on the port the config chooses
/// (`kube.ports`, `kube.default_port`) or else the Service's one (HTTP) port.
pub fn service_addresses(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    service: &str,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    resolve(cfg, obs, &cfg.namespace, service, None, warnings).addresses
}

/// The ready endpoints of `namespace/service` for the Service port numbered `port` (an
/// HTTPRoute backendRef's), or the port the config or the Service makes the only choice.
/// The config (`kube.ports`) chooses only where the reference names no port of a Service
/// seen.
pub fn resolve(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    namespace: &str,
    service: &str,
    port: Option<u16>,
    warnings: &mut Vec<String>,
) -> Endpoints {
    let slices: Vec<&SliceView> = obs
        .slices
        .values()
        .filter(|s| s.namespace == namespace && s.service.as_deref() == Some(service))
        .collect();
    let id = format!("Service {namespace}/{service}");
    // The config's choice (by name or target number) holds for the source's own namespace.
    let configured = (namespace == cfg.namespace)
        .then(|| cfg.ports.get(service).or(cfg.default_port.as_ref()))
        .flatten();
    let known = obs.services.get(&format!("{namespace}/{service}"));
    // A reference that names a port of a Service seen gets that port: the config chooses only
    // for references that name none.
    let configured = configured.filter(|_| port.is_none() || known.is_none());
    let choice: Choice = match (configured, known) {
        (Some(PortRef::Number(n)), _) => Choice::Target(*n),
        (Some(PortRef::Name(name)), _) => Choice::Named(Some(name.clone()), None),
        (None, Some(svc)) => match svc.port(port) {
            Ok(p) => Choice::Named(p.name.clone(), Some(p.clone())),
            Err(e) => {
                warnings.push(e);
                return Endpoints::default();
            }
        },
        // No Service seen (slices kept by hand, or a Service not watched): the slice port with
        // the reference's number, else the slice's one TCP port.
        (None, None) => Choice::Unknown(port),
    };
    let mut out = BTreeSet::new();
    let mut h2c = matches!(&choice, Choice::Named(_, Some(p)) if p.h2c());
    for slice in slices {
        let Some(slice_port) = choice.pick(slice) else {
            warnings.push(format!(
                "EndpointSlice {}/{} of {id}: {}",
                slice.namespace,
                slice.name,
                choice.missing(slice)
            ));
            continue;
        };
        h2c |= slice_port.app_protocol.as_deref() == Some("kubernetes.io/h2c");
        let Some(number) = slice_port.port else {
            continue;
        };
        for endpoint in slice.endpoints.iter().filter(|e| e.ready) {
            for address in &endpoint.addresses {
                if slice.address_type == "IPv6" || address.contains(':') {
                    out.insert(format!("[{address}]:{number}"));
                } else {
                    out.insert(format!("{address}:{number}"));
                }
            }
        }
    }
    Endpoints {
        addresses: out.into_iter().collect(),
        h2c,
    }
}

/// Which port of each slice to send to.
enum Choice {
    /// This number on every endpoint (`kube.ports: {svc: 8080}`), whatever the slice lists.
    Target(u16),
    /// The slice port named as the Service port is (None: the unnamed one), with the Service
    /// port when known (its numeric targetPort serves slices that list no matching name).
    Named(Option<String>, Option<ServicePort>),
    /// No Service to go by: the slice port numbered so, else the slice's one TCP port.
    Unknown(Option<u16>),
}

impl Choice {
    fn pick(&self, slice: &SliceView) -> Option<SlicePort> {
        match self {
            Choice::Target(n) => Some(SlicePort {
                name: None,
                port: Some(*n),
                protocol: "TCP".to_string(),
                app_protocol: None,
            }),
            Choice::Named(name, service_port) => {
                let by_name = slice.ports.iter().find(|p| p.name == *name).cloned();
                by_name.or_else(|| {
                    // A slice kept by hand may list its one port without the Service's name.
                    let port = service_port.as_ref()?;
                    let TargetPort::Number(n) = port.target else {
                        return None;
                    };
                    match slice.ports.as_slice() {
                        [] => Some(SlicePort {
                            name: None,
                            port: Some(n),
                            protocol: port.protocol.clone(),
                            app_protocol: port.app_protocol.clone(),
                        }),
                        [one] if one.port == Some(n) => Some(one.clone()),
                        _ => None,
                    }
                })
            }
            Choice::Unknown(port) => {
                let tcp: Vec<&SlicePort> = slice
                    .ports
                    .iter()
                    .filter(|p| p.protocol == "TCP" && p.port.is_some())
                    .collect();
                match tcp.as_slice() {
                    _ if port.is_some() && tcp.iter().any(|p| p.port == *port) => {
                        tcp.into_iter().find(|p| p.port == *port).cloned()
                    }
                    [one] => Some((*one).clone()),
                    _ => None,
                }
            }
        }
    }

    fn missing(&self, slice: &SliceView) -> String {
        let listed: Vec<String> = slice
            .ports
            .iter()
            .map(|p| match (&p.name, p.port) {
                (Some(n), Some(p)) => format!("{n}={p}"),
                (None, Some(p)) => p.to_string(),
                (Some(n), None) => n.clone(),
                (None, None) => "?".to_string(),
            })
            .collect();
        match self {
            Choice::Target(_) => String::new(),
            Choice::Named(Some(name), _) => {
                format!("no port named {name:?} (it lists {})", listed.join(", "))
            }
            Choice::Named(None, _) => {
                format!("no unnamed port (it lists {})", listed.join(", "))
            }
            Choice::Unknown(_) => format!(
                "no port to use ({} TCP ports and no Service seen); set the Service's port",
                slice.ports.len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WeightSource;
    use crate::source::kube::objects::SliceEndpoint;
    use crate::source::kube::service::ServiceView;
    use k8s_openapi::api::core::v1::Service;
    use weir_proxy::table::spec::TableSpec;

    fn cfg() -> KubeSourceConfig {
        KubeSourceConfig::new(
            "infra",
            WeightSource::Rollout { name: "r".into() },
            "web",
            TableSpec { routes: vec![] },
        )
    }

    fn port(name: Option<&str>, number: u16, app: Option<&str>) -> SlicePort {
        SlicePort {
            name: name.map(str::to_string),
            port: Some(number),
            protocol: "TCP".into(),
            app_protocol: app.map(str::to_string),
        }
    }

    /// A slice as the EndpointSlice controller writes it: one port per Service port, each
    /// under the Service port's name with the target number.
    fn slice(name: &str, service: &str, ports: Vec<SlicePort>, ips: &[&str]) -> SliceView {
        SliceView {
            name: name.into(),
            namespace: "infra".into(),
            service: Some(service.into()),
            address_type: "IPv4".into(),
            ports,
            endpoints: ips
                .iter()
                .map(|ip| SliceEndpoint {
                    addresses: vec![ip.to_string()],
                    ready: true,
                })
                .collect(),
        }
    }

    fn observed() -> Observed {
        let mut obs = Observed::default();
        let svc: Service = serde_yaml_ng::from_str(
            "metadata: {name: infra-backend-v1, namespace: infra}
spec:
  ports:
    - {name: first-port, port: 8080, targetPort: 3000}
    - {name: second-port, appProtocol: kubernetes.io/h2c, port: 8081, targetPort: 3001}
    - {name: third-port, appProtocol: kubernetes.io/ws, port: 8082, targetPort: 3000}",
        )
        .unwrap();
        let view = ServiceView::from_service(&svc).unwrap();
        obs.services.insert("infra/infra-backend-v1".into(), view);
        let ports = vec![
            port(Some("first-port"), 3000, None),
            port(Some("second-port"), 3001, Some("kubernetes.io/h2c")),
            port(Some("third-port"), 3000, Some("kubernetes.io/ws")),
        ];
        for s in [
            slice("v1-a", "infra-backend-v1", ports.clone(), &["10.0.0.1"]),
            slice("v1-b", "infra-backend-v1", ports, &["10.0.0.2"]),
        ] {
            obs.slices.insert(format!("infra/{}", s.name), s);
        }
        obs
    }

    #[test]
    fn a_multi_port_service_resolves_through_the_port_name() {
        let (c, obs) = (cfg(), observed());
        let mut w = Vec::new();
        let on = |p| {
            resolve(
                &c,
                &obs,
                "infra",
                "infra-backend-v1",
                Some(p),
                &mut Vec::new(),
            )
        };
        assert_eq!(
            on(8080),
            Endpoints {
                addresses: vec!["10.0.0.1:3000".into(), "10.0.0.2:3000".into()],
                h2c: false
            }
        );
        let second = on(8081);
        assert_eq!(second.addresses, ["10.0.0.1:3001", "10.0.0.2:3001"]);
        assert!(second.h2c);
        assert_eq!(on(8082).addresses, ["10.0.0.1:3000", "10.0.0.2:3000"]);
        // A port the Service does not have, and no port where it has three: nothing, said why.
        let none = resolve(&c, &obs, "infra", "infra-backend-v1", Some(9), &mut w);
        assert!(none.addresses.is_empty());
        let none = resolve(&c, &obs, "infra", "infra-backend-v1", None, &mut w);
        assert!(none.addresses.is_empty());
        assert!(w[0].contains("no port 9"), "{w:?}");
        assert!(w[1].contains("3 TCP ports"), "{w:?}");
        // Another namespace's Service of the same name is not this one.
        assert!(
            resolve(&c, &obs, "other", "infra-backend-v1", Some(8080), &mut w)
                .addresses
                .is_empty()
        );
    }

    #[test]
    fn a_single_unnamed_port_and_slices_without_a_service() {
        let (c, mut obs) = (cfg(), Observed::default());
        let s = slice("x", "plain", vec![port(None, 3000, None)], &["10.0.0.9"]);
        obs.slices.insert("infra/x".into(), s);
        // No Service seen: the slice's one TCP port.
        let got = resolve(&c, &obs, "infra", "plain", Some(8080), &mut Vec::new());
        assert_eq!(got.addresses, ["10.0.0.9:3000"]);
        let svc: Service = serde_yaml_ng::from_str(
            "metadata: {name: plain, namespace: infra}\nspec: {ports: [{port: 8080, targetPort: 3000}]}",
        )
        .unwrap();
        obs.services.insert(
            "infra/plain".into(),
            ServiceView::from_service(&svc).unwrap(),
        );
        let got = resolve(&c, &obs, "infra", "plain", Some(8080), &mut Vec::new());
        assert_eq!(got.addresses, ["10.0.0.9:3000"]);
        let got = resolve(&c, &obs, "infra", "plain", None, &mut Vec::new());
        assert_eq!(got.addresses, ["10.0.0.9:3000"]);
    }
}
