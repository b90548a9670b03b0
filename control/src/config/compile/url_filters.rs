//! A route's `redirect:` and `rewrite:`: the same rules as the Gateway API's RequestRedirect
//! and URLRewrite, in the config's own words (snake_case), each problem at its field's path.

use weir_proxy::table::spec::{MatchSpec, PathModifier, RedirectSpec, RewriteSpec};
use weir_proxy::table::{check_hostname, check_path_modifier};

use crate::config::check::Checker;
use crate::config::model::{RawPathModifier, RawRedirect, RawRewrite};

const STATUSES: [u16; 5] = [301, 302, 303, 307, 308];

pub fn redirect(
    raw: &RawRedirect,
    matches: &[MatchSpec],
    path: &str,
    check: &mut Checker,
) -> RedirectSpec {
    let scheme = raw.scheme.as_ref().map(|s| {
        if s != "http" && s != "https" {
            check.report(
                format!("{path}.scheme"),
                format!("{s:?} is not a scheme a redirect can name: http or https"),
            );
        }
        s.clone()
    });
    let hostname = raw
        .hostname
        .as_deref()
        .map(|h| hostname(h, &format!("{path}.hostname"), check));
    if raw.port == Some(0) {
        check.report(format!("{path}.port"), "must be 1..65535");
    }
    let status = raw.status.unwrap_or(302);
    if !STATUSES.contains(&status) {
        check.report(
            format!("{path}.status"),
            format!("{status} is not a redirect status: 301, 302 (the default), 303, 307 or 308"),
        );
    }
    RedirectSpec {
        scheme,
        hostname,
        port: raw.port,
        path: raw
            .path
            .as_ref()
            .and_then(|p| modifier(p, matches, &format!("{path}.path"), check)),
        status,
        // A config-file route: the port the client named in its Host, if any.
        listener_port: None,
    }
}

pub fn rewrite(
    raw: &RawRewrite,
    matches: &[MatchSpec],
    path: &str,
    check: &mut Checker,
) -> RewriteSpec {
    RewriteSpec {
        hostname: raw
            .hostname
            .as_deref()
            .map(|h| hostname(h, &format!("{path}.hostname"), check)),
        path: raw
            .path
            .as_ref()
            .and_then(|p| modifier(p, matches, &format!("{path}.path"), check)),
    }
}

fn hostname(host: &str, path: &str, check: &mut Checker) -> String {
    check_hostname(host).unwrap_or_else(|e| {
        check.report(path, e);
        host.to_string()
    })
}

fn modifier(
    raw: &RawPathModifier,
    matches: &[MatchSpec],
    path: &str,
    check: &mut Checker,
) -> Option<PathModifier> {
    let modifier = match (&raw.replace_full_path, &raw.replace_prefix_match) {
        (Some(full), None) => PathModifier::ReplaceFullPath(full.clone()),
        (None, Some(with)) => PathModifier::ReplacePrefixMatch(with.clone()),
        _ => {
            check.report(
                path,
                "set exactly one of replace_full_path, replace_prefix_match",
            );
            return None;
        }
    };
    // The table's own rule, so the file is refused here with its line, not at compile.
    if let Err((field, why)) = check_path_modifier(&modifier, matches) {
        check.report(format!("{path}{field}"), why);
    }
    Some(modifier)
}
