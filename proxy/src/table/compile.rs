//! From specs to a table: validate everything, resolve every handle the data path will need.
//! All problems are collected, not just the first; a table with any problem is never built.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use http::header::HeaderName;

use super::backend::{Backend, BackendStats};
use super::edits::Edits;
use super::error::TableErrors;
use super::hosts::HostIndex;
use super::identity::IdentityRules;
use super::matcher::{HeaderMatcher, Match, ValueMatcher};
use super::route::{HeaderRoute, Mirror, MirrorRule, Route, Sticky};
use super::split::{Rotation, Split};
use super::url_filters;
use super::RouteTable;
use crate::stats::{LiveStats, Metrics};
use crate::table_spec::{
    BackendSpec, HeaderEdits, HeaderMatchSpec, PathMatch, PortMatch, RouteSpec, StickySpec,
    TableSpec, ValueMatch, CANARY, MAX_WEIGHT_BP, STABLE,
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
        for (j, host) in rs.hosts.iter().enumerate() {
            let bare = host.strip_prefix("*.").unwrap_or(host);
            if bare.is_empty() || bare.contains(['*', '/', ' ']) {
                errors.push(
                    format!("{path}.match.hosts[{j}]"),
                    format!("`{host}` is not a host or `*.suffix`"),
                );
            }
        }
        if let PortMatch::Only(ports) | PortMatch::Except(ports) = &rs.ports {
            if ports.contains(&0) {
                errors.push(format!("{path}.ports"), "0 is not a port");
            }
        }
        if rs.matches.is_empty() {
            errors.push(format!("{path}.matches"), "needs at least one match");
        }
        let mut matches = Vec::with_capacity(rs.matches.len());
        for (j, m) in rs.matches.iter().enumerate() {
            // A route with one match (every config-file route) names it `match`, as its YAML does.
            let at = if rs.matches.len() == 1 {
                format!("{path}.match")
            } else {
                format!("{path}.matches[{j}]")
            };
            match Match::compile(m) {
                Ok(m) => matches.push(m),
                Err(problems) => {
                    for (field, msg) in problems {
                        let field = match (field.as_str(), &m.path) {
                            ("path", PathMatch::Prefix(_)) => "path_prefix".to_string(),
                            _ => field,
                        };
                        errors.push(format!("{at}.{field}"), msg);
                    }
                }
            }
        }

        // No backend (an HTTPRoute rule without backendRefs) is allowed: like all-zero
        // weights, the route answers 500 — unless it redirects, and never needs one.
        let mut names = HashSet::new();
        let mut backends = Vec::with_capacity(rs.backends.len());
        for (j, b) in rs.backends.iter().enumerate() {
            // A rollout's backends are named by role, and so are their config paths.
            let at = match b.name.as_str() {
                STABLE | CANARY => format!("{path}.{}", b.name),
                _ => format!("{path}.backends[{j}]"),
            };
            if b.name.is_empty() {
                errors.push(format!("{at}.name"), "must not be empty");
            } else if !names.insert(b.name.as_str()) {
                errors.push(
                    format!("{at}.name"),
                    format!("duplicate backend name `{}`", b.name),
                );
            }
            let edits = (
                edits(&b.request_headers, &format!("{at}.request_headers"), errors),
                edits(
                    &b.response_headers,
                    &format!("{at}.response_headers"),
                    errors,
                ),
            );
            if let Some(backend) = self.backend(&rs.name, &b.name, &b.spec, &at, edits, errors) {
                backends.push(backend);
            }
        }
        let index_of = |name: &str| rs.backends.iter().position(|b| b.name == name);

        let mut header_routes = Vec::new();
        for (j, hr) in rs.header_routes.iter().enumerate() {
            let hp = format!("{path}.header_routes[{j}]");
            if hr.matches.is_empty() {
                errors.push(format!("{hp}.match"), "needs at least one header rule");
            }
            let target = hr.target.backend();
            let Some(backend) = index_of(target) else {
                errors.push(
                    format!("{hp}.backend"),
                    format!("routes to {target}, but the route has no {target}"),
                );
                continue;
            };
            header_routes.push(HeaderRoute {
                matches: matchers(&hr.matches, &format!("{hp}.match"), errors),
                backend,
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

        let mirror = rs.mirror.as_ref().and_then(|m| {
            let to = index_of(&m.to);
            if to.is_none() {
                errors.push(
                    format!("{path}.mirror"),
                    format!("mirrors to {0}, but the route has no {0}", m.to),
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
            let mut methods = Vec::with_capacity(m.methods.len());
            for (j, name) in m.methods.iter().enumerate() {
                match http::Method::from_bytes(name.as_bytes()) {
                    Ok(method) => methods.push(method),
                    Err(_) => errors.push(
                        format!("{path}.mirror.methods[{j}]"),
                        format!("{name:?} is not a method"),
                    ),
                }
            }
            let header = match http::HeaderName::from_bytes(m.header.as_bytes()) {
                Ok(name) => name,
                Err(_) => {
                    errors.push(
                        format!("{path}.mirror.header"),
                        format!("{:?} is not a header name", m.header),
                    );
                    return None;
                }
            };
            Some(Mirror {
                matches: matchers(&m.matches, &format!("{path}.mirror.match"), errors),
                rules,
                percent_bp: m.percent_bp,
                rotation: Rotation::new(),
                to: to?,
                methods,
                header,
                pairs: self.live.pairs(&rs.name),
            })
        });
        let request_edits = edits(
            &rs.request_headers,
            &format!("{path}.request_headers"),
            errors,
        );
        let response_edits = edits(
            &rs.response_headers,
            &format!("{path}.response_headers"),
            errors,
        );

        let redirect = rs
            .redirect
            .as_ref()
            .and_then(|r| url_filters::redirect(r, &rs.matches, path, errors));
        let rewrite = rs
            .rewrite
            .as_ref()
            .and_then(|r| url_filters::rewrite(r, &rs.matches, path, errors));

        if errors.0.len() > before {
            return None;
        }
        let weights: Vec<u32> = rs.backends.iter().map(|b| b.weight).collect();
        let split = Split::new(&weights);
        // Redirects and rewrites are carried out by the hyper engine alone, as header edits
        // are: the byte engine never needs to know of them. A mirror it carries out for
        // bodiless requests (`h1::mirror`).
        let identity = IdentityRules::compile(
            &rs.client_identity,
            &format!("{path}.client_identity"),
            errors,
        );
        let h1_passthrough = identity.is_none()
            && redirect.is_none()
            && rewrite.is_none()
            && request_edits.is_empty()
            && response_edits.is_empty()
            && backends
                .iter()
                .all(|b| b.response_edits.is_empty() && b.request_edits.is_empty())
            && backends
                .iter()
                .flat_map(|b| b.endpoints())
                .all(|e| !e.is_http2());
        Some(Route {
            name: Arc::from(rs.name.as_str()),
            spec: rs.clone(),
            matches,
            shares: split.shares(backends.len()),
            split,
            backends,
            h1_passthrough,
            rotation: Rotation::new(),
            header_routes,
            sticky,
            mirror,
            timeout: rs.timeout,
            request_edits,
            response_edits,
            redirect,
            rewrite,
            identity,
        })
    }

    fn backend(
        &self,
        route: &str,
        name: &str,
        spec: &BackendSpec,
        path: &str,
        edits: (Edits, Edits),
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
            metrics: self.metrics.backend(route, name),
            live: self.live.window(route, name),
        };
        Some(Backend::new(
            Arc::from(name),
            endpoints,
            spec.balance,
            stats,
            edits,
        ))
    }
}

fn edits(spec: &HeaderEdits, path: &str, errors: &mut TableErrors) -> Edits {
    match Edits::compile(spec) {
        Ok(e) => e,
        Err(problems) => {
            for (field, msg) in problems {
                errors.push(format!("{path}.{field}"), msg);
            }
            Edits::default()
        }
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

/// Two routes with the same hosts, ports and match: the second could never match.
fn check_overlaps(spec: &TableSpec, errors: &mut TableErrors) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, r) in spec.routes.iter().enumerate() {
        let mut hosts: Vec<String> = r.hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
        hosts.sort();
        let ports = &r.ports;
        for m in &r.matches {
            let key = format!("{hosts:?}|{ports:?}|{m:?}");
            match seen.get(&key) {
                Some(&first) if first != i => errors.push(
                    format!("routes[{i}].match"),
                    format!("same hosts and match as routes[{first}]: it could never match"),
                ),
                Some(_) => {}
                None => {
                    seen.insert(key, i);
                }
            }
        }
    }
}

fn index(spec: TableSpec, routes: Vec<Arc<Route>>) -> RouteTable {
    // One entry per (route, match); the host lists hold entry numbers.
    let entries: Vec<(usize, usize)> = routes
        .iter()
        .enumerate()
        .flat_map(|(i, r)| (0..r.matches.len()).map(move |j| (i, j)))
        .collect();
    let mut exact: HashMap<String, Vec<usize>> = HashMap::new();
    let mut wildcard: HashMap<String, Vec<usize>> = HashMap::new();
    let mut any = Vec::new();
    for (e, &(i, _)) in entries.iter().enumerate() {
        let r = &routes[i];
        if r.spec.hosts.is_empty() {
            any.push(e);
        }
        for host in &r.spec.hosts {
            let host = host.to_ascii_lowercase();
            match host.strip_prefix('*') {
                Some(suffix) => wildcard.entry(suffix.to_string()).or_default().push(e),
                None => exact.entry(host).or_default().push(e),
            }
        }
    }
    // Most specific match first (`Match::precedence`); among equals, table order, then the
    // order of a route's own matches.
    let order = |v: &mut Vec<usize>| {
        v.sort_by_cached_key(|&e| {
            let (i, j) = entries[e];
            (routes[i].matches(j).precedence(), e)
        })
    };
    exact.values_mut().for_each(order);
    wildcard.values_mut().for_each(order);
    order(&mut any);
    let by_port = routes.iter().any(|r| r.spec.ports != PortMatch::Any);
    RouteTable {
        generation: 0,
        by_port,
        spec,
        hosts: HostIndex::new(exact, wildcard.into_iter().collect(), any),
        entries,
        routes,
    }
}
