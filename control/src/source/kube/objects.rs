//! What weir reads of the watched objects: small typed views, parsed leniently from the JSON the
//! API server sends. Only the fields weir uses are declared; everything else is ignored.

use serde::Deserialize;
use serde_json::Value;

use super::quantity::parse_quantity;

/// The label an EndpointSlice carries naming its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// An Argo Rollout (`rollouts.argoproj.io/v1alpha1`), as far as traffic is concerned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RolloutView {
    pub name: String,
    /// `metadata.generation` (set by the watch, which has the metadata).
    pub generation: i64,
    pub strategy: Strategy,
    /// `status.abort`: the canary gets nothing, at once.
    pub aborted: bool,
    /// `status.phase` (Healthy, Progressing, Paused, Degraded), when the controller set one.
    pub phase: Option<String>,
    /// `status.canary.weights`; None when the Rollout has no traffic routing.
    pub weights: Option<TrafficWeights>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub enum Strategy {
    Canary {
        stable_service: Option<String>,
        canary_service: Option<String>,
    },
    BlueGreen {
        active_service: Option<String>,
        preview_service: Option<String>,
    },
    /// Neither strategy was given (the CRD requires one; such an object cannot be followed).
    #[default]
    Missing,
}

/// `status.canary.weights`. Weights are relative to their sum (Argo's `maxTrafficWeight`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrafficWeights {
    pub canary: WeightDestination,
    pub stable: WeightDestination,
    pub additional: Vec<WeightDestination>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct WeightDestination {
    pub service_name: Option<String>,
    pub weight: f64,
}

/// An SMI TrafficSplit (any of v1alpha1..v1alpha3).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SplitView {
    pub name: String,
    /// `metadata.generation` (set by the watch, which has the metadata).
    pub generation: i64,
    /// `spec.service`: the root Service clients address.
    pub service: Option<String>,
    pub backends: Vec<SplitBackend>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SplitBackend {
    pub service: String,
    pub weight: f64,
}

