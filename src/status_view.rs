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
        }
    }
    out
}
