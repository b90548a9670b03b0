//! Routes: match rules, backends, weight, header routes, stickiness, mirroring, redirects and
//! rewrites.

use std::collections::HashMap;

use weir_proxy::table::spec::{
    BackendSpec, ClientIdentitySpec, HeaderMatchSpec, HeaderRouteSpec, MatchSpec, MirrorSpec,
    PathMatch, RouteSpec, StickySpec, Target, ValueMatch, CANARY, MIRROR_HEADER,
};

use super::backend::{backend, UpstreamDefaults};
use super::header::header_matches;
use super::url_filters;
use crate::config::check::Checker;
use crate::config::model::{
    RawHeaderRoute, RawMirror, RawRoute, RawSticky, RawTarget, RawUpstreamDefaults,
};

/// `required`: whether the config must have a route (not when HTTPRoutes make the table).
/// `logs`: the config has an `access_log:` section (a route's `access_log` needs one).
pub fn routes(
    raw: &[RawRoute],
    raw_defaults: &RawUpstreamDefaults,
    required: bool,
    logs: bool,
    check: &mut Checker,
) -> Vec<RouteSpec> {
    if raw.is_empty() && required {
        check.report("routes", "at least one route is required");
    }
    let defaults = UpstreamDefaults::compile(raw_defaults, check);
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut matches: HashMap<MatchKey, usize> = HashMap::new();
    let mut specs = Vec::with_capacity(raw.len());

    for (i, route) in raw.iter().enumerate() {
        let path = format!("routes[{i}]");
        let spec = compile_route(route, &defaults, &path, logs, check);
        if let Some(first) = names.insert(&route.name, i) {
            check.report(
                format!("{path}.name"),
                format!(
                    "duplicate route name {:?} (also routes[{first}])",
                    route.name
                ),
            );
        }
        // Two routes with the same match: the second could never be chosen.
        if let Some(first) = matches.insert(MatchKey::of(&spec), i) {
            check.report(
                format!("{path}.match"),
                format!("same hosts, path_prefix and headers as routes[{first}]"),
            );
        }
        specs.push(spec);
    }
    specs
}

fn compile_route(
    raw: &RawRoute,
    defaults: &UpstreamDefaults,
    path: &str,
    logs: bool,
    check: &mut Checker,
) -> RouteSpec {
    check.name(&format!("{path}.name"), &raw.name);
    let mut spec = match &raw.stable {
        Some(stable) => {
            let stable = backend(stable, defaults, &format!("{path}.stable"), check);
            RouteSpec::new(raw.name.clone(), stable)
        }
        None => {
            // A redirect answers by itself: it needs no backend.
            if raw.redirect.is_none() {
                check.report(
                    path,
                    "missing field `stable` (only a route with `redirect` may leave it out)",
                );
            }
            let mut spec = RouteSpec::new(raw.name.clone(), BackendSpec::new::<String>([]));
            spec.backends.clear();
            spec
        }
    };

    spec.hosts = hosts(&raw.matches.hosts, &format!("{path}.match.hosts"), check);
    let mut matched = MatchSpec::default();
    if let Some(prefix) = &raw.matches.path_prefix {
        if !prefix.starts_with('/') {
            check.report(format!("{path}.match.path_prefix"), "must start with \"/\"");
        }
        if prefix.contains(['?', '#']) {
            check.report(
                format!("{path}.match.path_prefix"),
                "has a query or fragment (\"?\" or \"#\"): a prefix matches the path only",
            );
        }
        matched.path = PathMatch::Prefix(prefix.clone());
    }
    matched.headers = header_matches(
        &raw.matches.headers,
        &format!("{path}.match.headers"),
        check,
    );
    spec.matches = vec![matched];
    spec.timeout = check.duration(&format!("{path}.timeout"), raw.timeout);
    spec.set_canary(
        raw.canary
            .as_ref()
            .map(|canary| backend(canary, defaults, &format!("{path}.canary"), check)),
    );
    let has_canary = spec.canary().is_some();

    if let Some(weight) = raw.canary_weight {
        let weight_path = format!("{path}.canary_weight");
        let bp = check.percent(&weight_path, weight);
        spec.set_canary_weight_bp(bp);
        if bp > 0 && !has_canary {
            check.report(
                weight_path,
                "a canary weight above 0 needs a canary backend",
            );
        }
    }
    spec.header_routes = header_routes(
        &raw.header_routes,
        has_canary,
        &format!("{path}.header_routes"),
        check,
    );
    spec.sticky = raw
        .sticky
        .as_ref()
        .and_then(|s| sticky(s, &format!("{path}.sticky"), check));
    spec.mirror = raw
        .mirror
        .as_ref()
        .map(|m| mirror(m, has_canary, &format!("{path}.mirror"), check));
    if raw.redirect.is_some() && raw.rewrite.is_some() {
        check.report(
            format!("{path}.rewrite"),
            "a route that redirects forwards nothing to rewrite: use one of redirect, rewrite",
        );
    }
    spec.redirect = raw
        .redirect
        .as_ref()
        .map(|r| url_filters::redirect(r, &spec.matches, &format!("{path}.redirect"), check));
    spec.rewrite = raw
        .rewrite
        .as_ref()
        .map(|r| url_filters::rewrite(r, &spec.matches, &format!("{path}.rewrite"), check));
    if let Some(identity) = &raw.client_identity {
        if let Some(header) = &identity.header {
            check.token(&format!("{path}.client_identity.header"), "header", header);
        }
        spec.client_identity = ClientIdentitySpec {
            allow: identity.allow.clone(),
            header: identity.header.as_ref().map(|h| h.to_ascii_lowercase()),
        };
    }
    spec.access_log = super::access_log::route(
        raw.access_log.as_ref(),
        logs,
        &format!("{path}.access_log"),
        check,
    );
    spec
}

