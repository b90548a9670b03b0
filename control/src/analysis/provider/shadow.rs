//! `shadow-errors` and `shadow-latency`: one measurement that reads the route's mirrored pairs
//! ten times a second until the paired judge decides (or `maxDuration` passes) — the canary
//! judged on copies of real requests, at any weight, 0 included. Like `compare`, it reports its
//! evidence as it goes, and the next measurement of the metric carries on with the same.

use weir_proxy::stats::pairs::PairLog;
use weir_proxy::stats::{now_second, LiveStats};

use super::compare::{watch, Judging};
use super::Reading;
use crate::analysis::judge::{Evidence, PairRule, ShadowRun, Tolerance, Verdict};
use crate::argo::model::{Compare, PairSignal};

pub fn rule(signal: PairSignal) -> PairRule {
    match signal {
        PairSignal::Errors => PairRule::Errors,
        PairSignal::Latency { max_ratio, margin } => PairRule::Latency {
            max_ratio,
            margin_micros: margin.as_micros() as u64,
        },
    }
}

pub async fn measure(
    live: &LiveStats,
    route: &str,
    spec: &Compare,
    signal: PairSignal,
    memory: &mut Option<ShadowRun>,
    progress: &(dyn Fn(Evidence) + Send + Sync),
) -> Result<Reading, String> {
    let Some(log) = live.find_pairs(route) else {
        return Err(format!(
            "weir/live: route {route:?} has never mirrored: {} judges the pairs of a route's mirror (setMirrorRoute to the canary)",
            rule(signal).name()
        ));
    };
    let tolerance = Tolerance {
        max_ratio: spec.max_ratio,
        margin: spec.margin,
        alpha: spec.alpha,
    };
    let run =
        memory.get_or_insert_with(|| ShadowRun::new(rule(signal), tolerance, &log, now_second()));
    let mut paired = Paired { run, log: &log };
    Ok(watch(&mut paired, spec.max_duration, progress, describe).await)
}

/// A route's pair log, read into a paired judge.
struct Paired<'a> {
    run: &'a mut ShadowRun,
    log: &'a PairLog,
}

impl Judging for Paired<'_> {
    fn look(&mut self) -> Verdict {
        self.run.observe(self.log, now_second())
    }

    fn evidence(&self) -> Evidence {
        self.run.evidence()
    }
}

/// In plain words, what the canary does now beside what the test gathered: "on the same
/// requests, canary 2.10 % errors over the last 10 s against stable 0.10 %; 52 of 2,000 pairs
/// differ, 41 against the canary; evidence 240:1 that it is worse than 1.5× or +0.10 %".
pub fn describe(e: &Evidence) -> String {
    let Some(p) = &e.pairs else {
        return String::new();
    };
    let percent = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.2} %", r * 100.0));
    let what = if e.signal == "shadow-latency" {
        "slower"
    } else {
        "errors"
    };
    let mut text = format!(
        "on the same requests, canary {} {what} over the last 10 s against stable {}; {} of {} pairs differ, {} against the canary",
        percent(p.recent_canary_rate),
        percent(p.recent_stable_rate),
        p.canary_only + p.stable_only,
        p.pairs,
        p.canary_only,
    );
    let (odds, claim) = match e.verdict {
        Verdict::Successful => (p.successful_odds, "not"),
        _ => (p.failed_odds, ""),
    };
    text.push_str(&format!(
        "; evidence {:.0}:1 that it is {claim}{}worse than {}× or +{:.2} %",
        odds.max(0.0),
        if claim.is_empty() { "" } else { " " },
        e.max_ratio,
        e.margin * 100.0
    ));
    let a = &p.answers;
    if a.status + a.body > 0 {
        // Reported, never judged: many services answer the same request differently each time.
        let examples: Vec<String> = a
            .examples
            .iter()
            .take(3)
            .map(|e| match e.differs.as_str() {
                "status" => format!("{} ({} → {})", e.path, e.stable_status, e.canary_status),
                _ => format!("{} (body)", e.path),
            })
            .collect();
        text.push_str(&format!(
            "; the canary answered otherwise than the stable in {} of {} pairs compared ({} in status, {} in body only), e.g. {}",
            a.status + a.body,
            a.compared,
            a.status,
            a.body,
            examples.join(", ")
        ));
    }
    if !p.excluded.is_empty() {
        let left: Vec<String> = p
            .excluded
            .iter()
            .map(|(why, n)| format!("{n} {why}"))
            .collect();
        text.push_str(&format!("; left out: {}", left.join(", ")));
    }
    if let Some(waiting) = &e.waiting {
        text.push_str(&format!("; {waiting}"));
    }
    text
}
