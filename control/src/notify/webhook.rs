//! One webhook: where it is, what it wants, and its delivery task — events in order, each
//! tried a bounded number of times with backoff, never waited for by the rollout.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::body::{body, Format};
use super::event::{Event, EventKind};
use crate::analysis::provider::http::{self, Call};

/// A value from the config itself, or read from a file at each delivery (a mounted Secret's
/// key: a rotated Secret is used from the next event). Surrounding whitespace, the newline a
/// file ends with included, is not part of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Literal(String),
    File(PathBuf),
}

impl Value {
    fn read(&self) -> Result<String, String> {
        match self {
            Value::Literal(v) => Ok(v.clone()),
            Value::File(path) => std::fs::read_to_string(path)
                .map(|v| v.trim().to_string())
                .map_err(|e| format!("cannot read {}: {e}", path.display())),
        }
    }
}

/// A webhook as the config describes it (`notifications:`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookConfig {
    pub name: String,
    pub url: Value,
    pub format: Format,
    pub headers: Vec<(String, Value)>,
    /// For one attempt, connection to answer.
    pub timeout: Duration,
    /// The events it gets; empty: every one.
    pub events: BTreeSet<EventKind>,
    /// The rollouts whose events it gets (by name); empty: every one.
    pub rollouts: BTreeSet<String>,
    /// Attempts after the first that failed.
    pub retries: u32,
    /// Before the first retry; doubled for each next one, up to 30 s.
    pub backoff: Duration,
}

impl WebhookConfig {
    pub fn wants(&self, event: &Event) -> bool {
        (self.events.is_empty() || self.events.contains(&event.event))
            && (self.rollouts.is_empty() || self.rollouts.contains(&event.rollout))
    }
}

/// Events waiting for one webhook: beyond this, new ones are dropped (and counted) rather
/// than held without bound for a receiver that is down.
pub const QUEUE: usize = 64;
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What the page and `GET /rollout` show of a webhook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WebhookStatus {
    pub name: String,
    pub delivered: u64,
    pub failed: u64,
    pub dropped: u64,
    /// The last delivery's outcome, when it failed: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabels {
    pub webhook: String,
    pub event: String,
    /// `delivered`, `failed` (every attempt failed) or `dropped` (its queue was full).
    pub outcome: String,
}

pub type Deliveries = Family<DeliveryLabels, Counter>;

/// A webhook's running delivery: its queue, and what it has done.
pub struct Webhook {
    pub config: WebhookConfig,
    queue: mpsc::Sender<Event>,
    status: Arc<Mutex<WebhookStatus>>,
    deliveries: Deliveries,
}

impl Webhook {
    /// Starts its delivery task.
    pub fn start(config: WebhookConfig, deliveries: Deliveries) -> Webhook {
        let (queue, events) = mpsc::channel(QUEUE);
        let status = Arc::new(Mutex::new(WebhookStatus {
            name: config.name.clone(),
            ..WebhookStatus::default()
        }));
        tokio::spawn(deliver(
            config.clone(),
            events,
            status.clone(),
            deliveries.clone(),
        ));
        Webhook {
            config,
            queue,
            status,
            deliveries,
        }
    }

    /// Queues `event` if the webhook wants it; never waits.
    pub fn offer(&self, event: &Event) {
        if !self.config.wants(event) {
            return;
        }
        if self.queue.try_send(event.clone()).is_err() {
            count(&self.deliveries, &self.config.name, event.event, "dropped");
            lock(&self.status).dropped += 1;
            tracing::warn!(webhook = %self.config.name, event = event.event.as_str(), "notification dropped: {QUEUE} are already waiting for this webhook");
        }
    }

    pub fn status(&self) -> WebhookStatus {
        lock(&self.status).clone()
    }
}

fn lock(status: &Mutex<WebhookStatus>) -> std::sync::MutexGuard<'_, WebhookStatus> {
    status.lock().unwrap_or_else(|p| p.into_inner())
}

fn count(deliveries: &Deliveries, webhook: &str, event: EventKind, outcome: &str) {
    deliveries
        .get_or_create(&DeliveryLabels {
            webhook: webhook.to_string(),
            event: event.as_str().to_string(),
            outcome: outcome.to_string(),
        })
        .inc();
}

