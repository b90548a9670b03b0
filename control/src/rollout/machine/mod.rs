//! The step machine, as pure functions of (steps, state, event, now): no I/O, no clocks, so every
//! transition is unit-tested. The driver feeds it events and carries out what it asks.

use std::time::Duration;

use super::state::{Phase, RolloutState};
use crate::argo::model::{HeaderRouteMatch, MirrorMatch, Step};

/// What the machine waits for after `advance`.
#[derive(Clone, Debug, PartialEq)]
pub enum Wait {
    /// A timed pause: wake up at this time (unix ms).
    Until(u64),
    /// An operator's `promote` (pause without duration, inconclusive analysis).
    Promote,
    /// The analysis of this step must run (the driver starts it if it is not running).
    Analysis(usize),
    /// Nothing: the rollout is Healthy or Degraded.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Past the current pause or analysis, to the next step.
    Promote,
    /// Straight to full promotion.
    PromoteFull,
    Abort,
    /// After an abort (or a hold), start the steps again.
    Retry,
}

/// How an analysis (inline or background) ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Successful,
    Failed(String),
    Error(String),
    Inconclusive(String),
}

/// Runs through the steps that take no time; stops at the first that waits.
pub fn advance(steps: &[Step], state: &mut RolloutState, now_ms: u64) -> Wait {
    loop {
        match state.phase {
            Phase::Healthy | Phase::Degraded => return Wait::Done,
            Phase::Paused if state.waiting_for_promote => return Wait::Promote,
            _ => {}
        }
        let Some(step) = steps.get(state.step_index) else {
            promote_fully(state);
            return Wait::Done;
        };
        match step {
            Step::SetWeight { .. } | Step::SetHeaderRoute { .. } | Step::SetMirrorRoute { .. } => {
                next_step(state, now_ms);
            }
            Step::Pause { duration: Some(d) } => {
                let until = state.step_started_ms.saturating_add(d.as_millis() as u64);
                if now_ms >= until {
                    next_step(state, now_ms);
                } else {
                    state.phase = Phase::Paused;
                    state.message = format!("paused for {}", human(*d));
                    return Wait::Until(until);
                }
            }
            Step::Pause { duration: None } => {
                state.phase = Phase::Paused;
                state.waiting_for_promote = true;
                state.message = "paused until promoted".to_string();
                return Wait::Promote;
            }
            Step::Analysis(_) => {
                state.phase = Phase::Progressing;
                state.message = format!("running the analysis of step {}", state.step_index + 1);
                return Wait::Analysis(state.step_index);
            }
        }
    }
}

fn next_step(state: &mut RolloutState, now_ms: u64) {
    state.step_index += 1;
    state.step_started_ms = now_ms;
    state.phase = Phase::Progressing;
    state.waiting_for_promote = false;
    state.message.clear();
}

fn promote_fully(state: &mut RolloutState) {
    state.promoted = true;
    state.phase = Phase::Healthy;
    state.waiting_for_promote = false;
    state.message = "fully promoted: the canary is the new stable".to_string();
}

