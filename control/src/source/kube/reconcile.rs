//! The pure part: the watched objects as last seen → the table to apply. No I/O, no clock.

use std::collections::BTreeSet;

use weir_proxy::table::spec::{BackendSpec, Origin, TableSpec, Target, MAX_WEIGHT_BP, STABLE};

use super::certificates::ListenerCertificate;
pub use super::endpoints::{resolve, service_addresses, Endpoints};
use super::gateway::{self, RouteStatus};
use super::gateway_status::GatewayReport;
use super::objects::{RolloutView, SplitView, Strategy, TrafficWeights};
pub use super::observed::Observed;
use crate::config::{KubeSourceConfig, WeightSource};

/// What a reconcile decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired {
    pub spec: TableSpec,
    /// One line describing the decision, for a log line per change.
    pub summary: String,
    /// Things worth a warning (logged once per change of the set).
    pub warnings: Vec<String>,
    /// For an HTTPRoute source: each HTTPRoute's status under each parent that is this weir.
    pub statuses: Vec<RouteStatus>,
    /// For an edge weir: the status of the Gateway it serves.
    pub gateway: Option<GatewayReport>,
    /// For an edge weir: its Gateway's HTTPS listeners' certificates, to install.
    pub certificates: Option<Vec<ListenerCertificate>>,
}

/// Argo's decision reduced to what the route needs.
#[derive(Clone, Debug, PartialEq)]
struct Decision {
    what: String,
    /// The object whose decision this is, and its generation (shown by /routes).
    origin: Option<Origin>,
    stable_service: Option<String>,
    canary_service: Option<String>,
    canary_bp: u16,
}

/// `part / total` in basis points, rounded to nearest; 0 when the total is 0.
pub fn basis_points(part: f64, total: f64) -> u16 {
    if total <= 0.0 || part <= 0.0 {
        return 0;
    }
    let bp = (part / total * f64::from(MAX_WEIGHT_BP)).round();
    bp.clamp(0.0, f64::from(MAX_WEIGHT_BP)) as u16
}

fn percent(bp: u16) -> String {
    format!("{}.{:02}%", bp / 100, bp % 100)
}

/// Computes the table. Err = nothing sensible can be applied (the table in force stays).
pub fn reconcile(cfg: &KubeSourceConfig, obs: &Observed) -> Result<Desired, String> {
    let mut warnings = Vec::new();
    let decision = match &cfg.weights {
        WeightSource::Rollout { name } => {
            let live: Vec<&RolloutView> =
                obs.rollouts.values().filter(|r| &r.name == name).collect();
            rollout_decision(cfg, live, obs, &format!("Rollout {name}"), &mut warnings)?
        }
        WeightSource::RolloutSelector { labels } => {
            let live: Vec<&RolloutView> = obs.rollouts.values().collect();
            rollout_decision(
                cfg,
                live,
                obs,
                &format!("Rollouts {labels:?}"),
                &mut warnings,
            )?
        }
        WeightSource::TrafficSplit { name, .. } => {
            let split = obs.splits.values().find(|s| &s.name == name);
            split_decision(cfg, split, name, &mut warnings)?
        }
        WeightSource::HttpRoutes(source) => {
            let (spec, translated) = gateway::translate(cfg, source, obs);
            return Ok(Desired {
                spec,
                summary: translated.summary,
                warnings: translated.warnings,
                statuses: translated.statuses,
                gateway: translated.gateway,
                certificates: translated.certificates,
            });
        }
    };
    build(cfg, obs, decision, warnings)
}

