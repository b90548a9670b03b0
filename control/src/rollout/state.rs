//! A rollout's state: the little that the step machine must remember, and that survives a
//! restart. Everything else (weight, header routes, mirror) is replayed from the steps.

use serde::{Deserialize, Serialize};

/// Argo's rollout phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Moving through the steps.
    Progressing,
    /// Waiting: a pause step, an inconclusive analysis, or an operator.
    Paused,
    /// Fully promoted (or nothing to do): the canary is the new stable.
    Healthy,
    /// Aborted: canary weight 0, managed routes removed.
    Degraded,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Progressing => "Progressing",
            Phase::Paused => "Paused",
            Phase::Healthy => "Healthy",
            Phase::Degraded => "Degraded",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutState {
    /// The Rollout this state belongs to.
    pub rollout: String,
    /// Identity of the canary version being rolled out (a digest of its backend).
    pub revision: String,
    pub phase: Phase,
    pub message: String,
    /// Index of the current step; `steps.len()` once all are done.
    pub step_index: usize,
    /// Full promotion happened: the canary version is now the stable one.
    pub promoted: bool,
    pub aborted: bool,
    /// When the current step began (unix ms): a pause keeps its deadline across a restart.
    pub step_started_ms: u64,
    /// A pause (or inconclusive analysis) waiting for `promote`.
    pub waiting_for_promote: bool,
}

impl RolloutState {
    pub fn new(rollout: &str, revision: &str, now_ms: u64) -> Self {
        RolloutState {
            rollout: rollout.to_string(),
            revision: revision.to_string(),
            phase: Phase::Progressing,
            message: String::new(),
            step_index: 0,
            promoted: false,
            aborted: false,
            step_started_ms: now_ms,
            waiting_for_promote: false,
        }
    }
}
