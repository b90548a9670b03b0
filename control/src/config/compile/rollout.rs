//! The `rollout:` section: files resolved, the driven route checked against the routes.

use weir_proxy::table::spec::RouteSpec;

use crate::config::check::Checker;
use crate::config::model::RawRollout;
use crate::config::RolloutConfig;

/// One rollout of `rollouts:` (or the `rollout:` section), its problems reported under `at`.
pub fn rollout(
    raw: &RawRollout,
    at: &str,
    routes: &[RouteSpec],
    check: &mut Checker,
) -> RolloutConfig {
    if raw.manifests.is_empty() {
        check.report(
            format!("{at}.manifests"),
            "name at least one file with the Rollout",
        );
    }
    let manifests = raw
        .manifests
        .iter()
        .enumerate()
        .map(|(i, f)| check.file(&format!("{at}.manifests[{i}]"), f))
        .collect();
    let known = |name: &str| routes.iter().any(|r| r.name == name);
    if let Some(route) = &raw.route {
        if !known(route) {
            check.report(
                format!("{at}.route"),
                format!("no route is named {route:?}"),
            );
        } else if routes
            .iter()
            .any(|r| &r.name == route && r.canary().is_none())
        {
            check.report(
                format!("{at}.route"),
                format!("route {route:?} has no canary backend to roll out"),
            );
        }
    }
    for (service, route) in &raw.services {
        if !known(route) {
            check.report(
                format!("{at}.services.{service}"),
                format!("no route is named {route:?}"),
            );
        }
    }
    if raw.route.is_none() && raw.services.is_empty() {
        check.report(at, "say which route the Rollout drives: `route`, or `services` mapping its Service names to routes");
    }
    let abort_ramp = raw.abort_ramp.as_ref().map(|r| {
        let step = check.percent(&format!("{at}.abort_ramp.step"), r.step);
        if step == 0 {
            check.report(format!("{at}.abort_ramp.step"), "must be more than 0");
        }
        let interval = check
            .duration(&format!("{at}.abort_ramp.interval"), Some(r.interval))
            .unwrap_or_default();
        (step, interval)
    });
    let base = check.base_dir().to_path_buf();
    let state_file = raw.state_file.as_deref().map(|p| {
        if p.is_relative() {
            base.join(p)
        } else {
            p.to_path_buf()
        }
    });
    if let Some(dir) = state_file
        .as_ref()
        .and_then(|f| f.parent())
        .filter(|d| !d.as_os_str().is_empty())
    {
        if !dir.is_dir() {
            check.report(
                format!("{at}.state_file"),
                format!("directory {} does not exist", dir.display()),
            );
        }
    }
    let token_file = raw
        .token_file
        .as_ref()
        .map(|f| check.file(&format!("{at}.token_file"), f));
    // A directory: `File::open` succeeds on one, and a missing one is reported.
    let secrets_dir = raw.secrets_dir.as_ref().map(|d| {
        let resolved = check.file(&format!("{at}.secrets_dir"), d);
        if resolved.exists() && !resolved.is_dir() {
            check.report(
                format!("{at}.secrets_dir"),
                format!("{} is not a directory", resolved.display()),
            );
        }
        resolved
    });
    RolloutConfig {
        manifests,
        name: raw.name.clone(),
        route: raw.route.clone(),
        services: raw.services.clone(),
        state_file,
        abort_ramp,
        token_file,
        secrets_dir,
    }
}
