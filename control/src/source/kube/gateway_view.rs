//! What weir reads of the Gateway it serves (its listeners and what each allows to attach),
//! of ReferenceGrants, and of Namespaces' labels: typed views parsed from the JSON the API
//! server sends. Only the fields that decide attachment and status are kept.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::httproute::GATEWAY_GROUP;

/// A `Gateway` (`gateway.networking.k8s.io`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GatewayView {
    pub namespace: String,
    pub name: String,
    pub generation: i64,
    pub class: String,
    pub listeners: Vec<ListenerView>,
    /// `spec.addresses[].value`: addresses the Gateway asks for.
    pub addresses: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListenerView {
    pub name: String,
    pub port: u16,
    /// `HTTP`, `HTTPS`, `TLS`, `TCP`, `UDP` or an implementation's own.
    pub protocol: String,
    /// Lower-case when read; None: every host.
    pub hostname: Option<String>,
    pub allowed_routes: AllowedRoutes,
    pub tls: Option<ListenerTlsView>,
}

/// A listener's `tls` as far as certificates go.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListenerTlsView {
    /// `Terminate` (the default) or `Passthrough`.
    pub mode: Option<String>,
    pub certificate_refs: Vec<CertificateRef>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct CertificateRef {
    /// Default `""` (core).
    pub group: Option<String>,
    /// Default `Secret`.
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AllowedRoutes {
    pub namespaces: RouteNamespaces,
    /// Empty: the kinds the listener's protocol supports.
    pub kinds: Vec<RouteKind>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RouteNamespaces {
    /// `Same` (the default), `All` or `Selector`.
    pub from: Option<String>,
    pub selector: Option<LabelSelector>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RouteKind {
    /// Default `gateway.networking.k8s.io`.
    pub group: Option<String>,
    pub kind: String,
}

impl RouteKind {
    pub fn group(&self) -> &str {
        self.group.as_deref().unwrap_or(GATEWAY_GROUP)
    }
}

/// A `metav1.LabelSelector`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<LabelExpression>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelExpression {
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: String,
    pub values: Vec<String>,
}

impl LabelSelector {
    /// Whether `labels` satisfy every requirement (an empty selector selects everything, as
    /// in Kubernetes). An unknown operator selects nothing.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|e| {
                let value = labels.get(&e.key);
                match e.operator.as_str() {
                    "In" => value.is_some_and(|v| e.values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawGateway {
    metadata: RawMeta,
    spec: RawGatewaySpec,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawMeta {
    name: String,
    namespace: Option<String>,
    generation: Option<i64>,
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawGatewaySpec {
    gateway_class_name: String,
    listeners: Vec<ListenerView>,
    addresses: Vec<RawAddress>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawAddress {
    value: String,
}

impl GatewayView {
    /// From a whole object; Err names the field that could not be read.
    pub fn parse(object: &Value) -> Result<Self, String> {
        let raw: RawGateway = serde_path_to_error::deserialize(object).map_err(|e| {
            format!(
                "Gateway {}: {}: {}",
                object["metadata"]["name"].as_str().unwrap_or("?"),
                e.path(),
                e.inner()
            )
        })?;
        let mut listeners = raw.spec.listeners;
        for l in &mut listeners {
            l.hostname = l
                .hostname
                .take()
                .filter(|h| !h.is_empty())
                .map(|h| h.to_ascii_lowercase());
        }
        Ok(GatewayView {
            namespace: raw.metadata.namespace.unwrap_or_default(),
            name: raw.metadata.name,
            generation: raw.metadata.generation.unwrap_or(0),
            class: raw.spec.gateway_class_name,
            listeners,
            addresses: raw
                .spec
                .addresses
                .into_iter()
                .map(|a| a.value)
                .filter(|v| !v.is_empty())
                .collect(),
        })
    }
}

/// A `ReferenceGrant`: which kinds in which namespaces may refer to what in its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GrantView {
    pub namespace: String,
    pub from: Vec<GrantFrom>,
    pub to: Vec<GrantTo>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct GrantFrom {
    pub group: String,
    pub kind: String,
    pub namespace: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct GrantTo {
    pub group: String,
    pub kind: String,
    /// None: every object of the kind.
    pub name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawGrant {
    metadata: RawMeta,
    spec: RawGrantSpec,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawGrantSpec {
    from: Vec<GrantFrom>,
    to: Vec<GrantTo>,
}

impl GrantView {
    pub fn parse(object: &Value) -> Result<Self, String> {
        let raw: RawGrant = serde_path_to_error::deserialize(object).map_err(|e| {
            format!(
                "ReferenceGrant {}: {}: {}",
                object["metadata"]["name"].as_str().unwrap_or("?"),
                e.path(),
                e.inner()
            )
        })?;
        Ok(GrantView {
            namespace: raw.metadata.namespace.unwrap_or_default(),
            from: raw.spec.from,
            to: raw
                .spec
                .to
                .into_iter()
                .map(|mut t| {
                    t.name = t.name.filter(|n| !n.is_empty());
                    t
                })
                .collect(),
        })
    }

    /// Does this grant let an HTTPRoute in `from_namespace` refer to Service `service` here?
    pub fn allows_route_to_service(&self, from_namespace: &str, service: &str) -> bool {
        let from = self.from.iter().any(|f| {
            f.group == GATEWAY_GROUP && f.kind == "HTTPRoute" && f.namespace == from_namespace
        });
        let to = self.to.iter().any(|t| {
            super::httproute::is_core_group(&t.group)
                && t.kind == "Service"
                && t.name.as_deref().is_none_or(|n| n == service)
        });
        from && to
    }
}

/// A Namespace's labels (for `allowedRoutes.namespaces.from: Selector`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NamespaceView {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

impl NamespaceView {
    pub fn parse(object: &Value) -> Result<Self, String> {
        let raw: RawGrant = serde_json::from_value(object.clone())
            .map_err(|e| format!("Namespace: metadata: {e}"))?;
        let mut labels = raw.metadata.labels;
        // The API server sets this label on every Namespace (1.22+); a fake or an old
        // server may not, and selectors written against it must still work.
        labels
            .entry("kubernetes.io/metadata.name".to_string())
            .or_insert_with(|| raw.metadata.name.clone());
        Ok(NamespaceView {
            name: raw.metadata.name,
            labels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conformance_gateways_read() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures/gateway-api/examples/standard_http-route-attachment_gateway-namespaces.yaml"
        ))
        .unwrap();
        let gw: Value = serde_yaml_ng::from_str(&text).unwrap();
        let view = GatewayView::parse(&gw).unwrap();
        assert_eq!(view.listeners.len(), 1);
        let l = &view.listeners[0];
        assert_eq!((l.port, l.protocol.as_str()), (80, "HTTP"));
        assert_eq!(
            l.allowed_routes.namespaces.from.as_deref(),
            Some("Selector")
        );
        assert_eq!(
            l.allowed_routes.kinds,
            [RouteKind {
                group: None,
                kind: "HTTPRoute".into()
            }]
        );
        assert_eq!(view.class, "foo-lb");
        let selector = l.allowed_routes.namespaces.selector.clone().unwrap();
        let labels = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        assert!(selector.matches(&labels("expose-apps", "true")));
        assert!(!selector.matches(&labels("expose-apps", "false")));
        assert!(!selector.matches(&BTreeMap::new()));
    }

    #[test]
    fn selectors_as_kubernetes_reads_them() {
        let s: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"gateway-conformance": "backend"},
            "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]
        }))
        .unwrap();
        let l = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert!(s.matches(&l(&[("gateway-conformance", "backend")])));
        assert!(!s.matches(&l(&[("gateway-conformance", "backend"), ("env", "prod")])));
        assert!(!s.matches(&l(&[("gateway-conformance", "web")])));
        assert!(LabelSelector::default().matches(&l(&[])));
    }

    #[test]
    fn grants_name_what_they_allow() {
        let g = GrantView::parse(&serde_json::json!({
            "metadata": {"name": "g", "namespace": "web"},
            "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "infra"}],
                     "to": [{"group": "", "kind": "Service", "name": "web-backend"}]}
        }))
        .unwrap();
        assert!(g.allows_route_to_service("infra", "web-backend"));
        assert!(!g.allows_route_to_service("infra", "other"));
        assert!(!g.allows_route_to_service("elsewhere", "web-backend"));
    }
}
