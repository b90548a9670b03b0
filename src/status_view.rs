//! Draws a rollout's status for a terminal, after `kubectl argo rollouts get rollout`.

use weir_control::analysis::judge::Evidence;
use weir_control::rollout::status::{RolloutStatus, RolloutSummary, StepState};

fn icon(phase: &str) -> &'static str {
    match phase {
        "Healthy" | "Successful" => "✔",
        "Degraded" | "Failed" | "Error" => "✖",
        "Paused" | "Inconclusive" => "॥",
        _ => "◌",
    }
}

fn bar(canary_percent: f64) -> String {
    let filled = (canary_percent / 5.0).round().clamp(0.0, 20.0) as usize;
    format!("[{}{}]", "#".repeat(filled), ".".repeat(20 - filled))
}

/// A comparison's evidence under its metric: both backends' figures and how far each verdict is.
fn evidence(e: &Evidence) -> String {
    let side = |name: &str, f: &weir_control::analysis::judge::Figures| {
        let rate = f
            .rate
            .map_or("-".to_string(), |r| format!("{:.2}%", r * 100.0));
        format!("{name} {rate} ({} of {})", f.events, f.requests)
    };
    let what = match e.threshold_seconds {
        Some(bar) => format!("slower than {:.1}ms", bar * 1000.0),
        None => e.signal.clone(),
    };
    let percent = |x: f64| (x * 100.0).round();
    let mut line = format!(
        "      {what}: {} vs {} over {}s; evidence toward Failed {}%, Successful {}%\n",
        side("canary", &e.canary),
        side("stable", &e.stable),
        e.seconds,
        percent(e.toward_failed),
        percent(e.toward_successful),
    );
    if let Some(waiting) = &e.waiting {
        line.push_str(&format!("      ({waiting})\n"));
    }
    if let Some(answers) = e.pairs.as_ref().map(|p| &p.answers) {
        line.push_str(&answer_line(answers));
    }
    line
}

/// A paired measurement's answers compared (reported, never judged): how many were the same,
/// and the latest requests the canary answered otherwise.
fn answer_line(a: &weir_control::analysis::judge::AnswerEvidence) -> String {
    if a.compared == 0 {
        return String::new();
    }
    let mut line = format!(
        "      answers: {} compared, {} the same, {} another status, {} another body, {} unread\n",
        a.compared, a.same, a.status, a.body, a.unread
    );
    for e in &a.examples {
        let what = match e.differs.as_str() {
            "status" => format!("{} → {}", e.stable_status, e.canary_status),
            other => other.to_string(),
        };
        line.push_str(&format!("        {} ({what}, {}×)\n", e.path, e.seen));
    }
    line
}

/// Several rollouts, a line each, like `kubectl argo rollouts list rollouts`.
pub fn render_list(list: &[RolloutSummary]) -> String {
    let mut out = format!(
        "{:<24} {:<12} {:<7} {:>7}  {:<20} {}\n",
        "NAME", "STATUS", "STEP", "CANARY", "ROUTE", "MESSAGE"
    );
    for r in list {
        let phase = r.phase.as_str();
        out.push_str(&format!(
            "{:<24} {} {:<10} {:<7} {:>6}%  {:<20} {}\n",
            r.name,
            icon(phase),
            phase,
            format!("{}/{}", r.step, r.step_count),
            r.canary_weight,
            r.route,
            r.message
        ));
    }
    out
}

