//! Which events a change of the rollout's status is (pure): the driver publishes a status
//! after every turn of its loop, and the difference from the one before says what happened.
//! Analysis verdicts and operators' promotions are told by the driver where they happen.

use crate::notify::{Event, EventKind};

use super::state::Phase;
use super::status::RolloutStatus;

/// The events between two consecutive statuses, in the order they happened.
pub fn between(prev: &RolloutStatus, next: &RolloutStatus) -> Vec<EventKind> {
    let mut out = Vec::new();
    if next.revision != prev.revision {
        // A new canary version: its first step is reached.
        out.push(EventKind::StepReached);
    } else if next.step != prev.step && !next.aborted && !next.promoted {
        out.push(EventKind::StepReached);
    }
    if next.aborted && !prev.aborted {
        out.push(EventKind::Aborted);
    }
    // With an abort ramp the weight steps down after the abort; without one it is 0 at once.
    if next.aborted && prev.aborted && prev.weights.canary > 0.0 && next.weights.canary == 0.0 {
        out.push(EventKind::AbortRampFinished);
    }
    if next.phase == Phase::Paused && prev.phase != Phase::Paused {
        out.push(EventKind::Paused);
    }
    if next.promoted && !prev.promoted && next.phase == Phase::Healthy {
        out.push(EventKind::FullyPromoted);
    }
    if next.state_file_error.is_some() && next.state_file_error != prev.state_file_error {
        out.push(EventKind::StateFileError);
    }
    out
}

/// The event `kind` as of `status`, with `evidence` (analysis runs as JSON) and a time.
pub fn event(
    kind: EventKind,
    status: &RolloutStatus,
    evidence: Vec<serde_json::Value>,
    now_ms: u64,
) -> Event {
    let message = match kind {
        EventKind::StateFileError => status.state_file_error.clone().unwrap_or_default(),
        _ => status.message.clone(),
    };
    Event {
        rollout: status.rollout.clone(),
        event: kind,
        time: rfc3339(now_ms),
        weight: status.weights.canary,
        step: status.step,
        step_count: status.step_count,
        phase: status.phase.as_str().to_string(),
        message,
        evidence,
    }
}

/// `2026-12-07T03:00:00.123Z` from Unix milliseconds.
pub fn rfc3339(ms: u64) -> String {
    weir_proxy::rfc3339::with_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::status::{Analyses, Services, Weights};

    fn status() -> RolloutStatus {
        RolloutStatus {
            rollout: "shop".into(),
            strategy: "canary".into(),
            phase: Phase::Progressing,
            message: String::new(),
            step: 1,
            step_count: 4,
            steps: Vec::new(),
            route: "web".into(),
            services: Services {
                stable: None,
                canary: None,
            },
            weights: Weights {
                canary: 20.0,
                stable: 80.0,
            },
            header_routes: Vec::new(),
            mirror: None,
            promoted: false,
            aborted: false,
            revision: "r1".into(),
            analysis: Analyses::default(),
            state_file_error: None,
            notifications: Vec::new(),
        }
    }

    #[test]
    fn steps_pauses_and_promotion() {
        let a = status();
        assert!(between(&a, &a).is_empty());
        let mut b = a.clone();
        b.step = 2;
        b.phase = Phase::Paused;
        assert_eq!(between(&a, &b), [EventKind::StepReached, EventKind::Paused]);
        let mut c = b.clone();
        c.step = 4;
        c.phase = Phase::Healthy;
        c.promoted = true;
        assert_eq!(between(&b, &c), [EventKind::FullyPromoted]);
        let mut d = a.clone();
        d.revision = "r2".into();
        assert_eq!(between(&c, &d), [EventKind::StepReached]);
    }

    #[test]
    fn an_abort_then_its_ramp_reaching_zero() {
        let a = status();
        let mut aborted = a.clone();
        aborted.aborted = true;
        aborted.phase = Phase::Degraded;
        aborted.weights.canary = 10.0;
        assert_eq!(between(&a, &aborted), [EventKind::Aborted]);
        let mut zero = aborted.clone();
        zero.weights.canary = 0.0;
        assert_eq!(between(&aborted, &zero), [EventKind::AbortRampFinished]);
        // Without a ramp: aborted at 0 at once, one event.
        let mut at_once = aborted.clone();
        at_once.weights.canary = 0.0;
        assert_eq!(between(&a, &at_once), [EventKind::Aborted]);
    }

    #[test]
    fn a_state_file_error_once_per_new_error() {
        let a = status();
        let mut b = a.clone();
        b.state_file_error = Some("disk full".into());
        assert_eq!(between(&a, &b), [EventKind::StateFileError]);
        assert!(between(&b, &b).is_empty());
        let e = event(EventKind::StateFileError, &b, Vec::new(), 0);
        assert_eq!(e.message, "disk full");
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_612_400_123), "2026-12-07T03:00:00.123Z");
    }
}