/// An operator's command. Err says why it does not apply now.
pub fn command(
    steps: &[Step],
    state: &mut RolloutState,
    cmd: Command,
    now_ms: u64,
) -> Result<String, String> {
    match cmd {
        Command::Abort => {
            if state.phase == Phase::Healthy || state.aborted {
                return Err(format!(
                    "nothing to abort: the rollout is {}",
                    state.phase.as_str()
                ));
            }
            abort(state, "aborted by an operator".to_string());
            Ok("aborted: canary weight 0".to_string())
        }
        Command::Retry => {
            if !(state.aborted || state.phase == Phase::Paused && state.step_index == 0) {
                return Err(format!(
                    "retry applies to an aborted rollout; this one is {}",
                    state.phase.as_str()
                ));
            }
            *state = RolloutState::new(&state.rollout, &state.revision, now_ms);
            Ok("retrying from the first step".to_string())
        }
        Command::PromoteFull => {
            if state.aborted || state.phase == Phase::Healthy {
                return Err(format!(
                    "cannot promote: the rollout is {}",
                    state.phase.as_str()
                ));
            }
            state.step_index = steps.len();
            promote_fully(state);
            Ok("fully promoted".to_string())
        }
        Command::Promote => {
            if state.aborted || state.phase == Phase::Healthy {
                return Err(format!(
                    "cannot promote: the rollout is {}",
                    state.phase.as_str()
                ));
            }
            match steps.get(state.step_index) {
                Some(Step::Pause { .. }) | Some(Step::Analysis(_)) => {
                    next_step(state, now_ms);
                    Ok(format!("promoted to step {}", state.step_index + 1))
                }
                // A background analysis held the rollout: let it go on.
                _ if state.waiting_for_promote => {
                    state.waiting_for_promote = false;
                    state.phase = Phase::Progressing;
                    state.message.clear();
                    Ok("resumed".to_string())
                }
                _ => Err("nothing to promote: the rollout is not waiting".to_string()),
            }
        }
    }
}

/// The analysis of the current step ended.
pub fn step_analysis_done(state: &mut RolloutState, step: usize, verdict: Verdict, now_ms: u64) {
    if state.step_index != step || state.aborted || state.phase == Phase::Healthy {
        return; // stale: the rollout moved on meanwhile
    }
    match verdict {
        Verdict::Successful => next_step(state, now_ms),
        Verdict::Failed(msg) | Verdict::Error(msg) => abort(state, msg),
        Verdict::Inconclusive(msg) => hold(
            state,
            format!("analysis inconclusive, waiting for promote or abort: {msg}"),
        ),
    }
}

/// The background analysis ended before the rollout did.
pub fn background_analysis_done(state: &mut RolloutState, verdict: Verdict) {
    if state.aborted || state.phase == Phase::Healthy {
        return;
    }
    match verdict {
        Verdict::Successful => {}
        Verdict::Failed(msg) | Verdict::Error(msg) => abort(state, msg),
        Verdict::Inconclusive(msg) => {
            hold(state, format!("background analysis inconclusive: {msg}"))
        }
    }
}

fn abort(state: &mut RolloutState, message: String) {
    state.aborted = true;
    state.phase = Phase::Degraded;
    state.waiting_for_promote = false;
    state.message = message;
}

fn hold(state: &mut RolloutState, message: String) {
    state.phase = Phase::Paused;
    state.waiting_for_promote = true;
    state.message = message;
}

/// What the route should look like for this state, replayed from the steps already passed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Traffic {
    pub weight_bp: u16,
    pub header_routes: Vec<(String, Vec<HeaderRouteMatch>)>,
    pub mirror: Option<(String, u16, Vec<MirrorMatch>)>,
    /// The canary version serves as stable; weight 0.
    pub promoted: bool,
}

pub fn traffic(steps: &[Step], state: &RolloutState) -> Traffic {
    if state.promoted {
        return Traffic {
            promoted: true,
            ..Traffic::default()
        };
    }
    if state.aborted {
        return Traffic::default();
    }
    let mut t = Traffic::default();
    for step in &steps[..state.step_index.min(steps.len())] {
        match step {
            Step::SetWeight { weight_bp } => t.weight_bp = *weight_bp,
            Step::SetHeaderRoute { name, matches } => {
                t.header_routes.retain(|(n, _)| n != name);
                if !matches.is_empty() {
                    t.header_routes.push((name.clone(), matches.clone()));
                }
            }
            Step::SetMirrorRoute {
                name,
                percentage,
                matches,
            } => {
                t.mirror = if matches.is_empty() {
                    None
                } else {
                    let percent = percentage.unwrap_or(100).min(100);
                    Some((name.clone(), percent * 100, matches.clone()))
                };
            }
            Step::Pause { .. } | Step::Analysis(_) => {}
        }
    }
    t
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

#[cfg(test)]
mod tests;
