//! The control plane's admin endpoints: the page (`GET /ui`, `crate::ui`), and the rollouts':
//! `GET /rollouts` (a summary each), `GET /rollouts/NAME`, `POST /rollouts/NAME/{promote,abort,
//! retry}`; and while there is exactly one, `GET /rollout` and `POST /rollout/…` for it.
//! Mutating calls need `Authorization: Bearer <token>` unless the admin listener is on loopback,
//! and pass the cross-site rules of `weir_proxy::admin::guard` first. Each is logged with the
//! address it came from.

use std::sync::Arc;

use http::{Method, StatusCode};
use weir_control::history::Sampler;
use weir_control::owner::SharedKube;
use weir_control::rollout::status::RolloutSummary;
use weir_control::rollout::{Command, RolloutHandle};
use weir_proxy::admin::{guard, AdminExtension, AdminFuture, AdminRequest, AdminResponse};

/// The control plane's admin endpoints: the rollout API, and /ready's detail on the Kubernetes
/// source.
pub struct ControlApi {
    /// Each rollout, with the token its mutating calls need (when set).
    pub rollouts: Vec<(RolloutHandle, Option<String>)>,
    pub kube: Option<SharedKube>,
    /// What the page at /ui charts.
    pub history: Sampler,
}

fn json(status: StatusCode, body: serde_json::Value) -> Option<AdminResponse> {
    Some(AdminResponse {
        status,
        content_type: "application/json",
        body: format!("{body:#}\n"),
    })
}

impl AdminExtension for ControlApi {
    fn ready_detail(&self) -> Option<serde_json::Value> {
        let handle = self
            .kube
            .as_ref()?
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        Some(serde_json::json!({
            "kube": {
                "synced": handle.staleness().is_some(),
                "staleness_seconds": handle.staleness().map(|d| d.as_secs_f64()),
                "problem": handle.problem(),
            }
        }))
    }

    fn handle(&self, req: AdminRequest) -> AdminFuture {
        if let Some(page) = crate::ui::answer(&req, &self.history) {
            return Box::pin(async move { Some(page) });
        }
        let rollouts = self.rollouts.clone();
        Box::pin(async move {
            if rollouts.is_empty() {
                return None;
            }
            let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
            if path == "/rollouts" {
                if req.method != Method::GET {
                    return json(
                        StatusCode::METHOD_NOT_ALLOWED,
                        serde_json::json!({"error": "GET /rollouts"}),
                    );
                }
                let list: Vec<RolloutSummary> =
                    rollouts.iter().map(|(r, _)| r.status().summary()).collect();
                return json(StatusCode::OK, serde_json::json!({ "rollouts": list }));
            }
            // `/rollout/ACTION` for the one rollout, `/rollouts/NAME/ACTION` for any.
            let (target, action) = if let Some(rest) = path.strip_prefix("/rollouts/") {
                let (name, action) = rest.split_once('/').unwrap_or((rest, ""));
                match rollouts.iter().find(|(r, _)| r.name() == name) {
                    Some(found) => (found.clone(), action),
                    None => {
                        return json(
                            StatusCode::NOT_FOUND,
                            serde_json::json!({"error": format!("no rollout is named {name:?}"), "rollouts": names(&rollouts)}),
                        )
                    }
                }
            } else if path == "/rollout" || path.starts_with("/rollout/") {
                let action = path
                    .strip_prefix("/rollout")
                    .unwrap_or("")
                    .trim_start_matches('/');
                match rollouts.as_slice() {
                    [one] => (one.clone(), action),
                    _ => {
                        return json(
                            StatusCode::CONFLICT,
                            serde_json::json!({
                                "error": format!("this weir runs {} rollouts: use /rollouts/NAME", rollouts.len()),
                                "rollouts": names(&rollouts),
                            }),
                        )
                    }
                }
            } else {
                return None;
            };
            let (rollout, token) = target;
            let command = match (&req.method, action) {
                (&Method::GET, "") => {
                    return json(StatusCode::OK, serde_json::json!(rollout.status()))
                }
                (&Method::POST, "promote") => {
                    if query.split('&').any(|kv| kv == "full=true" || kv == "full") {
                        Command::PromoteFull
                    } else {
                        Command::Promote
                    }
                }
                (&Method::POST, "abort") => Command::Abort,
                (&Method::POST, "retry") => Command::Retry,
                (_, "" | "promote" | "abort" | "retry") => {
                    return json(
                        StatusCode::METHOD_NOT_ALLOWED,
                        serde_json::json!({"error": "GET the rollout; POST promote, abort or retry"}),
                    )
                }
                _ => return None,
            };
            if let Some(expected) = &token {
                let given = req
                    .headers
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok());
                let presented = given.and_then(|g| g.strip_prefix("Bearer ")).unwrap_or("");
                if !guard::same_secret(presented.as_bytes(), expected.as_bytes()) {
                    tracing::warn!(peer = %req.peer, rollout = rollout.name(), ?command, "admin command refused: no valid token");
                    return json(
                        StatusCode::UNAUTHORIZED,
                        serde_json::json!({"error": "a bearer token is required"}),
                    );
                }
            }
            tracing::info!(peer = %req.peer, rollout = rollout.name(), ?command, "admin command");
            match rollout.command(command).await {
                Ok(done) => json(
                    StatusCode::OK,
                    serde_json::json!({"ok": done, "rollout": rollout.status()}),
                ),
                Err(why) => json(StatusCode::CONFLICT, serde_json::json!({"error": why})),
            }
        })
    }
}

fn names(rollouts: &[(RolloutHandle, Option<String>)]) -> Vec<&str> {
    rollouts.iter().map(|(r, _)| r.name()).collect()
}

/// The token the admin API demands, if it demands one: none on loopback; elsewhere the
/// configured file's content, and refusing to start without one.
pub fn token_for(
    admin: std::net::SocketAddr,
    token_file: Option<&std::path::Path>,
) -> anyhow::Result<Option<String>> {
    match token_file {
        Some(file) => {
            let token = std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("rollout.token_file {}: {e}", file.display()))?
                .trim()
                .to_string();
            anyhow::ensure!(!token.is_empty(), "rollout.token_file {} is empty", file.display());
            Ok(Some(token))
        }
        None if admin.ip().is_loopback() => Ok(None),
        None => anyhow::bail!(
            "the admin listener {admin} is not on loopback: set rollout.token_file so that promote/abort/retry need a token"
        ),
    }
}

pub fn extension(
    rollouts: Vec<(RolloutHandle, Option<String>)>,
    kube: Option<SharedKube>,
    history: Sampler,
) -> Arc<dyn AdminExtension> {
    Arc::new(ControlApi {
        rollouts,
        kube,
        history,
    })
}
