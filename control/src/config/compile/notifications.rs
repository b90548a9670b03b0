//! The `notifications:` section: webhooks, their files and Secrets resolved, their events
//! checked by name.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::config::check::Checker;
use crate::config::model::{RawHeaderValue, RawWebhook};
use crate::notify::{EventKind, Format, Value, WebhookConfig};

/// `secrets_dir`: the rollout's, where `{secret: {name, key}}` is read (`DIR/NAME/KEY`).
pub fn notifications(
    raw: &[RawWebhook],
    secrets_dir: Option<&Path>,
    check: &mut Checker,
) -> Vec<WebhookConfig> {
    let mut names = BTreeSet::new();
    raw.iter()
        .enumerate()
        .map(|(i, w)| {
            let at = format!("notifications[{i}]");
            let url = match (&w.url, &w.url_file) {
                (Some(url), None) => {
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        check.report(format!("{at}.url"), "must start with http:// or https://");
                    }
                    Value::Literal(url.clone())
                }
                (None, Some(file)) => Value::File(check.file(&format!("{at}.url_file"), file)),
                _ => {
                    check.report(
                        &at,
                        "give the webhook's `url`, or `url_file` to read it from",
                    );
                    Value::Literal(String::new())
                }
            };
            let name = w.name.clone().unwrap_or_else(|| match &url {
                Value::Literal(u) => host_of(u).to_string(),
                Value::File(_) => format!("webhook-{}", i + 1),
            });
            if !names.insert(name.clone()) {
                check.report(
                    format!("{at}.name"),
                    format!("another webhook is named {name:?}: give each its own `name`"),
                );
            }
            let format = match w.format.as_deref() {
                None | Some("json") => Format::Json,
                Some("slack") => Format::Slack,
                Some(other) => {
                    check.report(
                        format!("{at}.format"),
                        format!("{other:?} is not a format: json or slack"),
                    );
                    Format::Json
                }
            };
            let headers = w
                .headers
                .iter()
                .map(|(header, value)| {
                    let path = format!("{at}.headers.{header}");
                    if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
                        check.report(&path, "not a valid header name");
                    }
                    let value = match value {
                        RawHeaderValue::Literal(v) => Value::Literal(v.clone()),
                        RawHeaderValue::File { file } => Value::File(check.file(&path, file)),
                        RawHeaderValue::Secret { secret } => match secrets_dir {
                            Some(dir) => Value::File(
                                check.file(&path, &dir.join(&secret.name).join(&secret.key)),
                            ),
                            None => {
                                check.report(
                                    &path,
                                    "a Secret is read from rollout.secrets_dir, which is not set",
                                );
                                Value::Literal(String::new())
                            }
                        },
                    };
                    (header.clone(), value)
                })
                .collect();
            let events = w
                .events
                .iter()
                .enumerate()
                .filter_map(|(j, e)| {
                    let kind = EventKind::parse(e);
                    if kind.is_none() {
                        let known: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
                        check.report(
                            format!("{at}.events[{j}]"),
                            format!("{e:?} is not an event: one of {}", known.join(", ")),
                        );
                    }
                    kind
                })
                .collect();
            WebhookConfig {
                rollouts: w.rollouts.iter().cloned().collect(),
                name,
                url,
                format,
                headers,
                timeout: check
                    .duration(&format!("{at}.timeout"), w.timeout)
                    .unwrap_or(Duration::from_secs(5)),
                events,
                retries: w.retries.unwrap_or(3),
                backoff: check
                    .duration(&format!("{at}.backoff"), w.backoff)
                    .unwrap_or(Duration::from_secs(1)),
            }
        })
        .collect()
}

/// `hooks.slack.com` of `https://hooks.slack.com/services/…`.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit_once('@').map_or(authority, |(_, h)| h)
}
