//! The `access_log:` section and each route's `access_log`.

use weir_proxy::access_log::{AccessLogSpec, Destination, Format, RoutePolicy};

use super::super::check::Checker;
use super::super::model::{RawAccessLog, RawRouteLog};
use super::super::percent::to_basis_points;

pub fn section(raw: &RawAccessLog, check: &mut Checker) -> AccessLogSpec {
    let defaults = AccessLogSpec::default();
    let destination = match &raw.path {
        None => Destination::Stdout,
        Some(p) if p.as_os_str() == "stdout" || p.as_os_str() == "-" => Destination::Stdout,
        Some(p) => Destination::File(check.output_file("access_log.path", p)),
    };
    let format = match raw.format.as_deref() {
        None | Some("json") => Format::Json,
        Some("logfmt") => Format::Logfmt,
        Some(other) => {
            check.report(
                "access_log.format",
                format!("{other:?} is not a format: json or logfmt"),
            );
            Format::Json
        }
    };
    let sample_bp = match raw.sample {
        None => defaults.sample_bp,
        Some(p) => to_basis_points(p).unwrap_or_else(|e| {
            check.report("access_log.sample", e);
            defaults.sample_bp
        }),
    };
    AccessLogSpec {
        destination,
        format,
        query: raw.query.unwrap_or(defaults.query),
        sample_bp,
    }
}

/// A route's own choice; `section`: whether the config has an `access_log:` to write to.
pub fn route(
    raw: Option<&RawRouteLog>,
    section: bool,
    path: &str,
    check: &mut Checker,
) -> RoutePolicy {
    let Some(raw) = raw else {
        return RoutePolicy::Inherit;
    };
    if !section {
        check.report(
            path,
            "there is no `access_log:` section to write to: add one (`access_log: {}` writes JSON to stdout)",
        );
    }
    match raw {
        RawRouteLog::Switch(false) => RoutePolicy::Off,
        RawRouteLog::Switch(true) => RoutePolicy::Sample(10_000),
        RawRouteLog::Sample(s) => match to_basis_points(s.sample) {
            Ok(bp) => RoutePolicy::Sample(bp),
            Err(e) => {
                check.report(format!("{path}.sample"), e);
                RoutePolicy::Inherit
            }
        },
    }
}
