//! What a webhook is sent for an event: weir's JSON, or a message for a Slack incoming webhook.

use super::event::{Event, EventKind};

/// The body's shape, per webhook (`format:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// The event as JSON (`Event`'s fields).
    #[default]
    Json,
    /// `{"text": …}`: one readable message, as Slack's incoming webhooks take it.
    Slack,
}

pub fn body(format: Format, event: &Event) -> String {
    match format {
        Format::Json => serde_json::to_string(event).unwrap_or_default(),
        Format::Slack => serde_json::json!({ "text": slack_text(event) }).to_string(),
    }
}

/// One line a person reads in a channel, then the evidence's verdicts one per line.
pub fn slack_text(e: &Event) -> String {
    let what = match e.event {
        EventKind::StepReached => "reached step",
        EventKind::Paused => "paused at step",
        EventKind::Promoted => "was promoted at step",
        EventKind::FullyPromoted => "is fully promoted, step",
        EventKind::AnalysisFailed => "failed its analysis at step",
        EventKind::AnalysisInconclusive => "has an inconclusive analysis at step",
        EventKind::Aborted => "was aborted at step",
        EventKind::AbortRampFinished => "finished its abort ramp at step",
        EventKind::StateFileError => "cannot save its state at step",
    };
    let mut text = format!(
        "weir: rollout *{}* {what} {}/{} (canary {}%)",
        e.rollout, e.step, e.step_count, e.weight
    );
    if !e.message.is_empty() {
        text.push_str(": ");
        text.push_str(&e.message);
    }
    for run in &e.evidence {
        let metrics = run["metrics"].as_array().into_iter().flatten();
        for m in metrics {
            let (name, phase, message) = (&m["name"], &m["phase"], &m["message"]);
            if let (Some(name), Some(phase)) = (name.as_str(), phase.as_str()) {
                text.push_str(&format!("\n• {name}: {phase}"));
                if let Some(message) = message.as_str().filter(|m| !m.is_empty()) {
                    text.push_str(&format!(" — {message}"));
                }
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event() -> Event {
        Event {
            rollout: "shop".into(),
            event: EventKind::Aborted,
            time: "2026-12-07T03:00:00Z".into(),
            weight: 20.0,
            step: 3,
            step_count: 8,
            phase: "Degraded".into(),
            message: "metric errors failed".into(),
            evidence: vec![json!({"name": "shop-step-3", "metrics": [
                {"name": "errors", "phase": "Failed", "message": "canary 2.1 % vs stable 0.1 %"},
                {"name": "latency", "phase": "Successful", "message": ""}]})],
        }
    }

    #[test]
    fn json_carries_every_field_and_the_event_by_its_config_name() {
        let v: serde_json::Value = serde_json::from_str(&body(Format::Json, &event())).unwrap();
        assert_eq!(v["event"], "aborted");
        assert_eq!(v["rollout"], "shop");
        assert_eq!(v["weight"], 20.0);
        assert_eq!(
            (v["step"].as_u64(), v["step_count"].as_u64()),
            (Some(3), Some(8))
        );
        assert_eq!(v["evidence"][0]["metrics"][0]["phase"], "Failed");
        assert_eq!(v["time"], "2026-12-07T03:00:00Z");
    }

    #[test]
    fn slack_reads_as_a_sentence_with_the_verdicts() {
        let v: serde_json::Value = serde_json::from_str(&body(Format::Slack, &event())).unwrap();
        assert_eq!(
            v["text"],
            "weir: rollout *shop* was aborted at step 3/8 (canary 20%): metric errors failed\n\
             • errors: Failed — canary 2.1 % vs stable 0.1 %\n\
             • latency: Successful"
        );
    }

    #[test]
    fn every_event_name_parses_back() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(EventKind::parse("exploded"), None);
    }
}