fn rollout_decision(
    cfg: &KubeSourceConfig,
    live: Vec<&RolloutView>,
    obs: &Observed,
    wanted: &str,
    warnings: &mut Vec<String>,
) -> Result<Decision, String> {
    let rollout = match live.as_slice() {
        [one] => *one,
        [] => {
            // Gone (or never there): everything to stable, on the last known stable Service.
            let stable = obs
                .deleted_rollout
                .as_ref()
                .and_then(|r| services(cfg, r).0)
                .or_else(|| cfg.stable_service.clone());
            let what = match &obs.deleted_rollout {
                Some(r) => format!("Rollout {} deleted", r.name),
                None => format!("{wanted} not found"),
            };
            warnings.push(format!("{what}: all traffic to stable"));
            return Ok(Decision {
                what,
                origin: None,
                stable_service: stable,
                canary_service: None,
                canary_bp: 0,
            });
        }
        many => {
            let names: Vec<&str> = many.iter().map(|r| r.name.as_str()).collect();
            return Err(format!(
                "{wanted}: {} Rollouts match ({}); one route follows one Rollout",
                names.len(),
                names.join(", ")
            ));
        }
    };
    let (stable_service, canary_service) = services(cfg, rollout);
    let phase = rollout.phase.as_deref().unwrap_or("no phase");
    let mut what = format!("Rollout {} ({phase})", rollout.name);
    let canary_bp = match (&rollout.strategy, &rollout.weights) {
        (Strategy::Missing, _) => {
            return Err(format!(
                "Rollout {}: spec.strategy has neither canary nor blueGreen",
                rollout.name
            ))
        }
        _ if rollout.aborted => {
            what.push_str(": aborted, canary 0%");
            0
        }
        (Strategy::BlueGreen { .. }, _) => {
            what.push_str(": blue-green, all traffic to active");
            0
        }
        (Strategy::Canary { .. }, Some(w)) => {
            let bp = weights_bp(w, &rollout.name, warnings);
            what.push_str(&format!(
                ": canary {} (weights canary {} / stable {}{})",
                percent(bp),
                w.canary.weight,
                w.stable.weight,
                w.additional
                    .iter()
                    .map(|a| format!(" / additional {}", a.weight))
                    .collect::<String>()
            ));
            bp
        }
        (Strategy::Canary { .. }, None) => {
            warnings.push(format!(
                "Rollout {} has no status.canary.weights (no trafficRouting?): all traffic to stable",
                rollout.name
            ));
            what.push_str(": no weights, all traffic to stable");
            0
        }
    };
    Ok(Decision {
        what,
        origin: Some(Origin {
            kind: "Rollout".to_string(),
            namespace: cfg.namespace.clone(),
            name: rollout.name.clone(),
            generation: rollout.generation,
        }),
        stable_service,
        canary_service,
        canary_bp,
    })
}

/// (stable, canary) Services of a Rollout: its spec first, then the config, then the Services
/// named in `status.canary.weights`.
fn services(cfg: &KubeSourceConfig, r: &RolloutView) -> (Option<String>, Option<String>) {
    let (stable, canary) = match &r.strategy {
        Strategy::Canary {
            stable_service,
            canary_service,
        } => (stable_service.clone(), canary_service.clone()),
        Strategy::BlueGreen {
            active_service,
            preview_service,
        } => (active_service.clone(), preview_service.clone()),
        Strategy::Missing => (None, None),
    };
    let from_weights = |f: fn(&TrafficWeights) -> Option<String>| r.weights.as_ref().and_then(f);
    (
        stable
            .or_else(|| cfg.stable_service.clone())
            .or_else(|| from_weights(|w| w.stable.service_name.clone())),
        canary
            .or_else(|| cfg.canary_service.clone())
            .or_else(|| from_weights(|w| w.canary.service_name.clone())),
    )
}

fn weights_bp(w: &TrafficWeights, name: &str, warnings: &mut Vec<String>) -> u16 {
    let additional: f64 = w.additional.iter().map(|a| a.weight).sum();
    let total = w.canary.weight + w.stable.weight + additional;
    if !w.additional.is_empty() && additional > 0.0 {
        let names: Vec<&str> = w
            .additional
            .iter()
            .map(|a| a.service_name.as_deref().unwrap_or("?"))
            .collect();
        warnings.push(format!(
            "Rollout {name}: additional destinations ({}) are not routed by weir; their share goes to stable",
            names.join(", ")
        ));
    }
    if total <= 0.0 {
        warnings.push(format!(
            "Rollout {name}: weights sum to 0: all traffic to stable"
        ));
    }
    basis_points(w.canary.weight, total)
}