pub fn render(s: &RolloutStatus) -> String {
    let mut out = String::new();
    let phase = s.phase.as_str();
    out.push_str(&format!("Name:      {}\n", s.rollout));
    out.push_str(&format!("Strategy:  {}\n", s.strategy));
    out.push_str(&format!("Status:    {} {phase}", icon(phase)));
    if !s.message.is_empty() {
        out.push_str(&format!("  ({})", s.message));
    }
    out.push('\n');
    out.push_str(&format!("Step:      {}/{}\n", s.step, s.step_count));
    out.push_str(&format!(
        "Weights:   canary {}%  stable {}%  {}\n",
        s.weights.canary,
        s.weights.stable,
        bar(s.weights.canary)
    ));
    out.push_str(&format!("Route:     {}\n", s.route));
    if let Some(problem) = &s.state_file_error {
        out.push_str(&format!("State:     ⚠ not saved: {problem}\n"));
    }
    for hook in &s.notifications {
        out.push_str(&format!(
            "Webhook:   {}: {} delivered, {} failed, {} dropped",
            hook.name, hook.delivered, hook.failed, hook.dropped
        ));
        if let Some(why) = &hook.last_error {
            out.push_str(&format!(" (last: {why})"));
        }
        out.push('\n');
    }
    out.push_str("Steps:\n");
    for step in &s.steps {
        let mark = match step.state {
            StepState::Done => "✔",
            StepState::Current => "▶",
            StepState::Pending => " ",
        };
        out.push_str(&format!("  {mark} {:>2}. {}\n", step.index, step.step));
    }
    let runs = [
        ("step analysis", s.analysis.step.as_ref().map(|r| &r.run)),
        ("background analysis", s.analysis.background.as_ref()),
    ];
    for (label, run) in runs {
        let Some(run) = run else { continue };
        let rp = run.phase.as_str();
        out.push_str(&format!("Analysis ({label}): {} {rp}\n", icon(rp)));
        for m in &run.metrics {
            let mp = m.phase.as_str();
            let value = m
                .measurements
                .back()
                .and_then(|l| l.value.as_deref())
                .unwrap_or("-");
            out.push_str(&format!(
                "  {} {:<24} {:<12} last {:<14} ok {} failed {} inconclusive {} error {}\n",
                icon(mp),
                m.name,
                mp,
                value,
                m.counts.successful,
                m.counts.failed,
                m.counts.inconclusive,
                m.counts.error
            ));
            if let Some(e) = &m.evidence {
                out.push_str(&evidence(e));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comparison_shows_both_backends_and_its_progress() {
        // As GET /rollout answers it: the wire format the CLI reads back.
        let status: RolloutStatus = serde_json::from_str(
            r#"{
            "rollout": "shop", "strategy": "canary", "phase": "Progressing", "message": "",
            "step": 1, "step_count": 2,
            "steps": [{"index": 1, "step": "setWeight: 20", "state": "current"},
                      {"index": 2, "step": "pause: 30s", "state": "pending"}],
            "route": "web", "services": {"stable": "shop-stable", "canary": null},
            "weights": {"canary": 20.0, "stable": 80.0},
            "header_routes": [], "mirror": null, "promoted": false, "aborted": false,
            "revision": "r1",
            "analysis": {"step": null, "background": {
                "name": "shop-background", "phase": "Running", "message": "",
                "startedAt": 1, "finishedAt": null,
                "metrics": [{
                    "name": "latency", "phase": "Running", "message": "", "dryRun": false,
                    "count": 0, "successful": 0, "failed": 0, "inconclusive": 0, "error": 0,
                    "consecutiveError": 0, "consecutiveSuccessful": 0,
                    "measurements": [],
                    "evidence": {
                        "signal": "latency", "verdict": "Inconclusive",
                        "canary": {"requests": 2000, "events": 80, "rate": 0.04},
                        "stable": {"requests": 8000, "events": 81, "rate": 0.010125},
                        "towardFailed": 0.456, "towardSuccessful": 0.0,
                        "thresholdSeconds": 0.0052, "maxRatio": 1.5, "margin": 0.001,
                        "alpha": 0.005, "seconds": 10, "waiting": null
                    }
                }]
            }}
        }"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let text = render(&status);
        assert!(
            text.contains("slower than 5.2ms: canary 4.00% (80 of 2000) vs stable 1.01% (81 of 8000) over 10s; evidence toward Failed 46%, Successful 0%"),
            "{text}"
        );
        assert!(text.contains("▶  1. setWeight: 20"), "{text}");
        assert!(text.contains("Weights:   canary 20%  stable 80%"), "{text}");
        // No pairs, no answers line.
        assert!(!text.contains("answers:"), "{text}");
    }

    #[test]
    fn a_paired_measurement_lists_the_answers_that_differed() {
        let answers: weir_control::analysis::judge::AnswerEvidence = serde_json::from_str(
            r#"{"compared": 300, "same": 180, "status": 100, "body": 20, "unread": 0,
                "examples": [{"path": "/gone", "differs": "status", "stableStatus": 200,
                              "canaryStatus": 404, "seen": 100},
                             {"path": "/items", "differs": "body", "stableStatus": 200,
                              "canaryStatus": 200, "seen": 20}]}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            answer_line(&answers),
            "      answers: 300 compared, 180 the same, 100 another status, 20 another body, 0 unread\n        /gone (200 → 404, 100×)\n        /items (body, 20×)\n"
        );
    }
}
