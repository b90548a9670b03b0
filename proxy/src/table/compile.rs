//! From specs to a table: validate everything, resolve every handle the data path will need.
//! All problems are collected, not just the first; a table with any problem is never built.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use http::header::HeaderName;

use super::backend::{Backend, BackendStats};
use super::error::TableErrors;
use super::hosts::HostIndex;
use super::matcher::HeaderMatcher;
use super::matcher::ValueMatcher;
use super::route::{HeaderRoute, Mirror, MirrorRule, Route, Sticky};
use super::split::Rotation;
use super::RouteTable;
use crate::stats::{LiveStats, Metrics, Role};
use crate::table_spec::{
    BackendSpec, HeaderMatchSpec, RouteSpec, StickySpec, TableSpec, Target, ValueMatch,
    MAX_WEIGHT_BP,
};
use crate::upstream::Upstreams;

/// What compiling needs from the long-lived parts of the data plane.
#[derive(Clone)]
pub struct Compiler {
    pub upstreams: Arc<Upstreams>,
    pub metrics: Arc<Metrics>,
    pub live: Arc<LiveStats>,
}

impl Compiler {
    pub fn compile(&self, spec: &TableSpec) -> Result<RouteTable, TableErrors> {
        let mut errors = TableErrors::default();
        let mut names = HashSet::new();
        let mut routes = Vec::with_capacity(spec.routes.len());
        for (i, rs) in spec.routes.iter().enumerate() {
            let path = format!("routes[{i}]");
            if !names.insert(rs.name.as_str()) {
                errors.push(
                    format!("{path}.name"),
                    format!("duplicate route name `{}`", rs.name),
                );
            }
            if let Some(route) = self.route(rs, &path, &mut errors) {
                routes.push(Arc::new(route));
            }
        }
        check_overlaps(spec, &mut errors);
        if !errors.0.is_empty() {
            return Err(errors);
        }
        Ok(index(spec.clone(), routes))
    }

    fn route(&self, rs: &RouteSpec, path: &str, errors: &mut TableErrors) -> Option<Route> {
        let before = errors.0.len();
        if rs.name.is_empty() {
            errors.push(format!("{path}.name"), "must not be empty");
        }
        if !rs.path_prefix.starts_with('/') {
            errors.push(
                format!("{path}.match.path_prefix"),
                format!("`{}` must start with `/`", rs.path_prefix),
            );
        }
        if rs.path_prefix.contains(['?', '#']) {
            errors.push(
                format!("{path}.match.path_prefix"),
                format!(
                    "`{}` has a query or fragment: a prefix matches the path only",
                    rs.path_prefix
                ),
            );
        }
        for (j, host) in rs.hosts.iter().enumerate() {
            let bare = host.strip_prefix("*.").unwrap_or(host);
            if bare.is_empty() || bare.contains(['*', '/', ' ']) {
                errors.push(
                    format!("{path}.match.hosts[{j}]"),
                    format!("`{host}` is not a host or `*.suffix`"),
                );
            }
        }
        if rs.canary_weight_bp > MAX_WEIGHT_BP {
            errors.push(
                format!("{path}.canary_weight"),
                format!("{} bp is over 100%", rs.canary_weight_bp),
            );
        }
        let headers = matchers(&rs.headers, &format!("{path}.match.headers"), errors);
        let stable = self.backend(
            &rs.name,
            Role::Stable,
            &rs.stable,
            &format!("{path}.stable"),
            errors,
        );
        let canary = rs.canary.as_ref().and_then(|c| {
            self.backend(&rs.name, Role::Canary, c, &format!("{path}.canary"), errors)
        });

        let mut header_routes = Vec::new();
        for (j, hr) in rs.header_routes.iter().enumerate() {
            let hp = format!("{path}.header_routes[{j}]");
            if hr.matches.is_empty() {
                errors.push(format!("{hp}.match"), "needs at least one header rule");
            }
            if hr.target == Target::Canary && rs.canary.is_none() {
                errors.push(
                    format!("{hp}.backend"),
                    "routes to canary, but the route has no canary",
                );
            }
            let role = match hr.target {
                Target::Stable => Role::Stable,
                Target::Canary => Role::Canary,
            };
            header_routes.push(HeaderRoute {
                matches: matchers(&hr.matches, &format!("{hp}.match"), errors),
                role,
            });
        }

        let sticky = match &rs.sticky {
            None => None,
            Some(StickySpec::Cookie(name)) if !name.is_empty() => {
                Some(Sticky::Cookie(name.clone()))
            }
            Some(StickySpec::Header(name)) => match HeaderName::from_bytes(name.as_bytes()) {
                Ok(h) => Some(Sticky::Header(h)),
                Err(_) => {
                    errors.push(
                        format!("{path}.sticky.header"),
                        format!("`{name}` is not a valid header name"),
                    );
                    None
                }
            },
            Some(StickySpec::Cookie(_)) => {
                errors.push(
                    format!("{path}.sticky.cookie"),
                    "cookie name must not be empty",
                );
                None
            }
        };

        let mirror = rs.mirror.as_ref().map(|m| {
            if rs.canary.is_none() {
                errors.push(
                    format!("{path}.mirror"),
                    "mirrors to canary, but the route has no canary",
                );
            }
            if m.percent_bp > MAX_WEIGHT_BP {
                errors.push(format!("{path}.mirror.percent"), "must be 0..=100");
            }
            let mut rules = Vec::with_capacity(m.rules.len());
            for (j, rule) in m.rules.iter().enumerate() {
                let rp = format!("{path}.mirror.rules[{j}]");
                let mut value = |v: &Option<ValueMatch>, field: &str| {
                    v.as_ref().and_then(|v| match ValueMatcher::compile(v) {
                        Ok(m) => Some(m),
                        Err(msg) => {
                            errors.push(format!("{rp}.{field}"), msg);
                            None
                        }
                    })
                };
                let method = value(&rule.method, "method");
                let path_match = value(&rule.path, "path");
                let headers = matchers(&rule.headers, &format!("{rp}.headers"), errors);
                rules.push(MirrorRule {
                    method,
                    path: path_match,
                    headers,
                });
            }
            Mirror {
                matches: matchers(&m.matches, &format!("{path}.mirror.match"), errors),
                rules,
                percent_bp: m.percent_bp,
                rotation: Rotation::new(),
            }
        });

        if errors.0.len() > before {
            return None;
        }
        let stable = stable?;
        let h1_passthrough = mirror.is_none()
            && std::iter::once(&stable)
                .chain(canary.as_ref())
                .flat_map(|b| b.endpoints())
                .all(|e| !e.is_http2());
        Some(Route {
            name: Arc::from(rs.name.as_str()),
            spec: rs.clone(),
            path_prefix: rs.path_prefix.clone(),
            headers,
            stable,
            canary,
            h1_passthrough,
            weight_bp: rs.canary_weight_bp,
            rotation: Rotation::new(),
            header_routes,
            sticky,
            mirror,
            timeout: rs.timeout,
        })
    }

