//! From the config's `rollout:` section to a plan and settings the driver can run, with every
//! reference checked before anything starts.

use crate::argo::model::{AnalysisRef, Step};
use crate::argo::{load_files, Manifests};
use crate::config::RolloutConfig;
use weir_proxy::table::spec::TableSpec;

use super::driver::{AbortRamp, RolloutSettings};
use super::plan::Plan;
use super::secrets::Secrets;

pub fn prepare(cfg: &RolloutConfig, table: &TableSpec) -> Result<(Plan, RolloutSettings), String> {
    let manifests = load_files(&cfg.manifests).map_err(|e| e.to_string())?;
    let rollout = match &cfg.name {
        Some(name) => manifests
            .rollout(name)
            .ok_or_else(|| format!("rollout.name: no Rollout {name:?} in {}", files(cfg)))?,
        None => match manifests.rollouts.as_slice() {
            [one] => one,
            [] => return Err(format!("rollout.manifests: no Rollout in {}", files(cfg))),
            many => {
                let names: Vec<&str> = many.iter().map(|r| r.name.as_str()).collect();
                return Err(format!(
                    "rollout.name: the manifests hold several Rollouts ({}); name one",
                    names.join(", ")
                ));
            }
        },
    };
    let plan = Plan::new(rollout.clone(), manifests.templates.clone())
        .with_secrets(Secrets::new(cfg.secrets_dir.clone()));
    // Every Secret key is readable now, or the rollout does not start: better than an
    // analysis failing at its step.
    for (at, secret) in plan.secret_refs() {
        plan.secrets
            .read(&secret)
            .map_err(|e| format!("rollout: {at}: {e}"))?;
    }
    let route = driven_route(cfg, &plan)?;
    match table.routes.iter().find(|r| r.name == route) {
        None => {
            return Err(format!(
                "rollout: Rollout {:?} drives route {route:?}, which the config does not have",
                plan.rollout.name
            ))
        }
        Some(r) if r.canary().is_none() => {
            return Err(format!(
                "rollout: route {route:?} has no canary backend for Rollout {:?} to roll out",
                plan.rollout.name
            ))
        }
        Some(_) => {}
    }
    check_templates(&plan, &manifests)?;
    let settings = RolloutSettings {
        route,
        state_file: cfg.state_file.clone(),
        abort_ramp: cfg
            .abort_ramp
            .map(|(step_bp, interval)| AbortRamp { step_bp, interval }),
        // The owner starts the config's webhooks (they need the runtime and the registry).
        notifier: Default::default(),
    };
    Ok((plan, settings))
}

fn files(cfg: &RolloutConfig) -> String {
    cfg.manifests
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `route:` if given; else the route the Rollout's Services map to (both to the same one).
fn driven_route(cfg: &RolloutConfig, plan: &Plan) -> Result<String, String> {
    if let Some(route) = &cfg.route {
        return Ok(route.clone());
    }
    let (stable, canary) = plan.services();
    let lookup = |service: Option<&str>, field: &str| -> Result<Option<String>, String> {
        match service {
            None => Ok(None),
            Some(s) => cfg.services.get(s).cloned().map(Some).ok_or_else(|| {
                format!("rollout.services: the Rollout's {field} {s:?} is not mapped to a route")
            }),
        }
    };
    let stable_route = lookup(stable, "stable/active Service")?;
    let canary_route = lookup(canary, "canary/preview Service")?;
    match (stable_route, canary_route) {
        (Some(a), Some(b)) if a != b => Err(format!(
            "rollout.services: the stable Service maps to route {a:?} but the canary Service to {b:?}; \
             weir splits within one route"
        )),
        (Some(r), _) | (None, Some(r)) => Ok(r),
        (None, None) => Err("rollout: the Rollout names no Services; set rollout.route".to_string()),
    }
}

fn check_templates(plan: &Plan, manifests: &Manifests) -> Result<(), String> {
    let mut refs: Vec<&AnalysisRef> = plan
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Analysis(a) => Some(a),
            _ => None,
        })
        .collect();
    if let Some(b) = &plan.background {
        refs.push(&b.analysis);
    }
    for r in refs {
        for t in &r.templates {
            if manifests.template(t).is_none() {
                let kind = if t.cluster_scope {
                    "ClusterAnalysisTemplate"
                } else {
                    "AnalysisTemplate"
                };
                return Err(format!(
                    "Rollout {:?} uses {kind} {:?}, which is not among the manifests",
                    plan.rollout.name, t.name
                ));
            }
        }
    }
    Ok(())
}