fn split_decision(
    cfg: &KubeSourceConfig,
    split: Option<&SplitView>,
    name: &str,
    warnings: &mut Vec<String>,
) -> Result<Decision, String> {
    let stable = cfg.stable_service.clone();
    let Some(split) = split else {
        warnings.push(format!(
            "TrafficSplit {name} not found: all traffic to stable"
        ));
        return Ok(Decision {
            what: format!("TrafficSplit {name} not found"),
            origin: None,
            stable_service: stable,
            canary_service: cfg.canary_service.clone(),
            canary_bp: 0,
        });
    };
    let stable_name = stable.clone().unwrap_or_default();
    let canary = match &cfg.canary_service {
        Some(c) => Some(c.clone()),
        None => {
            let others: BTreeSet<&str> = split
                .backends
                .iter()
                .map(|b| b.service.as_str())
                .filter(|s| *s != stable_name)
                .collect();
            match others.len() {
                0 => None,
                1 => others.into_iter().next().map(str::to_string),
                _ => {
                    return Err(format!(
                        "TrafficSplit {name}: several backends besides the stable Service {stable_name} ({}); set canary_service",
                        others.into_iter().collect::<Vec<_>>().join(", ")
                    ))
                }
            }
        }
    };
    let total: f64 = split.backends.iter().map(|b| b.weight).sum();
    let weight_of = |svc: &str| -> f64 {
        split
            .backends
            .iter()
            .filter(|b| b.service == svc)
            .map(|b| b.weight)
            .sum()
    };
    let canary_w = canary.as_deref().map(weight_of).unwrap_or(0.0);
    let stable_w = weight_of(&stable_name);
    if total > canary_w + stable_w {
        warnings.push(format!(
            "TrafficSplit {name}: backends other than {stable_name} and the canary get their share sent to stable"
        ));
    }
    if total <= 0.0 {
        warnings.push(format!(
            "TrafficSplit {name}: weights sum to 0: all traffic to stable"
        ));
    }
    let bp = basis_points(canary_w, total);
    Ok(Decision {
        what: format!(
            "TrafficSplit {name}: canary {} (canary {canary_w} / stable {stable_w} of {total})",
            percent(bp)
        ),
        origin: Some(Origin {
            kind: "TrafficSplit".to_string(),
            namespace: cfg.namespace.clone(),
            name: name.to_string(),
            generation: split.generation,
        }),
        stable_service: stable,
        canary_service: canary,
        canary_bp: bp,
    })
}