/// One EndpointSlice (`discovery.k8s.io/v1`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SliceView {
    pub name: String,
    pub namespace: String,
    /// From the `kubernetes.io/service-name` label; None for slices of no Service.
    pub service: Option<String>,
    /// `IPv4`, `IPv6` or `FQDN`.
    pub address_type: String,
    pub ports: Vec<SlicePort>,
    pub endpoints: Vec<SliceEndpoint>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SlicePort {
    pub name: Option<String>,
    pub port: Option<u16>,
    pub protocol: String,
    /// `appProtocol`, copied by the slice controller from the Service port.
    pub app_protocol: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SliceEndpoint {
    pub addresses: Vec<String>,
    /// `conditions.ready`; an unset condition counts as ready, as the API documents.
    pub ready: bool,
}

// ---- raw serde shapes -------------------------------------------------------------------------

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawRollout {
    spec: RawRolloutSpec,
    status: RawRolloutStatus,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawRolloutSpec {
    strategy: RawStrategy,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawStrategy {
    canary: Option<RawCanary>,
    blue_green: Option<RawBlueGreen>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawCanary {
    stable_service: Option<String>,
    canary_service: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawBlueGreen {
    active_service: Option<String>,
    preview_service: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawRolloutStatus {
    abort: bool,
    phase: Option<String>,
    canary: RawCanaryStatus,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawCanaryStatus {
    weights: Option<RawWeights>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawWeights {
    canary: RawDestination,
    stable: RawDestination,
    additional: Vec<RawDestination>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawDestination {
    service_name: Option<String>,
    weight: i64,
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

fn destination(raw: RawDestination, path: &str) -> Result<WeightDestination, String> {
    if raw.weight < 0 {
        return Err(format!("{path}.weight: negative weight {}", raw.weight));
    }
    Ok(WeightDestination {
        service_name: non_empty(raw.service_name),
        weight: raw.weight as f64,
    })
}

impl RolloutView {
    /// `object` is the whole Rollout as JSON; `name` is its `metadata.name`.
    pub fn parse(name: &str, object: &Value) -> Result<Self, String> {
        let raw: RawRollout =
            serde_json::from_value(object.clone()).map_err(|e| format!("Rollout {name}: {e}"))?;
        let strategy = match (raw.spec.strategy.canary, raw.spec.strategy.blue_green) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "Rollout {name}: spec.strategy has both canary and blueGreen"
                ))
            }
            (Some(c), None) => Strategy::Canary {
                stable_service: non_empty(c.stable_service),
                canary_service: non_empty(c.canary_service),
            },
            (None, Some(b)) => Strategy::BlueGreen {
                active_service: non_empty(b.active_service),
                preview_service: non_empty(b.preview_service),
            },
            (None, None) => Strategy::Missing,
        };
        let weights = match raw.status.canary.weights {
            None => None,
            Some(w) => {
                let p = "status.canary.weights";
                Some(TrafficWeights {
                    canary: destination(w.canary, &format!("{p}.canary"))
                        .map_err(|e| format!("Rollout {name}: {e}"))?,
                    stable: destination(w.stable, &format!("{p}.stable"))
                        .map_err(|e| format!("Rollout {name}: {e}"))?,
                    additional: w
                        .additional
                        .into_iter()
                        .enumerate()
                        .map(|(i, d)| destination(d, &format!("{p}.additional[{i}]")))
                        .collect::<Result<_, _>>()
                        .map_err(|e| format!("Rollout {name}: {e}"))?,
                })
            }
        };
        Ok(RolloutView {
            generation: 0,
            name: name.to_string(),
            strategy,
            aborted: raw.status.abort,
            phase: non_empty(raw.status.phase),
            weights,
        })
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawSplit {
    spec: RawSplitSpec,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawSplitSpec {
    service: Option<String>,
    backends: Vec<RawSplitBackend>,
}

#[derive(Deserialize)]
struct RawSplitBackend {
    service: String,
    #[serde(default)]
    weight: Value,
}

/// A TrafficSplit weight: an integer (v1alpha2, v1alpha3) or a quantity string (v1alpha1).
pub fn split_weight(value: &Value) -> Result<f64, String> {
    let w = match value {
        Value::Null => 0.0,
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("bad weight {n}"))?,
        Value::String(s) => parse_quantity(s)?,
        other => {
            return Err(format!(
                "weight must be a number or a quantity, got {other}"
            ))
        }
    };
    if w < 0.0 || !w.is_finite() {
        return Err(format!("weight {value} is negative"));
    }
    Ok(w)
}

impl SplitView {
    pub fn parse(name: &str, object: &Value) -> Result<Self, String> {
        let raw: RawSplit = serde_json::from_value(object.clone())
            .map_err(|e| format!("TrafficSplit {name}: {e}"))?;
        let backends = raw
            .spec
            .backends
            .into_iter()
            .enumerate()
            .map(|(i, b)| {
                let weight = split_weight(&b.weight)
                    .map_err(|e| format!("TrafficSplit {name}: spec.backends[{i}].weight: {e}"))?;
                Ok(SplitBackend {
                    service: b.service,
                    weight,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(SplitView {
            generation: 0,
            name: name.to_string(),
            service: non_empty(raw.spec.service),
            backends,
        })
    }
}

impl SliceView {
    pub fn from_slice(slice: &k8s_openapi::api::discovery::v1::EndpointSlice) -> Self {
        let name = slice.metadata.name.clone().unwrap_or_default();
        let service = slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SERVICE_NAME_LABEL))
            .cloned();
        let ports = slice
            .ports
            .iter()
            .flatten()
            .map(|p| SlicePort {
                name: p.name.clone().filter(|n| !n.is_empty()),
                port: p
                    .port
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|n| *n != 0),
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".to_string()),
                app_protocol: p.app_protocol.clone().filter(|a| !a.is_empty()),
            })
            .collect();
        let endpoints = slice
            .endpoints
            .iter()
            .flatten()
            .map(|e| SliceEndpoint {
                addresses: e.addresses.clone(),
                ready: e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true),
            })
            .collect();
        SliceView {
            name,
            namespace: slice.metadata.namespace.clone().unwrap_or_default(),
            service,
            address_type: slice.address_type.clone(),
            ports,
            endpoints,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_yaml_ng::from_str(text).unwrap()
    }

    #[test]
    fn live_fixtures_parse() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures/argo-rollouts/live"
        );
        let read = |f: &str| yaml(&std::fs::read_to_string(format!("{dir}/{f}")).unwrap());

        let r = RolloutView::parse("w", &read("canary_canary-rollout5.yaml")).unwrap();
        assert_eq!(
            r.strategy,
            Strategy::Canary {
                stable_service: Some("canary-demo-stable".into()),
                canary_service: Some("canary-demo-preview".into()),
            }
        );
        let w = r.weights.unwrap();
        assert_eq!((w.canary.weight, w.stable.weight), (20.0, 60.0));
        assert!(!r.aborted);

        let r = RolloutView::parse("c", &read("canary_canary-rollout.yaml")).unwrap();
        assert_eq!(r.weights, None);

        let r = RolloutView::parse("a", &read("rollout-aborted_rollout.yaml")).unwrap();
        assert!(r.aborted);

        let r = RolloutView::parse("b", &read("blue-green_bluegreen-rollout.yaml")).unwrap();
        assert_eq!(
            r.strategy,
            Strategy::BlueGreen {
                active_service: Some("bluegreen-demo".into()),
                preview_service: Some("bluegreen-demo-preview".into()),
            }
        );
    }

    #[test]
    fn malformed_rollout_is_an_error() {
        let bad = yaml("spec: {strategy: {canary: {stableService: 7}}}");
        assert!(RolloutView::parse("x", &bad).is_err());
        let bad = yaml("status: {canary: {weights: {canary: {weight: -1}}}}");
        assert!(RolloutView::parse("x", &bad).is_err());
    }

    #[test]
    fn split_versions_parse() {
        let v1 = yaml(
            "spec: {service: root, backends: [{service: c, weight: 500m}, {service: s, weight: '1'}]}",
        );
        let s = SplitView::parse("t", &v1).unwrap();
        assert_eq!(s.backends[0].weight, 0.5);
        assert_eq!(s.backends[1].weight, 1.0);
        let v3 = yaml(
            "spec: {service: root, backends: [{service: c, weight: 5}, {service: s, weight: 95}]}",
        );
        let s = SplitView::parse("t", &v3).unwrap();
        assert_eq!((s.backends[0].weight, s.backends[1].weight), (5.0, 95.0));
        let bad = yaml("spec: {backends: [{service: c, weight: 5x}]}");
        assert!(SplitView::parse("t", &bad).is_err());
    }
}