    fn backend(
        &self,
        route: &str,
        role: Role,
        spec: &BackendSpec,
        path: &str,
        errors: &mut TableErrors,
    ) -> Option<Backend> {
        if spec.addresses.is_empty() {
            errors.push(format!("{path}.addresses"), "needs at least one address");
            return None;
        }
        let mut endpoints = Vec::with_capacity(spec.addresses.len());
        for (j, address) in spec.addresses.iter().enumerate() {
            if let Err(msg) = check_address(address) {
                errors.push(format!("{path}.addresses[{j}]"), msg);
                continue;
            }
            match self.upstreams.endpoint(address, spec) {
                Ok(e) => endpoints.push(e),
                Err(msg) => errors.push(format!("{path}.tls"), msg),
            }
        }
        if endpoints.len() != spec.addresses.len() {
            return None;
        }
        let stats = BackendStats {
            metrics: self.metrics.backend(route, role),
            live: self.live.window(route, role),
        };
        Some(Backend::new(role, endpoints, spec.balance, stats))
    }
}

fn check_address(address: &str) -> Result<(), String> {
    let Some((host, port)) = address.rsplit_once(':') else {
        return Err(format!("`{address}` is not host:port"));
    };
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => return Err(format!("`{address}`: port must be 1..65535")),
    }
    if host.is_empty() {
        return Err(format!("`{address}`: host is empty"));
    }
    Ok(())
}

fn matchers(specs: &[HeaderMatchSpec], path: &str, errors: &mut TableErrors) -> Vec<HeaderMatcher> {
    let mut out = Vec::with_capacity(specs.len());
    for (j, spec) in specs.iter().enumerate() {
        match HeaderMatcher::compile(spec) {
            Ok(m) => out.push(m),
            Err(msg) => errors.push(format!("{path}[{j}]"), msg),
        }
    }
    out
}

/// Two routes with the same hosts, prefix and header rules: the second could never match.
fn check_overlaps(spec: &TableSpec, errors: &mut TableErrors) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, r) in spec.routes.iter().enumerate() {
        let mut hosts: Vec<String> = r.hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
        hosts.sort();
        let key = format!("{hosts:?}|{}|{:?}", r.path_prefix, r.headers);
        if let Some(first) = seen.insert(key, i) {
            errors.push(
                format!("routes[{i}].match"),
                format!(
                    "same hosts, path_prefix and headers as routes[{first}]: it could never match"
                ),
            );
        }
    }
}

fn index(spec: TableSpec, routes: Vec<Arc<Route>>) -> RouteTable {
    let mut exact: HashMap<String, Vec<usize>> = HashMap::new();
    let mut wildcard: HashMap<String, Vec<usize>> = HashMap::new();
    let mut any = Vec::new();
    for (i, r) in routes.iter().enumerate() {
        if r.spec.hosts.is_empty() {
            any.push(i);
        }
        for host in &r.spec.hosts {
            let host = host.to_ascii_lowercase();
            match host.strip_prefix('*') {
                Some(suffix) => wildcard.entry(suffix.to_string()).or_default().push(i),
                None => exact.entry(host).or_default().push(i),
            }
        }
    }
    // Longest prefix first; among equals, routes with header rules before those without.
    let order = |v: &mut Vec<usize>| {
        v.sort_by_key(|&i| {
            let r = &routes[i];
            (
                std::cmp::Reverse(r.path_prefix.len()),
                std::cmp::Reverse(r.headers.len()),
                i,
            )
        })
    };
    exact.values_mut().for_each(order);
    wildcard.values_mut().for_each(order);
    order(&mut any);
    RouteTable {
        generation: 0,
        spec,
        hosts: HostIndex::new(exact, wildcard.into_iter().collect(), any),
        routes,
    }
}