/// Hosts are case-insensitive: stored lowercase. A wildcard is only a leading `*.`.
fn hosts(raw: &[String], path: &str, check: &mut Checker) -> Vec<String> {
    for (i, host) in raw.iter().enumerate() {
        let name = host.strip_prefix("*.").unwrap_or(host);
        let ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        if !ok {
            check.report(
                format!("{path}[{i}]"),
                format!("invalid host {host:?}: expected a DNS name or *.suffix"),
            );
        }
    }
    raw.iter().map(|host| host.to_ascii_lowercase()).collect()
}

fn header_routes(
    raw: &[RawHeaderRoute],
    has_canary: bool,
    path: &str,
    check: &mut Checker,
) -> Vec<HeaderRouteSpec> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut specs = Vec::with_capacity(raw.len());
    for (i, rule) in raw.iter().enumerate() {
        let rule_path = format!("{path}[{i}]");
        check.name(&format!("{rule_path}.name"), &rule.name);
        if let Some(first) = names.insert(&rule.name, i) {
            check.report(
                format!("{rule_path}.name"),
                format!(
                    "duplicate header route name {:?} (also {path}[{first}])",
                    rule.name
                ),
            );
        }
        // An empty match would send every request to one backend: almost surely a mistake.
        if rule.matches.is_empty() {
            check.report(
                format!("{rule_path}.match"),
                "at least one header match is required",
            );
        }
        let target = match rule.backend {
            RawTarget::Canary => Target::Canary,
            RawTarget::Stable => Target::Stable,
        };
        if target == Target::Canary && !has_canary {
            check.report(
                format!("{rule_path}.backend"),
                "routes to canary, but the route has no canary",
            );
        }
        specs.push(HeaderRouteSpec {
            name: rule.name.clone(),
            matches: header_matches(&rule.matches, &format!("{rule_path}.match"), check),
            target,
        });
    }
    specs
}

fn sticky(raw: &RawSticky, path: &str, check: &mut Checker) -> Option<StickySpec> {
    match (&raw.cookie, &raw.header) {
        (Some(cookie), None) => {
            check.token(&format!("{path}.cookie"), "cookie", cookie);
            Some(StickySpec::Cookie(cookie.clone()))
        }
        (None, Some(header)) => {
            check.token(&format!("{path}.header"), "header", header);
            Some(StickySpec::Header(header.to_ascii_lowercase()))
        }
        _ => {
            check.report(path, "set exactly one of cookie, header");
            None
        }
    }
}

fn mirror(raw: &RawMirror, has_canary: bool, path: &str, check: &mut Checker) -> MirrorSpec {
    if !has_canary {
        check.report(
            path,
            "a mirror copies requests to the canary, but the route has no canary",
        );
    }
    let name = raw.name.clone().unwrap_or_else(|| "mirror".to_string());
    check.name(&format!("{path}.name"), &name);
    for (i, method) in raw.methods.iter().enumerate() {
        if method.is_empty() || http::Method::from_bytes(method.as_bytes()).is_err() {
            check.report(
                format!("{path}.methods[{i}]"),
                format!("{method:?} is not an HTTP method"),
            );
        }
    }
    if let Some(header) = &raw.header {
        if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
            check.report(
                format!("{path}.header"),
                format!("{header:?} is not a header name"),
            );
        }
    }
    MirrorSpec {
        name,
        to: CANARY.to_string(),
        percent_bp: check.percent(&format!("{path}.percent"), raw.percent),
        matches: header_matches(&raw.matches, &format!("{path}.match"), check),
        rules: Vec::new(),
        methods: raw.methods.iter().map(|m| m.to_ascii_uppercase()).collect(),
        header: raw
            .header
            .clone()
            .unwrap_or_else(|| MIRROR_HEADER.to_string())
            .to_ascii_lowercase(),
    }
}

/// What makes two routes indistinguishable to the router; order of hosts and headers is
/// irrelevant to matching, so both are sorted. (A config-file route has one match.)
#[derive(PartialEq, Eq, Hash)]
struct MatchKey {
    hosts: Vec<String>,
    path: Option<PathMatch>,
    headers: Vec<(String, u8, String)>,
}

impl MatchKey {
    fn of(route: &RouteSpec) -> Self {
        let mut hosts = route.hosts.clone();
        hosts.sort();
        hosts.dedup();
        let first = route.matches.first();
        let mut headers: Vec<_> = first
            .map(|m| m.headers.iter().map(header_key).collect())
            .unwrap_or_default();
        headers.sort();
        MatchKey {
            hosts,
            path: first.map(|m| m.path.clone()),
            headers,
        }
    }
}

fn header_key(rule: &HeaderMatchSpec) -> (String, u8, String) {
    let (kind, value) = match &rule.value {
        ValueMatch::Exact(v) => (0, v),
        ValueMatch::Prefix(v) => (1, v),
        ValueMatch::Regex(v) => (2, v),
    };
    (rule.name.clone(), kind, value.clone())
}
