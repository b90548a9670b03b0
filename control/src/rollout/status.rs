//! The rollout as JSON: what `GET /rollout` answers and `weir status` draws.

use serde_json::{json, Value};

use super::machine::Traffic;
use super::plan::{describe, Plan};
use super::state::RolloutState;

pub struct StatusView<'a> {
    pub plan: &'a Plan,
    pub state: &'a RolloutState,
    pub traffic: &'a Traffic,
    pub route: &'a str,
    pub step_run: Option<(usize, Value)>,
    pub background: Option<Value>,
}

pub fn status_json(v: &StatusView) -> Value {
    let steps: Vec<Value> = v
        .plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let state = if v.state.promoted || i < v.state.step_index {
                "done"
            } else if i == v.state.step_index && !v.state.aborted {
                "current"
            } else {
                "pending"
            };
            json!({"index": i + 1, "step": describe(s), "state": state})
        })
        .collect();
    let (stable_service, canary_service) = v.plan.services();
    json!({
        "rollout": v.plan.rollout.name,
        "strategy": v.plan.strategy,
        "phase": v.state.phase.as_str(),
        "message": v.state.message,
        "step": (v.state.step_index + 1).min(v.plan.steps.len().max(1)),
        "step_count": v.plan.steps.len(),
        "steps": steps,
        "route": v.route,
        "services": {"stable": stable_service, "canary": canary_service},
        "weights": {
            "canary": v.traffic.weight_bp as f64 / 100.0,
            "stable": 100.0 - v.traffic.weight_bp as f64 / 100.0,
        },
        "header_routes": v.traffic.header_routes.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        "mirror": v.traffic.mirror.as_ref().map(|(n, p, _)| json!({"name": n, "percent": *p as f64 / 100.0})),
        "promoted": v.state.promoted,
        "aborted": v.state.aborted,
        "revision": v.state.revision,
        "analysis": {
            "step": v.step_run.as_ref().map(|(i, s)| json!({"step": i + 1, "run": s})),
            "background": v.background,
        },
    })
}
