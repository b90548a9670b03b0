//! Notifications: a rollout's events, delivered to webhooks in the background.
//!
//! The driver hands each event to [`Notifier::notify`], which queues it for every webhook that
//! subscribed and returns at once: a receiver that is down or slow delays nothing. Each webhook
//! has its own delivery task and bounded queue (`webhook.rs`); the bodies are `body.rs`'s.

pub mod body;
pub mod event;
pub mod webhook;

pub use body::Format;
pub use event::{Event, EventKind};
pub use webhook::{Value, WebhookConfig, WebhookStatus};

use weir_proxy::stats::Metrics;

use webhook::{Deliveries, Webhook};

/// Every webhook of the config, running.
#[derive(Default)]
pub struct Notifier {
    webhooks: Vec<Webhook>,
}

impl Notifier {
    /// Starts a delivery task per webhook; their counts join weir's registry as
    /// `weir_notifications_total{webhook, event, outcome}`.
    pub fn start(configs: &[WebhookConfig], metrics: &Metrics) -> Notifier {
        if configs.is_empty() {
            return Notifier::default();
        }
        let deliveries = Deliveries::default();
        metrics.register(|r| {
            r.register(
                "notifications",
                "Notifications by webhook and event: delivered, failed (every attempt) or dropped (queue full)",
                deliveries.clone(),
            )
        });
        Notifier {
            webhooks: configs
                .iter()
                .map(|c| Webhook::start(c.clone(), deliveries.clone()))
                .collect(),
        }
    }

    /// Queues `event` for the webhooks that want it; never waits.
    pub fn notify(&self, event: &Event) {
        for webhook in &self.webhooks {
            webhook.offer(event);
        }
    }

    pub fn status(&self) -> Vec<WebhookStatus> {
        self.webhooks.iter().map(Webhook::status).collect()
    }
}
