//! Turns the YAML model into the data plane's specs, checking meaning as it goes.
//!
//! Every step records problems in the `Checker` and still returns a best-effort value, so one
//! pass finds every problem in the file; any problem at all means no `Config`.

mod access_log;
mod backend;
mod header;
mod kube;
mod listener;
mod notifications;
mod rollout;
mod route;
mod url_filters;

use std::path::Path;

use weir_proxy::listen::spec::{Http1Engine, LimitsSpec};
use weir_proxy::table::spec::TableSpec;

use super::check::{Checker, Problem};
use super::model::{RawConfig, RawHttp1Engine, RawLimits, RawRollout};
use super::Config;

pub fn compile(raw: &RawConfig, file: &Path) -> Result<Config, Vec<Problem>> {
    let mut check = Checker::new(file.parent().unwrap_or(Path::new("")));
    let (listeners, admin) = listener::listeners(&raw.listeners, &raw.admin, &mut check);
    let limits = limits(&raw.limits, &mut check);
    let from_http_routes = raw.kube.as_ref().is_some_and(|k| k.http_routes.is_some());
    let routes = route::routes(
        &raw.routes,
        &raw.upstream_defaults,
        !from_http_routes,
        raw.access_log.is_some(),
        &mut check,
    );
    let access_log = raw
        .access_log
        .as_ref()
        .map(|a| access_log::section(a, &mut check));
    let rollouts = rollouts(raw, &routes, &mut check);
    let table = TableSpec { routes };
    let kube = raw.kube.as_ref().map(|k| kube::kube(k, &table, &mut check));
    let state_dir = raw.state_dir.as_ref().map(|d| {
        let resolved = check.file("state_dir", d);
        if resolved.exists() && !resolved.is_dir() {
            check.report(
                "state_dir",
                format!("{} is not a directory", resolved.display()),
            );
        }
        resolved
    });
    if state_dir.is_some() && rollouts.is_empty() {
        check.report(
            "state_dir",
            "it keeps rollouts' state: this config has no `rollouts:`",
        );
    }
    // A webhook's `{secret: …}` is read from the first rollout's secrets_dir.
    let secrets_dir = rollouts.first().and_then(|r| r.secrets_dir.clone());
    let notifications =
        notifications::notifications(&raw.notifications, secrets_dir.as_deref(), &mut check);
    if !raw.notifications.is_empty() && rollouts.is_empty() {
        check.report(
            "notifications",
            "webhooks are told of a rollout's events: this config has no `rollout:`",
        );
    }
    if raw.kube.is_some() && !rollouts.is_empty() {
        check.report(
            "kube",
            "`kube` follows Argo's weights and `rollout` decides them itself: choose one",
        );
    }
    if !check.problems.is_empty() {
        return Err(check.problems);
    }
    Ok(Config {
        listeners,
        admin,
        limits,
        table,
        source_file: file.to_path_buf(),
        rollouts,
        state_dir,
        access_log,
        kube,
        notifications,
    })
}

/// `rollouts:`, or `rollout:` as its one-item spelling; each route driven by one rollout only.
fn rollouts(
    raw: &RawConfig,
    routes: &[weir_proxy::table::spec::RouteSpec],
    check: &mut Checker,
) -> Vec<super::RolloutConfig> {
    if raw.rollout.is_some() && !raw.rollouts.is_empty() {
        check.report(
            "rollouts",
            "`rollout:` is the one-item spelling of `rollouts:`: use one of them",
        );
    }
    let listed: Vec<(String, &RawRollout)> = match &raw.rollout {
        Some(one) => vec![("rollout".to_string(), one)],
        None => raw
            .rollouts
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("rollouts[{i}]"), r))
            .collect(),
    };
    let mut claimed: std::collections::BTreeMap<String, String> = Default::default();
    listed
        .into_iter()
        .map(|(at, r)| {
            let compiled = rollout::rollout(r, &at, routes, check);
            let driven = compiled.route.iter().chain(compiled.services.values());
            let mut own = std::collections::BTreeSet::new();
            for route in driven {
                if !own.insert(route.clone()) {
                    continue;
                }
                if let Some(first) = claimed.insert(route.clone(), at.clone()) {
                    check.report(
                        &at,
                        format!(
                            "route {route:?} is driven by {first} already: one rollout a route"
                        ),
                    );
                }
            }
            compiled
        })
        .collect()
}

fn limits(raw: &RawLimits, check: &mut Checker) -> LimitsSpec {
    let default = LimitsSpec::default();
    LimitsSpec {
        max_connections: check.at_least_one(
            "limits.max_connections",
            raw.max_connections,
            default.max_connections,
        ),
        header_read_timeout: check
            .duration("limits.header_read_timeout", raw.header_read_timeout)
            .unwrap_or(default.header_read_timeout),
        max_header_bytes: check.at_least_one(
            "limits.max_header_bytes",
            raw.max_header_bytes,
            default.max_header_bytes,
        ),
        max_headers: check.at_least_one("limits.max_headers", raw.max_headers, default.max_headers),
        idle_timeout: check
            .duration("limits.idle_timeout", raw.idle_timeout)
            .unwrap_or(default.idle_timeout),
        shutdown_grace: check
            .duration("limits.shutdown_grace", raw.shutdown_grace)
            .unwrap_or(default.shutdown_grace),
        http1_engine: match raw.http1_engine {
            None => default.http1_engine,
            Some(RawHttp1Engine::Passthrough) => Http1Engine::Passthrough,
            Some(RawHttp1Engine::Hyper) => Http1Engine::Hyper,
        },
    }
}
