//! `compare-errors` and `compare-latency`: one measurement that watches the route's canary and
//! stable live windows, ten times a second, until the judge decides (or `maxDuration` passes).
//! Like Argo's plugin measurements that stay Running, it reports its evidence as it goes. The
//! next measurement of the same metric carries on with the same evidence: once Successful it
//! answers at its first look, and it still fails the canary if the tests later say worse.

use std::time::Duration;

use weir_proxy::stats::{now_second, LiveStats, LiveWindow, Role};

use super::Reading;
use crate::analysis::judge::{Comparison, Evidence, Signal, Tolerance, Verdict};
use crate::argo::model::Compare;
use crate::expr::Value;

/// How often the windows (or pairs) are read: a total outage is judged within a few looks.
const LOOK_EVERY: Duration = Duration::from_millis(100);
/// How often the evidence is reported while undecided.
const REPORT_EVERY: u32 = 10;

pub fn signal(spec: &Compare) -> Signal {
    match spec.latency_quantile {
        Some(quantile) => Signal::Latency { quantile },
        None => Signal::Errors,
    }
}

pub fn tolerance(spec: &Compare) -> Tolerance {
    Tolerance {
        max_ratio: spec.max_ratio,
        margin: spec.margin,
        alpha: spec.alpha,
    }
}

pub async fn measure(
    live: &LiveStats,
    route: &str,
    spec: &Compare,
    memory: &mut Option<Comparison>,
    progress: &(dyn Fn(Evidence) + Send + Sync),
) -> Result<Reading, String> {
    let (Some(canary), Some(stable)) = (
        live.find(route, Role::Canary),
        live.find(route, Role::Stable),
    ) else {
        return Err(format!(
            "weir/live: route {route:?} has no canary and stable backends to compare (no such route, or no canary)"
        ));
    };
    let comparison =
        memory.get_or_insert_with(|| Comparison::new(signal(spec), tolerance(spec), now_second()));
    let mut live = Live {
        comparison,
        canary: &canary,
        stable: &stable,
    };
    Ok(watch(&mut live, spec.max_duration, progress, describe).await)
}

/// A measurement judged over time: each look takes what came since the last one.
pub(super) trait Judging: Send {
    fn look(&mut self) -> Verdict;
    fn evidence(&self) -> Evidence;
}

/// The canary's and the stable's live windows, read into a comparison.
struct Live<'a> {
    comparison: &'a mut Comparison,
    canary: &'a LiveWindow,
    stable: &'a LiveWindow,
}

impl Judging for Live<'_> {
    fn look(&mut self) -> Verdict {
        self.comparison
            .observe(self.canary, self.stable, now_second())
    }

    fn evidence(&self) -> Evidence {
        self.comparison.evidence()
    }
}

/// Looks ten times a second until `judging` decides or `max_duration` passes, reporting the
/// evidence every second meanwhile; the reading is the verdict, `describe`d.
pub(super) async fn watch(
    judging: &mut dyn Judging,
    max_duration: Option<Duration>,
    progress: &(dyn Fn(Evidence) + Send + Sync),
    describe: fn(&Evidence) -> String,
) -> Reading {
    let started = tokio::time::Instant::now();
    let mut look = tokio::time::interval(LOOK_EVERY);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut looks = 0u32;
    loop {
        look.tick().await;
        looks = looks.wrapping_add(1);
        let verdict = judging.look();
        let expired = max_duration.is_some_and(|d| started.elapsed() >= d);
        let done = verdict != Verdict::Inconclusive || expired;
        if done || looks.is_multiple_of(REPORT_EVERY) {
            let evidence = judging.evidence();
            let detail = done.then(|| describe(&evidence));
            progress(evidence);
            if let Some(detail) = detail {
                return Reading::Judged {
                    value: Value::String(verdict.as_str().to_string()),
                    detail,
                };
            }
        }
    }
}

/// "canary 2.10 % errors (42 of 2000) vs stable 0.10 % (8 of 8000) over 12 s".
fn describe(e: &Evidence) -> String {
    let percent = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.2} %", r * 100.0));
    let what = match e.threshold_seconds {
        Some(bar) => format!("slower than {:.1} ms", bar * 1000.0),
        None => e.signal.to_string(),
    };
    let mut text = format!(
        "canary {} {what} ({} of {}) vs stable {} ({} of {}) over {} s",
        percent(e.canary.rate),
        e.canary.events,
        e.canary.requests,
        percent(e.stable.rate),
        e.stable.events,
        e.stable.requests,
        e.seconds
    );
    if let Some(waiting) = &e.waiting {
        text.push_str(&format!("; {waiting}"));
    }
    text
}
