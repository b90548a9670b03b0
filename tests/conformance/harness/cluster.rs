//! The cluster the suite runs against: its base manifests and a test's own, templated as the
//! suite templates them, plus what a real cluster's controllers would add — the pods of each
//! Deployment (here loopback echo servers), and EndpointSlices shaped as the EndpointSlice
//! controller shapes them.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use super::echo::{self, EchoPod, Identity};
use super::INFRA_NS;

pub const CONFORMANCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/gateway-api/conformance"
);
/// The GatewayClass the suite is run with (`--gateway-class`), and its controller.
pub const GATEWAY_CLASS: &str = "weir";
pub const CONTROLLER: &str = "weir.dev/gateway-controller";
const NODE: &str = "conformance-node-1";

/// The documents of a fixture file, `{GATEWAY_CLASS_NAME}` replaced as the suite does.
pub fn manifests(file: &str) -> Vec<Value> {
    manifests_in(CONFORMANCE, file)
}

/// The documents of `dir/file`, templated as [`manifests`] templates them.
pub fn manifests_in(dir: &str, file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{dir}/{file}"))
        .unwrap_or_else(|e| panic!("{dir}/{file}: {e}"))
        .replace("{GATEWAY_CLASS_NAME}", GATEWAY_CLASS);
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("yaml"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// The GatewayClass the base manifests' Gateways name, owned by weir's controller.
pub fn gateway_class() -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
        "metadata": {"name": GATEWAY_CLASS},
        "spec": {"controllerName": CONTROLLER},
    })
}

/// A Deployment this harness can run: the plain HTTP echo image, or the mesh profile's
/// `echo-advanced` (which also serves TLS, gRPC and TCP on its other ports: this stand-in
/// answers plain HTTP on every port, and no test here uses the others). The edge suite's TLS,
/// gRPC and TCP echo servers (`TLS_SERVER_CERT`, `GRPC_ECHO_SERVER`, `TCP_ECHO_SERVER`) and
/// CoreDNS are left out: no test transcribed here routes to them, so their Services get no
/// endpoints.
fn runnable(deployment: &Value) -> bool {
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    containers.iter().all(|c| {
        c["image"]
            .as_str()
            .is_some_and(|i| i.contains("/echo-basic:") || i.contains("/echo-advanced:"))
            && c["env"].as_array().is_none_or(|env| {
                env.iter().all(|e| {
                    !matches!(
                        e["name"].as_str(),
                        Some("TLS_SERVER_CERT" | "GRPC_ECHO_SERVER" | "TCP_ECHO_SERVER")
                    )
                })
            })
    })
}

fn selects(selector: &Value, labels: &Value) -> bool {
    selector
        .as_object()
        .is_some_and(|s| !s.is_empty() && s.iter().all(|(k, v)| labels[k] == *v))
}

/// A pod of a Deployment, as the cluster would list it.
pub struct Pod {
    pub deployment: String,
    pub labels: Value,
    pub echo: EchoPod,
}

impl Pod {
    pub fn object(&self) -> Value {
        let ip = self.echo.ip.to_string();
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": self.echo.identity.pod, "namespace": self.echo.identity.namespace,
                         "labels": self.labels},
            "spec": {"nodeName": NODE},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                       "conditions": [{"type": "Ready", "status": "True"}]},
        })
    }

    /// The EndpointSlice entry of this pod (`conditions` as the controller writes them).
    pub fn endpoint(&self) -> Value {
        json!({
            "addresses": [self.echo.ip.to_string()],
            "conditions": {"ready": true, "serving": true, "terminating": false},
            "nodeName": NODE,
            "targetRef": {"kind": "Pod", "name": self.echo.identity.pod,
                          "namespace": self.echo.identity.namespace},
        })
    }
}

/// A stable stand-in for the ReplicaSet's pod-template hash in pod names.
fn template_hash(name: &str) -> String {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{:010x}", h & 0xff_ffff_ffff)
}

