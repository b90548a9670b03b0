//! What a rollout tells the people who subscribed: one event, as plain data.

use serde::Serialize;

/// The events a webhook can subscribe to, spelled as in the config (`events: [aborted]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// A step begins (the rollout moved on to it).
    StepReached,
    /// The rollout waits: a pause step, an inconclusive analysis, an operator's hold.
    Paused,
    /// An operator promoted it past its pause or analysis (`weir promote`).
    Promoted,
    /// Every step done: the canary is the new stable.
    FullyPromoted,
    /// An analysis run ended Failed (or in Error).
    AnalysisFailed,
    /// An analysis run ended Inconclusive.
    AnalysisInconclusive,
    /// Aborted: by an analysis, or an operator.
    Aborted,
    /// An abort's gradual ramp reached weight 0.
    AbortRampFinished,
    /// The state file cannot be written: a restart would resume from the last state saved.
    StateFileError,
}

impl EventKind {
    pub const ALL: [EventKind; 9] = [
        EventKind::StepReached,
        EventKind::Paused,
        EventKind::Promoted,
        EventKind::FullyPromoted,
        EventKind::AnalysisFailed,
        EventKind::AnalysisInconclusive,
        EventKind::Aborted,
        EventKind::AbortRampFinished,
        EventKind::StateFileError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::StepReached => "step-reached",
            EventKind::Paused => "paused",
            EventKind::Promoted => "promoted",
            EventKind::FullyPromoted => "fully-promoted",
            EventKind::AnalysisFailed => "analysis-failed",
            EventKind::AnalysisInconclusive => "analysis-inconclusive",
            EventKind::Aborted => "aborted",
            EventKind::AbortRampFinished => "abort-ramp-finished",
            EventKind::StateFileError => "state-file-error",
        }
    }

    pub fn parse(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// One event, with what a reader needs to act on it without opening the page.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    pub rollout: String,
    pub event: EventKind,
    /// RFC 3339, UTC.
    pub time: String,
    /// The canary's weight in force when it happened, in percent.
    pub weight: f64,
    /// 1-based, of `step_count`.
    pub step: usize,
    pub step_count: usize,
    /// The rollout's phase then (`Progressing`, `Paused`, `Healthy`, `Degraded`).
    pub phase: String,
    pub message: String,
    /// The analysis runs behind it, as `GET /rollout` shows them (the verdict's evidence).
    pub evidence: Vec<serde_json::Value>,
}