fn build(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    decision: Decision,
    mut warnings: Vec<String>,
) -> Result<Desired, String> {
    let mut spec = cfg.base.clone();
    let route = spec
        .routes
        .iter_mut()
        .find(|r| r.name == cfg.route)
        .ok_or_else(|| format!("no route named {:?} in the config", cfg.route))?;
    let mut summary = decision.what.clone();
    route.origin = decision.origin.clone();

    if let Some(svc) = &decision.stable_service {
        let addresses = service_addresses(cfg, obs, svc, &mut warnings);
        if addresses.is_empty() {
            return Err(format!(
                "{}: stable Service {svc} has no ready endpoints; keeping the table in force",
                decision.what
            ));
        }
        summary.push_str(&format!("; stable {svc}: {}", addresses.join(" ")));
        if let Some(stable) = route.backend_mut(STABLE) {
            stable.addresses = addresses;
        }
    }

    let template: Option<BackendSpec> = route.canary().or(route.backend(STABLE)).cloned();
    let mut canary_bp = decision.canary_bp;
    match &decision.canary_service {
        Some(svc) => {
            let addresses = service_addresses(cfg, obs, svc, &mut warnings);
            if addresses.is_empty() {
                if canary_bp > 0 {
                    warnings.push(format!(
                        "canary Service {svc} has no ready endpoints: its share goes to stable"
                    ));
                }
                summary.push_str(&format!("; canary {svc}: no ready endpoints"));
                route.set_canary(None);
            } else {
                summary.push_str(&format!("; canary {svc}: {}", addresses.join(" ")));
                let settings = template.unwrap_or_else(|| BackendSpec::new::<String>([]));
                route.set_canary(Some(BackendSpec {
                    addresses,
                    ..settings
                }));
            }
        }
        None => {
            if route.canary().is_none() && canary_bp > 0 {
                warnings.push(format!(
                    "route {}: no canary Service known and none in the config: all traffic to stable",
                    cfg.route
                ));
            }
        }
    }
    if route.canary().is_none() {
        canary_bp = 0;
        // Nothing to send them to: header routes and the mirror towards canary go too.
        route.header_routes.retain(|h| h.target != Target::Canary);
        route.mirror = None;
    }
    route.set_canary_weight_bp(canary_bp);
    Ok(Desired {
        spec,
        summary,
        warnings,
        statuses: Vec::new(),
        gateway: None,
        certificates: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PortRef;
    use crate::source::kube::objects::{
        SliceEndpoint, SlicePort, SliceView, SplitBackend, WeightDestination,
    };
    use crate::source::kube::SmiVersion;
    use weir_proxy::table::spec::RouteSpec;

    fn base() -> TableSpec {
        let r = RouteSpec::new("web", BackendSpec::new(["10.9.9.9:1"]));
        TableSpec {
            routes: vec![
                r,
                RouteSpec::new("other", BackendSpec::new(["127.0.0.1:9"])),
            ],
        }
    }

    fn cfg(weights: WeightSource) -> KubeSourceConfig {
        KubeSourceConfig::new("ns", weights, "web", base())
    }

    fn slice(name: &str, svc: &str, eps: &[(&str, bool)]) -> SliceView {
        SliceView {
            name: name.into(),
            namespace: "ns".into(),
            service: Some(svc.into()),
            address_type: "IPv4".into(),
            ports: vec![SlicePort {
                name: Some("http".into()),
                port: Some(8080),
                protocol: "TCP".into(),
                app_protocol: None,
            }],
            endpoints: eps
                .iter()
                .map(|(a, ready)| SliceEndpoint {
                    addresses: vec![a.to_string()],
                    ready: *ready,
                })
                .collect(),
        }
    }

    fn canary_rollout(name: &str, canary: i64, stable: i64) -> RolloutView {
        RolloutView {
            name: name.into(),
            generation: 1,
            strategy: Strategy::Canary {
                stable_service: Some("s".into()),
                canary_service: Some("c".into()),
            },
            aborted: false,
            phase: Some("Paused".into()),
            weights: Some(TrafficWeights {
                canary: WeightDestination {
                    service_name: Some("c".into()),
                    weight: canary as f64,
                },
                stable: WeightDestination {
                    service_name: Some("s".into()),
                    weight: stable as f64,
                },
                additional: vec![],
            }),
        }
    }

    fn observed(rollouts: Vec<RolloutView>) -> Observed {
        let mut obs = Observed::default();
        for r in rollouts {
            obs.rollouts.insert(r.name.clone(), r);
        }
        for s in [
            slice("s-1", "s", &[("10.0.0.1", true), ("10.0.0.2", false)]),
            slice("s-2", "s", &[("10.0.0.3", true)]),
            slice("c-1", "c", &[("10.0.1.1", true)]),
            slice("x-1", "unrelated", &[("10.0.2.1", true)]),
        ] {
            obs.slices.insert(format!("ns/{}", s.name), s);
        }
        obs
    }

    fn web(d: &Desired) -> &RouteSpec {
        &d.spec.routes[0]
    }

    #[test]
    fn weights_are_relative_to_their_sum() {
        let c = cfg(WeightSource::Rollout { name: "r".into() });
        let d = reconcile(&c, &observed(vec![canary_rollout("r", 5, 15)])).unwrap();
        assert_eq!(web(&d).canary_weight_bp(), 2500);
        let d = reconcile(&c, &observed(vec![canary_rollout("r", 20, 80)])).unwrap();
        assert_eq!(web(&d).canary_weight_bp(), 2000);
        let d = reconcile(&c, &observed(vec![canary_rollout("r", 1, 2)])).unwrap();
        assert_eq!(web(&d).canary_weight_bp(), 3333);
        assert_eq!(basis_points(0.0, 0.0), 0);
        assert_eq!(basis_points(7.0, 7.0), 10_000);
    }

    #[test]
    fn ready_endpoints_become_addresses_and_other_routes_stay() {
        let c = cfg(WeightSource::Rollout { name: "r".into() });
        let d = reconcile(&c, &observed(vec![canary_rollout("r", 20, 80)])).unwrap();
        assert_eq!(
            web(&d).stable().unwrap().addresses,
            ["10.0.0.1:8080", "10.0.0.3:8080"]
        );
        assert_eq!(web(&d).canary().unwrap().addresses, ["10.0.1.1:8080"]);
        assert_eq!(d.spec.routes[1], base().routes[1]);
    }

    #[test]
    fn abort_sends_canary_to_zero() {
        let c = cfg(WeightSource::Rollout { name: "r".into() });
        let mut r = canary_rollout("r", 50, 50);
        r.aborted = true;
        let d = reconcile(&c, &observed(vec![r])).unwrap();
        assert_eq!(web(&d).canary_weight_bp(), 0);
        assert!(d.summary.contains("aborted"), "{}", d.summary);
    }

    #[test]
    fn no_weights_means_stable_with_a_warning() {
        let c = cfg(WeightSource::Rollout { name: "r".into() });
        let mut r = canary_rollout("r", 50, 50);
        r.weights = None;
        let d = reconcile(&c, &observed(vec![r])).unwrap();
        assert_eq!(web(&d).canary_weight_bp(), 0);
        assert_eq!(
            web(&d).stable().unwrap().addresses,
            ["10.0.0.1:8080", "10.0.0.3:8080"]
        );
        assert!(d
            .warnings
            .iter()
            .any(|w| w.contains("no status.canary.weights")));
    }

    #[test]
    fn deleted_rollout_falls_back_to_stable() {
        let c = cfg(WeightSource::Rollout { name: "r".into() });
        let mut obs = observed(vec![]);
        obs.deleted_rollout = Some(canary_rollout("r", 50, 50));
        let d = reconcile(&c, &obs).unwrap();
        assert_eq!(web(&d).canary_weight_bp(), 0);
        assert!(web(&d).canary().is_none());
        assert_eq!(
            web(&d).stable().unwrap().addresses,
            ["10.0.0.1:8080", "10.0.0.3:8080"]
        );
        // Never seen at all: the base table's stable addresses.
        let d = reconcile(&c, &observed(vec![])).unwrap();
        assert_eq!(web(&d).stable().unwrap().addresses, ["10.9.9.9:1"]);
    }

    #[test]
    fn blue_green_sends_everything_to_active() {
        let c = cfg(WeightSource::Rollout { name: "b".into() });
        let mut r = canary_rollout("b", 50, 50);
        r.strategy = Strategy::BlueGreen {
            active_service: Some("c".into()),
            preview_service: Some("s".into()),
        };
        let d = reconcile(&c, &observed(vec![r])).unwrap();
        assert_eq!(web(&d).stable().unwrap().addresses, ["10.0.1.1:8080"]);
        assert_eq!(web(&d).canary_weight_bp(), 0);
    }

    #[test]
    fn no_ready_stable_endpoints_keeps_the_table() {
        let c = cfg(WeightSource::Rollout { name: "r".into() });
        let mut obs = observed(vec![canary_rollout("r", 20, 80)]);
        obs.slices.retain(|_, s| s.service.as_deref() != Some("s"));
        assert!(reconcile(&c, &obs).is_err());
        // No ready canary endpoints: canary dropped, its share to stable.
        let mut obs = observed(vec![canary_rollout("r", 20, 80)]);
        obs.slices.get_mut("ns/c-1").unwrap().endpoints[0].ready = false;
        let d = reconcile(&c, &obs).unwrap();
        assert!(web(&d).canary().is_none());
        assert_eq!(web(&d).canary_weight_bp(), 0);
    }

    #[test]
    fn several_matching_rollouts_are_refused() {
        let c = cfg(WeightSource::RolloutSelector {
            labels: "app=x".into(),
        });
        let obs = observed(vec![canary_rollout("a", 1, 1), canary_rollout("b", 1, 1)]);
        let err = reconcile(&c, &obs).unwrap_err();
        assert!(err.contains("a, b"), "{err}");
    }

    #[test]
    fn ports_by_name_and_number() {
        let mut c = cfg(WeightSource::Rollout { name: "r".into() });
        c.ports.insert("s".into(), PortRef::Number(9000));
        c.default_port = Some(PortRef::Name("http".into()));
        let d = reconcile(&c, &observed(vec![canary_rollout("r", 1, 1)])).unwrap();
        assert_eq!(
            web(&d).stable().unwrap().addresses,
            ["10.0.0.1:9000", "10.0.0.3:9000"]
        );
        assert_eq!(web(&d).canary().unwrap().addresses, ["10.0.1.1:8080"]);
        c.default_port = Some(PortRef::Name("grpc".into()));
        let d = reconcile(&c, &observed(vec![canary_rollout("r", 1, 1)])).unwrap();
        assert!(web(&d).canary().is_none());
        assert!(d.warnings.iter().any(|w| w.contains("no port named")));
    }

    #[test]
    fn traffic_split_weights() {
        let mut c = cfg(WeightSource::TrafficSplit {
            name: "t".into(),
            version: SmiVersion::V1alpha1,
        });
        c.stable_service = Some("s".into());
        let mut obs = observed(vec![]);
        obs.splits.insert(
            "t".into(),
            SplitView {
                name: "t".into(),
                generation: 1,
                service: Some("root".into()),
                backends: vec![
                    SplitBackend {
                        service: "c".into(),
                        weight: 0.25,
                    },
                    SplitBackend {
                        service: "s".into(),
                        weight: 0.75,
                    },
                ],
            },
        );
        let d = reconcile(&c, &obs).unwrap();
        assert_eq!(web(&d).canary_weight_bp(), 2500);
        assert_eq!(web(&d).canary().unwrap().addresses, ["10.0.1.1:8080"]);
    }

    #[test]
    fn ipv6_addresses_are_bracketed() {
        let c = cfg(WeightSource::Rollout { name: "r".into() });
        let mut obs = observed(vec![canary_rollout("r", 1, 1)]);
        let s = obs.slices.get_mut("ns/c-1").unwrap();
        s.address_type = "IPv6".into();
        s.endpoints[0].addresses = vec!["fd00::1".into()];
        let d = reconcile(&c, &obs).unwrap();
        assert_eq!(web(&d).canary().unwrap().addresses, ["[fd00::1]:8080"]);
    }
}