/// Starts the pods of every runnable Deployment among `objects`, pod `n` of the whole set on
/// `127.block.n`, each listening on the target ports of the Services selecting it. Pods are
/// named `DEPLOYMENT-HASH-N`: the suite compares pod names by prefix.
pub async fn start_pods(objects: &[Value], block: [u8; 2]) -> std::io::Result<Vec<Pod>> {
    let mut pods = Vec::new();
    for d in objects
        .iter()
        .filter(|o| o["kind"] == "Deployment" && runnable(o))
    {
        let name = d["metadata"]["name"].as_str().unwrap().to_string();
        let namespace = d["metadata"]["namespace"].as_str().unwrap().to_string();
        let labels = d["spec"]["template"]["metadata"]["labels"].clone();
        let mut ports: Vec<u16> = objects
            .iter()
            .filter(|s| s["kind"] == "Service" && s["metadata"]["namespace"] == namespace)
            .filter(|s| selects(&s["spec"]["selector"], &labels))
            .flat_map(|s| s["spec"]["ports"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p["targetPort"].as_u64().or(p["port"].as_u64()))
            .map(|p| p as u16)
            .collect();
        ports.sort_unstable();
        ports.dedup();
        let replicas = d["spec"]["replicas"].as_u64().unwrap_or(1);
        for r in 0..replicas {
            let n = u8::try_from(pods.len() + 1).expect("under 255 pods");
            let identity = Identity {
                pod: format!("{name}-{}-{r}", template_hash(&name)),
                namespace: namespace.clone(),
            };
            let ip = Ipv4Addr::new(127, block[0], block[1], n);
            let echo = echo::start(identity, ip, &ports).await?;
            pods.push(Pod {
                deployment: name.clone(),
                labels: labels.clone(),
                echo,
            });
        }
    }
    Ok(pods)
}

/// The EndpointSlices the EndpointSlice controller keeps for each Service with a selector:
/// one per address family (all pods here are IPv4), labelled with the Service's name and the
/// controller's, its ports named after the Service ports (unnamed for a single unnamed port)
/// with the target port's number and `appProtocol`, one ready endpoint per selected pod.
pub fn endpoint_slices(objects: &[Value], pods: &[Pod]) -> Vec<Value> {
    let mut slices = Vec::new();
    for s in objects.iter().filter(|o| o["kind"] == "Service") {
        let name = s["metadata"]["name"].as_str().unwrap();
        let namespace = s["metadata"]["namespace"].as_str().unwrap();
        let selector = &s["spec"]["selector"];
        if selector.is_null() {
            continue; // slices of a Service without a selector are managed by hand
        }
        let endpoints: Vec<Value> = pods
            .iter()
            .filter(|p| p.echo.identity.namespace == namespace && selects(selector, &p.labels))
            .map(Pod::endpoint)
            .collect();
        let ports: Vec<Value> = s["spec"]["ports"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|p| {
                let mut port = json!({
                    "name": p["name"].as_str().unwrap_or(""),
                    "port": p["targetPort"].as_u64().or(p["port"].as_u64()),
                    "protocol": p["protocol"].as_str().unwrap_or("TCP"),
                });
                if let Some(app) = p.get("appProtocol") {
                    port["appProtocol"] = app.clone();
                }
                port
            })
            .collect();
        slices.push(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "name": format!("{name}-{}", &template_hash(name)[..5]),
                "generateName": format!("{name}-"),
                "namespace": namespace,
                "labels": {
                    "kubernetes.io/service-name": name,
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                },
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": name,
                                     "controller": true, "blockOwnerDeletion": true}],
            },
            "addressType": "IPv4",
            "ports": ports,
            "endpoints": endpoints,
        }));
    }
    slices
}

/// A `kubernetes.io/tls` Secret in the infra namespace, as `kubectl create secret tls` makes it.
pub fn tls_secret(name: &str, cert_pem: &str, key_pem: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": INFRA_NS},
        "data": {
            "tls.crt": base64(cert_pem.as_bytes()),
            "tls.key": base64(key_pem.as_bytes()),
        },
    })
}

/// Standard base64, as a Secret's `data` holds its values.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
