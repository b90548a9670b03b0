//! Draws a rollout's status JSON for a terminal, after `kubectl argo rollouts get rollout`.

use serde_json::Value;

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
fn evidence(e: &Value) -> Option<String> {
    if e.is_null() {
        return None;
    }
    let side = |name: &str| {
        let rate = e[name]["rate"]
            .as_f64()
            .map_or("-".to_string(), |r| format!("{:.2}%", r * 100.0));
        format!(
            "{name} {rate} ({} of {})",
            e[name]["events"], e[name]["requests"]
        )
    };
    let what = match e["thresholdSeconds"].as_f64() {
        Some(bar) => format!("slower than {:.1}ms", bar * 1000.0),
        None => e["signal"].as_str().unwrap_or("events").to_string(),
    };
    let percent = |key: &str| (e[key].as_f64().unwrap_or(0.0) * 100.0).round();
    let mut line = format!(
        "      {what}: {} vs {} over {}s; evidence toward Failed {}%, Successful {}%\n",
        side("canary"),
        side("stable"),
        e["seconds"],
        percent("towardFailed"),
        percent("towardSuccessful"),
    );
    if let Some(waiting) = e["waiting"].as_str() {
        line.push_str(&format!("      ({waiting})\n"));
    }
    Some(line)
}

pub fn render(s: &Value) -> String {
    let mut out = String::new();
    let phase = s["phase"].as_str().unwrap_or("?");
    let canary = s["weights"]["canary"].as_f64().unwrap_or(0.0);
    out.push_str(&format!(
        "Name:      {}\n",
        s["rollout"].as_str().unwrap_or("?")
    ));
    out.push_str(&format!(
        "Strategy:  {}\n",
        s["strategy"].as_str().unwrap_or("?")
    ));
    out.push_str(&format!("Status:    {} {phase}", icon(phase)));
    if let Some(m) = s["message"].as_str().filter(|m| !m.is_empty()) {
        out.push_str(&format!("  ({m})"));
    }
    out.push('\n');
    out.push_str(&format!("Step:      {}/{}\n", s["step"], s["step_count"]));
    let stable = s["weights"]["stable"].as_f64().unwrap_or(100.0);
    out.push_str(&format!(
        "Weights:   canary {canary}%  stable {stable}%  {}\n",
        bar(canary)
    ));
    out.push_str(&format!(
        "Route:     {}\n",
        s["route"].as_str().unwrap_or("?")
    ));
    out.push_str("Steps:\n");
    for step in s["steps"].as_array().into_iter().flatten() {
        let mark = match step["state"].as_str() {
            Some("done") => "✔",
            Some("current") => "▶",
            _ => " ",
        };
        let index = step["index"].as_u64().unwrap_or(0);
        let text = step["step"].as_str().unwrap_or("");
        out.push_str(&format!("  {mark} {index:>2}. {text}\n"));
    }
    for (label, run) in [
        ("step analysis", &s["analysis"]["step"]["run"]),
        ("background analysis", &s["analysis"]["background"]),
    ] {
        if run.is_null() {
            continue;
        }
        let rp = run["phase"].as_str().unwrap_or("?");
        out.push_str(&format!("Analysis ({label}): {} {rp}\n", icon(rp)));
        for m in run["metrics"].as_array().into_iter().flatten() {
            let mp = m["phase"].as_str().unwrap_or("?");
            let last = m["measurements"].as_array().and_then(|v| v.last());
            let value = last.and_then(|l| l["value"].as_str()).unwrap_or("-");
            out.push_str(&format!(
                "  {} {:<24} {:<12} last {:<14} ok {} failed {} inconclusive {} error {}\n",
                icon(mp),
                m["name"].as_str().unwrap_or("?"),
                mp,
                value,
                m["successful"],
                m["failed"],
                m["inconclusive"],
                m["error"]
            ));
            if let Some(line) = evidence(&m["evidence"]) {
                out.push_str(&line);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_comparison_shows_both_backends_and_its_progress() {
        let status = json!({
            "rollout": "shop", "phase": "Progressing", "step": 1, "step_count": 2,
            "weights": {"canary": 20.0, "stable": 80.0},
            "analysis": {"background": {"phase": "Running", "metrics": [{
                "name": "latency", "phase": "Running", "measurements": [],
                "successful": 0, "failed": 0, "inconclusive": 0, "error": 0,
                "evidence": {
                    "signal": "latency", "verdict": "Inconclusive",
                    "canary": {"requests": 2000, "events": 80, "rate": 0.04},
                    "stable": {"requests": 8000, "events": 81, "rate": 0.010125},
                    "towardFailed": 0.456, "towardSuccessful": 0.0,
                    "thresholdSeconds": 0.0052, "seconds": 10
                }
            }]}}
        });
        let text = render(&status);
        assert!(
            text.contains("slower than 5.2ms: canary 4.00% (80 of 2000) vs stable 1.01% (81 of 8000) over 10s; evidence toward Failed 46%, Successful 0%"),
            "{text}"
        );
    }
}