/// The delay before retry `n` (0-based): `backoff`, doubled each time, at most 30 s.
pub fn backoff(first: Duration, n: u32) -> Duration {
    first
        .saturating_mul(2u32.saturating_pow(n))
        .min(MAX_BACKOFF)
}

async fn deliver(
    config: WebhookConfig,
    mut events: mpsc::Receiver<Event>,
    status: Arc<Mutex<WebhookStatus>>,
    deliveries: Deliveries,
) {
    while let Some(event) = events.recv().await {
        let mut attempt = 0;
        let outcome = loop {
            match post(&config, &event).await {
                Ok(()) => break Ok(()),
                Err(e) if attempt >= config.retries => break Err(e),
                Err(e) => {
                    tracing::debug!(webhook = %config.name, attempt, "notification not delivered, retrying: {e}");
                    tokio::time::sleep(backoff(config.backoff, attempt)).await;
                    attempt += 1;
                }
            }
        };
        let mut s = lock(&status);
        match outcome {
            Ok(()) => {
                s.delivered += 1;
                s.last_error = None;
                count(&deliveries, &config.name, event.event, "delivered");
            }
            Err(e) => {
                tracing::warn!(webhook = %config.name, event = event.event.as_str(), "notification not delivered after {} attempt(s): {e}", attempt + 1);
                s.failed += 1;
                s.last_error = Some(e);
                count(&deliveries, &config.name, event.event, "failed");
            }
        }
    }
}

/// One attempt: a POST whose answer is 2xx.
async fn post(config: &WebhookConfig, event: &Event) -> Result<(), String> {
    let url = config.url.read().map_err(|e| format!("url: {e}"))?;
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    for (name, value) in &config.headers {
        let value = value.read().map_err(|e| format!("header {name}: {e}"))?;
        headers.push((name.clone(), value));
    }
    let body = body(config.format, event);
    let answer = http::send(&Call {
        method: "POST",
        url: &url,
        headers: &headers,
        body: Some(&body),
        timeout: config.timeout,
    })
    .await
    // The URL may hold a secret (Slack's do): errors name the webhook, not the URL.
    .map_err(|e| e.replace(&url, "<url>"))?;
    if answer.status.is_success() {
        Ok(())
    } else {
        Err(format!(
            "answered {}: {}",
            answer.status,
            http::snippet(&answer.body)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_gets_the_events_and_rollouts_it_names() {
        let config = |events: &[EventKind], rollouts: &[&str]| WebhookConfig {
            name: "ops".into(),
            url: Value::Literal("http://127.0.0.1:1/".into()),
            format: Format::Json,
            headers: Vec::new(),
            timeout: Duration::from_secs(1),
            events: events.iter().copied().collect(),
            rollouts: rollouts.iter().map(|r| r.to_string()).collect(),
            retries: 0,
            backoff: Duration::from_secs(1),
        };
        let event = |rollout: &str, kind| Event {
            rollout: rollout.into(),
            event: kind,
            time: String::new(),
            weight: 0.0,
            step: 1,
            step_count: 1,
            phase: "Degraded".into(),
            message: String::new(),
            evidence: Vec::new(),
        };
        let all = config(&[], &[]);
        assert!(all.wants(&event("shop", EventKind::Paused)));
        let aborts = config(&[EventKind::Aborted], &["shop"]);
        assert!(aborts.wants(&event("shop", EventKind::Aborted)));
        assert!(!aborts.wants(&event("shop", EventKind::Paused)));
        assert!(!aborts.wants(&event("cart", EventKind::Aborted)));
    }

    #[test]
    fn backoff_doubles_up_to_thirty_seconds() {
        let b = |n| backoff(Duration::from_secs(1), n);
        assert_eq!(
            [b(0), b(1), b(2), b(4), b(5), b(40)],
            [1, 2, 4, 16, 30, 30].map(Duration::from_secs)
        );
    }

    #[test]
    fn a_file_value_is_read_each_time_without_its_newline() {
        let path = std::env::temp_dir().join(format!("weir-hook-{}", std::process::id()));
        std::fs::write(&path, "Bearer one\n").unwrap_or_default();
        let v = Value::File(path.clone());
        assert_eq!(v.read(), Ok("Bearer one".into()));
        std::fs::write(&path, "Bearer two").unwrap_or_default();
        assert_eq!(v.read(), Ok("Bearer two".into()));
        let _ = std::fs::remove_file(&path);
        assert!(v.read().unwrap_err().contains("cannot read"));
    }
}
