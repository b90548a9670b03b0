//! Turns the YAML model into the data plane's specs, checking meaning as it goes.
//!
//! Every step records problems in the `Checker` and still returns a best-effort value, so one
//! pass finds every problem in the file; any problem at all means no `Config`.

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
use super::model::{RawConfig, RawHttp1Engine, RawLimits};
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
        &mut check,
    );
    let rollout = raw
        .rollout
        .as_ref()
        .map(|r| rollout::rollout(r, &routes, &mut check));
    let table = TableSpec { routes };
    let kube = raw.kube.as_ref().map(|k| kube::kube(k, &table, &mut check));
    let secrets_dir = rollout.as_ref().and_then(|r| r.secrets_dir.clone());
    let notifications =
        notifications::notifications(&raw.notifications, secrets_dir.as_deref(), &mut check);
    if !raw.notifications.is_empty() && raw.rollout.is_none() {
        check.report(
            "notifications",
            "webhooks are told of a rollout's events: this config has no `rollout:`",
        );
    }
    if raw.kube.is_some() && raw.rollout.is_some() {
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
        rollout,
        kube,
        notifications,
    })
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
