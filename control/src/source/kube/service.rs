//! What weir reads of a core `Service`: its ports, as a backend reference names them.
//!
//! A reference (an HTTPRoute backendRef, a Rollout's Service) names a *Service* port. The
//! EndpointSlice controller lists each endpoint's *target* port under the Service port's
//! name (unnamed when the Service has a single unnamed port), so the Service is the bridge:
//! Service port → its name → the slice port of that name, whose number is the target port
//! (a named `targetPort` already resolved per pod by the controller).

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// One Service, as far as routing to it is concerned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceView {
    pub namespace: String,
    pub name: String,
    /// `ClusterIP` (the default), `NodePort`, `LoadBalancer` or `ExternalName`.
    pub kind: String,
    /// `spec.clusterIP` is `None`: a headless Service (its slices list the pods all the same).
    pub headless: bool,
    pub ports: Vec<ServicePort>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServicePort {
    /// Required by the API when the Service has more than one port.
    pub name: Option<String>,
    pub port: u16,
    pub target: TargetPort,
    /// `TCP` (the default), `UDP` or `SCTP`.
    pub protocol: String,
    /// `appProtocol`: `kubernetes.io/h2c`, `kubernetes.io/ws`, `http`, ...
    pub app_protocol: Option<String>,
}

/// `targetPort`: a number, a name of a container port, or (unset) the Service port itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetPort {
    Number(u16),
    Name(String),
}

impl ServiceView {
    pub fn from_service(service: &Service) -> Result<Self, String> {
        let name = service.metadata.name.clone().unwrap_or_default();
        let namespace = service.metadata.namespace.clone().unwrap_or_default();
        let spec = service.spec.clone().unwrap_or_default();
        let mut ports = Vec::new();
        for (i, p) in spec.ports.iter().flatten().enumerate() {
            let at = || format!("Service {namespace}/{name}: spec.ports[{i}]");
            let port = u16::try_from(p.port)
                .ok()
                .filter(|n| *n != 0)
                .ok_or_else(|| format!("{}.port: {} is not a port", at(), p.port))?;
            let target = match &p.target_port {
                None => TargetPort::Number(port),
                Some(IntOrString::Int(n)) => TargetPort::Number(
                    u16::try_from(*n)
                        .ok()
                        .filter(|n| *n != 0)
                        .ok_or_else(|| format!("{}.targetPort: {n} is not a port", at()))?,
                ),
                Some(IntOrString::String(s)) => match s.parse::<u16>() {
                    Ok(n) if n != 0 => TargetPort::Number(n),
                    _ if s.is_empty() => TargetPort::Number(port),
                    _ => TargetPort::Name(s.clone()),
                },
            };
            ports.push(ServicePort {
                name: p.name.clone().filter(|n| !n.is_empty()),
                port,
                target,
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".to_string()),
                app_protocol: p.app_protocol.clone().filter(|a| !a.is_empty()),
            });
        }
        Ok(ServiceView {
            kind: spec.type_.unwrap_or_else(|| "ClusterIP".to_string()),
            headless: spec.cluster_ip.as_deref() == Some("None"),
            namespace,
            name,
            ports,
        })
    }

    /// The Service port a reference means: the one numbered `port`, or with no number the
    /// only one (or the only TCP one). Err says why none can be chosen.
    pub fn port(&self, port: Option<u16>) -> Result<&ServicePort, String> {
        let id = format!("Service {}/{}", self.namespace, self.name);
        match port {
            Some(n) => self.ports.iter().find(|p| p.port == n).ok_or_else(|| {
                format!(
                    "{id} has no port {n} (it has {})",
                    listing(self.ports.iter().map(|p| p.port))
                )
            }),
            None => {
                let tcp: Vec<&ServicePort> =
                    self.ports.iter().filter(|p| p.protocol == "TCP").collect();
                match tcp.as_slice() {
                    [one] => Ok(one),
                    [] => Err(format!("{id} has no TCP port")),
                    many => {
                        // Several ports and no number: the one an HTTP proxy is for, by name or
                        // by appProtocol, when exactly one says so.
                        let http: Vec<&&ServicePort> =
                            many.iter().filter(|p| p.speaks_http()).collect();
                        match http.as_slice() {
                            [one] => Ok(one),
                            _ => Err(format!(
                                "{id} has {} TCP ports ({}); name the port to use",
                                many.len(),
                                listing(many.iter().map(|p| p.port))
                            )),
                        }
                    }
                }
            }
        }
    }
}

impl ServicePort {
    /// Named `http` (or `http-…`), or declared HTTP by `appProtocol`.
    fn speaks_http(&self) -> bool {
        let named = self
            .name
            .as_deref()
            .is_some_and(|n| n == "http" || n.starts_with("http-"));
        named || self.app_protocol.as_deref() == Some("http")
    }

    /// The upstream speaks HTTP/2 in clear text (`appProtocol: kubernetes.io/h2c`).
    pub fn h2c(&self) -> bool {
        self.app_protocol.as_deref() == Some("kubernetes.io/h2c")
    }
}

fn listing(ports: impl Iterator<Item = u16>) -> String {
    ports.map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(yaml: &str) -> ServiceView {
        let s: Service = serde_yaml_ng::from_str(yaml).unwrap();
        ServiceView::from_service(&s).unwrap()
    }

    #[test]
    fn the_conformance_infra_backend_reads_with_its_three_ports() {
        // infra-backend-v1 of the Gateway API conformance suite's base manifests.
        let s = service(
            "metadata: {name: infra-backend-v1, namespace: gateway-conformance-infra}
spec:
  selector: {app: infra-backend-v1}
  ports:
    - {name: first-port, protocol: TCP, port: 8080, targetPort: 3000}
    - {name: second-port, protocol: TCP, appProtocol: kubernetes.io/h2c, port: 8081, targetPort: 3001}
    - {name: third-port, protocol: TCP, appProtocol: kubernetes.io/ws, port: 8082, targetPort: 3000}",
        );
        assert_eq!(s.kind, "ClusterIP");
        assert_eq!(
            s.port(Some(8081)).unwrap().name.as_deref(),
            Some("second-port")
        );
        assert!(s.port(Some(8081)).unwrap().h2c());
        assert_eq!(s.port(Some(8080)).unwrap().target, TargetPort::Number(3000));
        let err = s.port(Some(9999)).unwrap_err();
        assert!(
            err.contains("no port 9999 (it has 8080, 8081, 8082)"),
            "{err}"
        );
        let err = s.port(None).unwrap_err();
        assert!(err.contains("3 TCP ports"), "{err}");
    }

    #[test]
    fn one_port_or_one_http_port_needs_no_number() {
        let s = service("metadata: {name: a}\nspec: {ports: [{port: 80, targetPort: http}]}");
        let p = s.port(None).unwrap();
        assert_eq!((p.port, &p.target), (80, &TargetPort::Name("http".into())));
        let s = service(
            "metadata: {name: b}\nspec: {clusterIP: None, ports: [{name: metrics, port: 9090}, {name: http, port: 80}]}",
        );
        assert!(s.headless);
        assert_eq!(s.port(None).unwrap().port, 80);
        assert_eq!(s.port(Some(9090)).unwrap().target, TargetPort::Number(9090));
    }
}
