//! The rollout as people and programs read it: what `GET /rollout` answers (as JSON), what
//! `weir status` draws and the demo prints — one typed value, so none of them reads by string
//! keys and the wire format cannot drift from what the driver knows.

use serde::{Deserialize, Serialize};

use super::machine::Traffic;
use super::plan::{describe, Plan};
use super::state::{Phase, RolloutState};
use crate::analysis::RunStatus;
use crate::notify::WebhookStatus;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RolloutStatus {
    pub rollout: String,
    /// "canary" or "blueGreen".
    pub strategy: String,
    pub phase: Phase,
    pub message: String,
    /// The current step, 1-based (the last one once all are done).
    pub step: usize,
    pub step_count: usize,
    pub steps: Vec<StepStatus>,
    /// The weir route the rollout drives.
    pub route: String,
    pub services: Services,
    /// In force, in percent.
    pub weights: Weights,
    /// The managed header routes in force, by name.
    pub header_routes: Vec<String>,
    pub mirror: Option<Mirror>,
    pub promoted: bool,
    pub aborted: bool,
    pub revision: String,
    pub analysis: Analyses,
    /// Why the state file could not be written, while it cannot: the rollout goes on in
    /// memory, and a restart would resume from the last state saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_file_error: Option<String>,
    /// Each webhook's deliveries (`notifications:`), when there are any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<WebhookStatus>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepStatus {
    /// 1-based.
    pub index: usize,
    /// As Argo spells it: "setWeight: 20", "pause: 30s", "analysis: …".
    pub step: String,
    pub state: StepState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepState {
    Done,
    Current,
    Pending,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Services {
    pub stable: Option<String>,
    pub canary: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    pub canary: f64,
    pub stable: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mirror {
    pub name: String,
    pub percent: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Analyses {
    /// The analysis of the current analysis step, if one runs.
    pub step: Option<StepRun>,
    /// The background analysis, once its starting step is reached.
    pub background: Option<RunStatus>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRun {
    /// The step it belongs to, 1-based.
    pub step: usize,
    pub run: RunStatus,
}

/// One rollout in `GET /rollouts`: what `weir status` lists, a line each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RolloutSummary {
    pub name: String,
    pub phase: Phase,
    pub step: usize,
    pub step_count: usize,
    pub route: String,
    /// In force, in percent.
    pub canary_weight: f64,
    pub aborted: bool,
    pub message: String,
}

impl RolloutStatus {
    pub fn summary(&self) -> RolloutSummary {
        RolloutSummary {
            name: self.rollout.clone(),
            phase: self.phase,
            step: self.step,
            step_count: self.step_count,
            route: self.route.clone(),
            canary_weight: self.weights.canary,
            aborted: self.aborted,
            message: self.message.clone(),
        }
    }

    /// Every analysis run the status shows (the step's, then the background one).
    pub fn runs(&self) -> impl Iterator<Item = &RunStatus> {
        let step = self.analysis.step.as_ref().map(|s| &s.run);
        step.into_iter().chain(self.analysis.background.as_ref())
    }
}

pub struct StatusView<'a> {
    pub plan: &'a Plan,
    pub state: &'a RolloutState,
    pub traffic: &'a Traffic,
    pub route: &'a str,
    pub step_run: Option<(usize, RunStatus)>,
    pub background: Option<RunStatus>,
    pub state_file_error: Option<&'a str>,
}

pub fn status(v: StatusView) -> RolloutStatus {
    let steps = v
        .plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let state = if v.state.promoted || i < v.state.step_index {
                StepState::Done
            } else if i == v.state.step_index && !v.state.aborted {
                StepState::Current
            } else {
                StepState::Pending
            };
            StepStatus {
                index: i + 1,
                step: describe(s),
                state,
            }
        })
        .collect();
    let (stable, canary) = v.plan.services();
    let canary_percent = v.traffic.weight_bp as f64 / 100.0;
    RolloutStatus {
        rollout: v.plan.rollout.name.clone(),
        strategy: v.plan.strategy.to_string(),
        phase: v.state.phase,
        message: v.state.message.clone(),
        step: (v.state.step_index + 1).min(v.plan.steps.len().max(1)),
        step_count: v.plan.steps.len(),
        steps,
        route: v.route.to_string(),
        services: Services {
            stable: stable.map(str::to_string),
            canary: canary.map(str::to_string),
        },
        weights: Weights {
            canary: canary_percent,
            stable: 100.0 - canary_percent,
        },
        header_routes: v
            .traffic
            .header_routes
            .iter()
            .map(|(n, _)| n.clone())
            .collect(),
        mirror: v
            .traffic
            .mirror
            .as_ref()
            .map(|(name, percent_bp, _)| Mirror {
                name: name.clone(),
                percent: *percent_bp as f64 / 100.0,
            }),
        promoted: v.state.promoted,
        aborted: v.state.aborted,
        revision: v.state.revision.clone(),
        analysis: Analyses {
            step: v.step_run.map(|(i, run)| StepRun { step: i + 1, run }),
            background: v.background,
        },
        state_file_error: v.state_file_error.map(str::to_string),
        notifications: Vec::new(),
    }
}
