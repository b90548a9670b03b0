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

/// In plain words, what the canary does now beside what the test gathered: "canary 2.10 %
/// errors over the last 10 s against stable 0.10 %; since the analysis began (12 s) canary
/// 0.24 % (42 of 2000) vs stable 0.13 % (8 of 8000); evidence 100:1 that it is worse than
/// 1.5× or +0.10 %".
pub fn describe(e: &Evidence) -> String {
    let percent = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.2} %", r * 100.0));
    let what = match e.threshold_seconds {
        Some(bar) => format!("slower than {:.1} ms", bar * 1000.0),
        None => e.signal.to_string(),
    };
    let side = |f: &crate::analysis::judge::Figures| {
        format!("{} ({} of {})", percent(f.rate), f.events, f.requests)
    };
    let totals = format!("canary {} vs stable {}", side(&e.canary), side(&e.stable));
    let mut text = match &e.recent {
        Some(now) => format!(
            "canary {} {what} over the last {} s against stable {}; since the analysis began ({} s) {totals}",
            percent(now.canary.rate),
            now.seconds,
            percent(now.stable.rate),
            e.seconds,
        ),
        None => format!("{what}: {totals} over {} s", e.seconds),
    };
    // The judge's wealth against each null, from how far it has come: Failed at 1/alpha,
    // Successful at 2/alpha (`judge::toward`).
    let (odds, at, claim) = match e.verdict {
        Verdict::Successful => (
            (2.0 / e.alpha).powf(e.toward_successful),
            e.toward_successful,
            "not ",
        ),
        _ => ((1.0 / e.alpha).powf(e.toward_failed), e.toward_failed, ""),
    };
    text.push_str(&format!(
        "; evidence {}{odds:.0}:1 that it is {claim}worse than {}× or +{:.2} %",
        if at >= 1.0 { "at least " } else { "" },
        e.max_ratio,
        e.margin * 100.0
    ));
    if let Some(waiting) = &e.waiting {
        text.push_str(&format!("; {waiting}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::judge::{Figures, Recent};

    fn figures(requests: u64, events: u64) -> Figures {
        Figures {
            requests,
            events,
            rate: Some(events as f64 / requests as f64),
        }
    }

    #[test]
    fn the_reading_says_what_the_canary_does_now_beside_the_totals() {
        let evidence = Evidence {
            signal: "errors".into(),
            verdict: Verdict::Failed,
            canary: figures(2000, 42),
            stable: figures(8000, 8),
            toward_failed: 1.0,
            toward_successful: 0.0,
            threshold_seconds: None,
            max_ratio: 1.5,
            margin: 0.001,
            alpha: 0.01,
            seconds: 12,
            waiting: None,
            recent: Some(Recent {
                seconds: 10,
                canary: figures(1000, 21),
                stable: figures(4000, 4),
            }),
            pairs: None,
        };
        assert_eq!(
            describe(&evidence),
            "canary 2.10 % errors over the last 10 s against stable 0.10 %; since the analysis \
             began (12 s) canary 2.10 % (42 of 2000) vs stable 0.10 % (8 of 8000); evidence at \
             least 100:1 that it is worse than 1.5× or +0.10 %"
        );
        // Shown not worse, halfway to Successful's 2/alpha: its odds, and the claim turned.
        let passing = Evidence {
            verdict: Verdict::Successful,
            toward_failed: 0.0,
            toward_successful: 0.5,
            ..evidence
        };
        assert!(
            describe(&passing)
                .ends_with("; evidence 14:1 that it is not worse than 1.5× or +0.10 %"),
            "{}",
            describe(&passing)
        );
    }
}
