//! The pure part of the HTTPRoute source: the HTTPRoutes attached to what this weir serves,
//! and the ready endpoints of their Services → routes of the table, and each HTTPRoute's
//! status as a conformant implementation reports it. No I/O, no clock.
//!
//! One weir route per HTTPRoute rule, named `NAMESPACE/NAME/RULE` (the rule's `name`, else its
//! index), its matches, weighted backends and filters carried over as the spec defines them.
//! Routes are listed oldest HTTPRoute first (then by `namespace/name`), rules in order, so the
//! table's tie-break is the spec's.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use weir_proxy::table::spec::{
    BackendSpec, HeaderEdits, HeaderMatchSpec, MatchSpec, MirrorSpec, Origin, PathMatch, PortMatch,
    QueryMatchSpec, RouteSpec, TableSpec, UpstreamProtocol, ValueMatch, WeightedBackend, CANARY,
    MAX_WEIGHT_BP, MIRROR_HEADER, STABLE,
};

use super::attach::{self, attach, names_gateway, Attached, Refused as NotAttached};
use super::certificates::{listener_certificates, ListenerCertificate};
pub use super::condition::Condition;
use super::endpoints::resolve;
use super::gateway_status::{self, GatewayReport};
use super::gateway_view::GatewayView;
use super::hostnames::Hosts;
use super::httproute::{
    BackendRefView, FilterView, HeaderFilterView, HttpRouteView, MatchView, ObjectRef, ParentRef,
    RuleView, ValueView,
};
use super::mesh;
use super::observed::Observed;
use crate::config::{HttpRouteParents, HttpRoutesSource, KubeSourceConfig};

/// What weir reports for one HTTPRoute under one of its parents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteStatus {
    pub namespace: String,
    pub name: String,
    /// The generation these conditions describe (`observedGeneration`).
    pub generation: i64,
    /// The object they describe (a route re-created under its name is another).
    pub uid: String,
    /// The parentRef, as the route wrote it.
    pub parent: ParentRef,
    pub conditions: Vec<Condition>,
}

/// The HTTPRoutes' share of the table, their statuses, and what is worth a warning.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Translated {
    pub routes: Vec<RouteSpec>,
    pub statuses: Vec<RouteStatus>,
    pub warnings: Vec<String>,
    /// One line: how many HTTPRoutes and rules are served.
    pub summary: String,
    /// The Gateway's own status, for an edge weir that has seen its Gateway.
    pub gateway: Option<GatewayReport>,
    /// Its HTTPS listeners' certificates, for listeners that take them from the Gateway.
    pub certificates: Option<Vec<ListenerCertificate>>,
}

/// What one parentRef naming what this weir serves comes to.
type ParentOutcome<'r> = (&'r ParentRef, Result<Attached, NotAttached>);

/// The parentRefs of `route` that name what this weir serves, each attached or refused.
fn our_parents<'r>(
    cfg: &KubeSourceConfig,
    source: &HttpRoutesSource,
    obs: &Observed,
    route: &'r HttpRouteView,
) -> Vec<ParentOutcome<'r>> {
    route
        .parent_refs
        .iter()
        .filter_map(|p| match &source.parents {
            HttpRouteParents::Gateway { name, .. } => {
                // The Gateway seen, if it is the one this weir serves.
                let gateway = obs.gateway.as_ref().filter(|g| {
                    g.name == *name && g.namespace == source.gateway_namespace(&cfg.namespace)
                })?;
                names_gateway(gateway, &route.namespace, p)
                    .then(|| (p, attach(gateway, route, p, &obs.namespaces)))
            }
            // A producer route (in the Services' namespace) or a consumer route (in another
            // watched namespace) naming one of the Services served.
            HttpRouteParents::Services(services) => {
                mesh::attach_service(obs, &cfg.namespace, services, route, p).map(|o| (p, o))
            }
        })
        .collect()
}

/// The table for the HTTPRoutes in `obs`, ahead of the config's own routes.
pub fn translate(
    cfg: &KubeSourceConfig,
    source: &HttpRoutesSource,
    obs: &Observed,
) -> (TableSpec, Translated) {
    let mut out = Translated::default();
    if let HttpRouteParents::Gateway { name, .. } = &source.parents {
        if obs.gateway.is_none() {
            out.warnings.push(format!(
                "Gateway {}/{name} not found: no HTTPRoute is attached",
                source.gateway_namespace(&cfg.namespace)
            ));
        }
    }
    let mut attached_routes: Vec<(&HttpRouteView, Vec<ParentOutcome<'_>>)> = obs
        .http_routes
        .values()
        .filter_map(|r| {
            let parents = our_parents(cfg, source, obs, r);
            (!parents.is_empty()).then_some((r, parents))
        })
        .collect();
    // The spec's tie-break across routes: the oldest first, then by namespace/name.
    attached_routes.sort_by(|(a, _), (b, _)| {
        (&a.created, &a.namespace, &a.name).cmp(&(&b.created, &b.namespace, &b.name))
    });

    let mut seen_matches = BTreeSet::new();
    let mut rules_served = 0;
    let mut served_routes = 0;
    // GAMMA: the Service ports some route attaches to (their own endpoints no longer serve
    // what no rule matches: the route's presence replaces the Service's implicit routing).
    let mut coverage = mesh::Coverage::new();
    // Per listener, the routes attached to it (a route counts once however many refs).
    let mut per_listener: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for (route, parents) in &attached_routes {
        for (_, outcome) in parents {
            if let Ok(a) = outcome {
                for l in &a.listeners {
                    per_listener
                        .entry(l.clone())
                        .or_default()
                        .insert((route.namespace.clone(), route.name.clone()));
                }
            }
        }
        // A consumer route (GAMMA) may send to its parent Service's namespace without a grant:
        // the route's parentRef already names it.
        let parent_namespace = match &source.parents {
            HttpRouteParents::Services(_) => Some(cfg.namespace.as_str()),
            HttpRouteParents::Gateway { .. } => None,
        };
        let (specs, conditions) =
            translate_route(cfg, obs, route, parent_namespace, &mut out.warnings);
        // The hosts and request ports its rules are served for.
        let attached: Vec<(&ParentRef, &Attached)> = parents
            .iter()
            .filter_map(|(p, o)| o.as_ref().ok().map(|a| (*p, a)))
            .collect();
        let serving = match (&source.parents, &obs.gateway) {
            (HttpRouteParents::Services(_), _) => mesh::serving(cfg, obs, &attached, &mut coverage),
            (HttpRouteParents::Gateway { .. }, Some(gateway)) => {
                let attached: Vec<&Attached> = attached.iter().map(|(_, a)| *a).collect();
                attach::serving(gateway, &attached)
            }
            (HttpRouteParents::Gateway { .. }, None) => Vec::new(),
        };
        let filters_ok = conditions.iter().any(|c| c.kind == "Accepted" && c.status);
        // Served only when some parent took it and weir can carry out all of its filters.
        if filters_ok && !serving.is_empty() {
            served_routes += 1;
            for spec in specs {
                for (k, group) in serving.iter().enumerate() {
                    let mut spec = spec.clone();
                    // Listeners on other ports with other hostnames: one route per group,
                    // named after its ports.
                    if k > 0 || serving.len() > 1 {
                        if let PortMatch::Only(ports) = &group.ports {
                            let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                            spec.name = format!("{}@{}", spec.name, ports.join(","));
                        }
                    }
                    spec.hosts = match &group.hosts {
                        Hosts::Only(h) => h.clone(),
                        _ => Vec::new(),
                    };
                    spec.ports = group.ports.clone();
                    // A redirect with neither port nor scheme keeps the listener's port (the
                    // Gateway's, which the request's Host need not carry).
                    if let Some(redirect) = &mut spec.redirect {
                        redirect.listener_port = group.listener_port;
                    }
                    out.routes.push(spec);
                }
                rules_served += 1;
            }
        }
        for (parent, outcome) in parents {
            let mut conditions = conditions.clone();
            if let Err(refused) = outcome {
                if let Some(accepted) = conditions.iter_mut().find(|c| c.kind == "Accepted") {
                    *accepted = Condition {
                        kind: "Accepted",
                        status: false,
                        reason: refused.reason,
                        message: refused.message.clone(),
                    };
                }
            }
            out.statuses.push(RouteStatus {
                namespace: route.namespace.clone(),
                name: route.name.clone(),
                generation: route.generation,
                uid: route.uid.clone(),
                parent: (*parent).clone(),
                conditions,
            });
        }
    }
    let served = |g: &&GatewayView| match &source.parents {
        HttpRouteParents::Gateway { name, .. } => {
            g.name == *name && g.namespace == source.gateway_namespace(&cfg.namespace)
        }
        HttpRouteParents::Services(_) => false,
    };
    out.gateway = obs.gateway.as_ref().filter(served).map(|gw| {
        let counts = per_listener
            .iter()
            .map(|(l, routes)| (l.clone(), routes.len()))
            .collect();
        let (certificates, problems) = listener_certificates(gw, &obs.secrets);
        out.certificates = Some(certificates);
        gateway_status::report(gw, &counts, &source.addresses, &problems)
    });
    // A match an earlier (older, or earlier-listed) rule already has could never be chosen: the
    // table would refuse it, so it is left out here, as the spec's precedence has it.
    for spec in &mut out.routes {
        let key = match_key(spec);
        spec.matches.retain(|m| {
            let fresh = seen_matches.insert(key(m));
            if !fresh {
                out.warnings.push(format!(
                    "{}: a match that an earlier rule already has is never used",
                    spec.name
                ));
            }
            fresh
        });
    }
    out.routes.retain(|r| !r.matches.is_empty());

    let mut table = TableSpec {
        routes: out.routes.clone(),
    };
    for base in &cfg.base.routes {
        let key = match_key(base);
        if base.matches.iter().any(|m| seen_matches.contains(&key(m))) {
            out.warnings.push(format!(
                "config route {}: an HTTPRoute has the same match and takes precedence",
                base.name
            ));
            continue;
        }
        table.routes.push(base.clone());
    }
    if let HttpRouteParents::Services(services) = &source.parents {
        for fallback in mesh::service_fallbacks(cfg, obs, services, &coverage, &mut out.warnings) {
            let key = match_key(&fallback)(&fallback.matches[0]);
            // A rule of an HTTPRoute already takes every request for the Service.
            if seen_matches.insert(key) {
                table.routes.push(fallback);
            }
        }
        table.routes.extend(mesh::pod_routes(cfg, obs, services));
    }
    out.summary = format!(
        "{} HTTPRoute(s) name this weir, {served_routes} attached, {rules_served} rule(s) served",
        attached_routes.len()
    );
    (table, out)
}

/// What makes a match of `spec` the same as another route's — its hosts (in any order), the
/// ports it serves and the match itself — as the table's own overlap check reads it.
fn match_key(spec: &RouteSpec) -> impl Fn(&MatchSpec) -> String {
    let mut hosts = spec.hosts.clone();
    hosts.sort();
    let ports = spec.ports.clone();
    move |m| format!("{hosts:?}|{ports:?}|{m:?}")
}

/// One HTTPRoute: its rules as routes, and its conditions.
fn translate_route(
    cfg: &KubeSourceConfig,
    obs: &Observed,
    route: &HttpRouteView,
    parent_namespace: Option<&str>,
    warnings: &mut Vec<String>,
) -> (Vec<RouteSpec>, Vec<Condition>) {
    let ctx = RefContext {
        cfg,
        obs,
        route,
        parent_namespace,
    };
    let id = format!("HTTPRoute {}/{}", route.namespace, route.name);
    let mut unsupported = Vec::new();
    let mut unresolved: Option<(&'static str, String)> = None;
    let mut specs = Vec::with_capacity(route.rules.len());
    for (i, rule) in route.rules.iter().enumerate() {
        let rule_id = rule.name.clone().unwrap_or_else(|| i.to_string());
        let mut spec = RouteSpec::new(
            format!("{}/{}/{rule_id}", route.namespace, route.name),
            BackendSpec::new::<String>([]),
        );
        spec.backends.clear();
        spec.origin = Some(Origin {
            kind: "HTTPRoute".to_string(),
            namespace: route.namespace.clone(),
            name: route.name.clone(),
            generation: route.generation,
        });
        spec.hosts = route
            .hostnames
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
        spec.matches = if rule.matches.is_empty() {
            vec![MatchSpec::default()]
        } else {
            rule.matches.iter().map(match_spec).collect()
        };
        match rule.request_timeout.as_deref().map(parse_gateway_duration) {
            Some(Ok(t)) => spec.timeout = t,
            Some(Err(e)) => unsupported.push(format!("rule {rule_id}: timeouts.request: {e}")),
            None => {}
        }

        for (j, b) in rule.backend_refs.iter().enumerate() {
            let at = format!("rule {rule_id} backendRefs[{j}]");
            match backend(&ctx, rule, b, &at, warnings) {
                Ok(Some(wb)) => {
                    let mut wb = wb;
                    // Two refs to one Service (on two ports): names stay unique.
                    if spec.backends.iter().any(|o| o.name == wb.name) {
                        wb.name = format!("{}:{}", wb.name, b.object.port.unwrap_or(0));
                    }
                    spec.backends.push(wb);
                }
                Ok(None) => {}
                Err(Refused::Unsupported(e)) => unsupported.push(e),
                Err(Refused::Unresolved(reason, e)) => {
                    warnings.push(format!("{id}: {e}"));
                    unresolved.get_or_insert((reason, e));
                }
            }
        }
        for filter in &rule.filters {
            match filter {
                FilterView::RequestHeaderModifier(h) => spec.request_headers = edits(h),
                FilterView::ResponseHeaderModifier(h) => spec.response_headers = edits(h),
                FilterView::RequestMirror(m) if spec.mirror.is_none() => {
                    let target = m.backend_ref.clone();
                    let percent_bp = match (&m.percent, &m.fraction) {
                        (Some(p), _) => (*p).min(100) as u64 * 100,
                        (None, Some(f)) => {
                            let d = f.denominator.unwrap_or(100).max(1);
                            u64::from(f.numerator.min(d)) * u64::from(MAX_WEIGHT_BP) / u64::from(d)
                        }
                        (None, None) => u64::from(MAX_WEIGHT_BP),
                    } as u16;
                    let as_ref = BackendRefView {
                        object: target,
                        weight: 0,
                        filters: Vec::new(),
                    };
                    let at = format!("rule {rule_id} RequestMirror");
                    match backend(&ctx, rule, &as_ref, &at, warnings) {
                        Ok(Some(wb)) => {
                            let to = match spec.backends.iter().find(|o| o.spec == wb.spec) {
                                Some(existing) => existing.name.clone(),
                                None => {
                                    let mut wb = wb;
                                    wb.name = format!("mirror:{}", wb.name);
                                    let name = wb.name.clone();
                                    spec.backends.push(wb);
                                    name
                                }
                            };
                            spec.mirror = Some(MirrorSpec {
                                name: "mirror".to_string(),
                                to,
                                percent_bp,
                                matches: Vec::new(),
                                rules: Vec::new(),
                                methods: Vec::new(),
                                header: MIRROR_HEADER.to_string(),
                            });
                        }
                        Ok(None) => {}
                        Err(Refused::Unsupported(e)) => unsupported.push(e),
                        Err(Refused::Unresolved(reason, e)) => {
                            warnings.push(format!("{id}: {e}"));
                            unresolved.get_or_insert((reason, e));
                        }
                    }
                }
                FilterView::RequestMirror(_) => unsupported.push(format!(
                    "rule {rule_id}: more than one RequestMirror (weir copies to one backend)"
                )),
                // The redirect wins over backendRefs (CEL refuses a rule with both): the route
                // answers it and contacts no backend.
                FilterView::RequestRedirect(r) => {
                    match super::filters::redirect(r, &spec.matches) {
                        Ok(redirect) => spec.redirect = Some(redirect),
                        Err(e) => unsupported.push(format!("rule {rule_id}: {e}")),
                    }
                }
                FilterView::UrlRewrite(r) => match super::filters::rewrite(r, &spec.matches) {
                    Ok(rewrite) => spec.rewrite = Some(rewrite),
                    Err(e) => unsupported.push(format!("rule {rule_id}: {e}")),
                },
                FilterView::Unsupported(kind) => unsupported.push(format!(
                    "rule {rule_id}: filter {kind} is not supported by weir"
                )),
            }
        }
        specs.push(spec);
    }

    let accepted = if unsupported.is_empty() {
        Condition {
            kind: "Accepted",
            status: true,
            reason: "Accepted",
            message: format!("{} rule(s) served", specs.len()),
        }
    } else {
        warnings.push(format!("{id} not accepted: {}", unsupported.join("; ")));
        Condition {
            kind: "Accepted",
            status: false,
            reason: "UnsupportedValue",
            message: unsupported.join("; "),
        }
    };
    let resolved = match unresolved {
        None => Condition {
            kind: "ResolvedRefs",
            status: true,
            reason: "ResolvedRefs",
            message: "every backendRef resolved".to_string(),
        },
        Some((reason, message)) => Condition {
            kind: "ResolvedRefs",
            status: false,
            reason,
            message,
        },
    };
    // An unresolved ref does not stop the route: its share goes to the refs that resolved.
    (specs, vec![accepted, resolved])
}

enum Refused {
    /// The route cannot be served as written (Accepted False).
    Unsupported(String),
    /// A reference that does not resolve (ResolvedRefs False, with the spec's reason).
    Unresolved(&'static str, String),
}

/// A backendRef → a weighted backend; None when its Service has no ready endpoint (its share
/// goes to the others, with a warning).
/// What a backendRef is resolved against: the source, the cluster as seen, the route, and the
/// namespace its parent makes reachable without a grant (a GAMMA parent Service's).
struct RefContext<'a> {
    cfg: &'a KubeSourceConfig,
    obs: &'a Observed,
    route: &'a HttpRouteView,
    parent_namespace: Option<&'a str>,
}

fn backend(
    ctx: &RefContext<'_>,
    rule: &RuleView,
    b: &BackendRefView,
    at: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<WeightedBackend>, Refused> {
    let RefContext {
        cfg,
        obs,
        route,
        parent_namespace,
    } = *ctx;
    let object: &ObjectRef = &b.object;
    if !object.is_service() {
        return Err(Refused::Unresolved(
            "InvalidKind",
            format!(
                "{at}: {}/{} is not a core Service",
                object.group.as_deref().unwrap_or(""),
                object.kind.as_deref().unwrap_or("Service")
            ),
        ));
    }
    let namespace = object.namespace.as_deref().unwrap_or(&route.namespace);
    if namespace != route.namespace
        && Some(namespace) != parent_namespace
        && !obs.grants.values().any(|g| {
            g.namespace == namespace && g.allows_route_to_service(&route.namespace, &object.name)
        })
    {
        return Err(Refused::Unresolved(
            "RefNotPermitted",
            format!(
                "{at}: Service {namespace}/{} is in another namespace and no ReferenceGrant there allows it",
                object.name
            ),
        ));
    }
    let mut response_headers = HeaderEdits::default();
    let mut request_headers = HeaderEdits::default();
    for f in &b.filters {
        match f {
            FilterView::ResponseHeaderModifier(h) => response_headers = edits(h),
            FilterView::RequestHeaderModifier(h) => request_headers = edits(h),
            FilterView::RequestMirror(_) => {
                return Err(Refused::Unsupported(format!(
                    "{at}: a backendRef's RequestMirror is not supported by weir"
                )))
            }
            FilterView::RequestRedirect(_) | FilterView::UrlRewrite(_) => {
                return Err(Refused::Unsupported(format!(
                    "{at}: a backendRef's RequestRedirect or URLRewrite is not supported by weir"
                )))
            }
            FilterView::Unsupported(kind) => {
                return Err(Refused::Unsupported(format!(
                    "{at}: filter {kind} is not supported by weir"
                )))
            }
        }
    }
    let known = obs
        .services
        .contains_key(&format!("{namespace}/{}", object.name))
        || obs.slices.values().any(|s| {
            s.namespace == namespace && s.service.as_deref() == Some(object.name.as_str())
        });
    if !known {
        return Err(Refused::Unresolved(
            "BackendNotFound",
            format!("{at}: Service {namespace}/{} not found", object.name),
        ));
    }
    if let Some(svc) = obs.services.get(&format!("{namespace}/{}", object.name)) {
        if let Err(e) = svc.port(object.port) {
            return Err(Refused::Unresolved("BackendNotFound", format!("{at}: {e}")));
        }
    }
    let endpoints = resolve(cfg, obs, namespace, &object.name, object.port, warnings);
    if endpoints.addresses.is_empty() {
        if b.weight > 0 {
            warnings.push(format!(
                "{at}: Service {namespace}/{} has no ready endpoints: its share goes to the other backends",
                object.name
            ));
        }
        return Ok(None);
    }
    let mut spec = BackendSpec::new(endpoints.addresses);
    if endpoints.h2c {
        // `appProtocol: kubernetes.io/h2c`: HTTP/2 with prior knowledge.
        spec.protocol = UpstreamProtocol::Http2;
    }
    // weir's default timeouts (`BackendSpec::new`).
    Ok(Some(WeightedBackend {
        name: label(cfg, &object.name, rule),
        weight: b.weight,
        spec,
        response_headers,
        request_headers,
    }))
}

/// The `backend` label: `stable`/`canary` where the config names the Service as such, or where
/// the rule pairs Flagger's `X-primary` with `X-canary`; else the Service's name.
fn label(cfg: &KubeSourceConfig, service: &str, rule: &RuleView) -> String {
    if cfg.stable_service.as_deref() == Some(service) {
        return STABLE.to_string();
    }
    if cfg.canary_service.as_deref() == Some(service) {
        return CANARY.to_string();
    }
    let names: Vec<&str> = rule
        .backend_refs
        .iter()
        .map(|b| b.object.name.as_str())
        .collect();
    if let Some(apex) = service.strip_suffix("-primary") {
        if names.contains(&format!("{apex}-canary").as_str()) {
            return STABLE.to_string();
        }
    }
    if let Some(apex) = service.strip_suffix("-canary") {
        if names.contains(&format!("{apex}-primary").as_str()) {
            return CANARY.to_string();
        }
    }
    service.to_string()
}

fn match_spec(m: &MatchView) -> MatchSpec {
    let path = match &m.path {
        None => PathMatch::Prefix("/".to_string()),
        Some(p) => {
            let value = p.value.clone().unwrap_or_else(|| "/".to_string());
            match p.kind.as_deref() {
                Some("Exact") => PathMatch::Exact(value),
                Some("RegularExpression") => PathMatch::Regex(value),
                // PathPrefix: `/foo/` and `/foo` are the same prefix (whole segments).
                _ => {
                    let trimmed = value.trim_end_matches('/');
                    PathMatch::Prefix(if trimmed.is_empty() {
                        "/".to_string()
                    } else {
                        trimmed.to_string()
                    })
                }
            }
        }
    };
    // The first entry for a name counts; later ones with the same name are ignored (spec).
    let mut header_names = BTreeSet::new();
    let headers = m
        .headers
        .iter()
        .filter(|h| header_names.insert(h.name.to_ascii_lowercase()))
        .map(|h| HeaderMatchSpec {
            name: h.name.to_ascii_lowercase(),
            value: value(h),
        })
        .collect();
    let mut query_names = BTreeSet::new();
    let query = m
        .query_params
        .iter()
        .filter(|q| query_names.insert(q.name.clone()))
        .map(|q| QueryMatchSpec {
            name: q.name.clone(),
            value: value(q),
        })
        .collect();
    MatchSpec {
        path,
        headers,
        query,
        method: m.method.clone(),
    }
}

fn value(v: &ValueView) -> ValueMatch {
    match v.kind.as_deref() {
        Some("RegularExpression") => ValueMatch::Regex(v.value.clone()),
        _ => ValueMatch::Exact(v.value.clone()),
    }
}

fn edits(h: &HeaderFilterView) -> HeaderEdits {
    let pairs = |list: &[super::httproute::NameValue]| {
        list.iter()
            .map(|nv| (nv.name.to_ascii_lowercase(), nv.value.clone()))
            .collect()
    };
    HeaderEdits {
        set: pairs(&h.set),
        add: pairs(&h.add),
        remove: h.remove.iter().map(|n| n.to_ascii_lowercase()).collect(),
    }
}

/// A Gateway API duration (GEP-2257): up to four `<number><unit>` parts, units h, m, s, ms;
/// `0s` means no timeout.
pub fn parse_gateway_duration(text: &str) -> Result<Option<Duration>, String> {
    let bad = || format!("`{text}` is not a Gateway API duration (like 10s, 1m30s, 500ms)");
    let mut rest = text;
    let mut total = Duration::ZERO;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 5 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (Duration::from_millis(n), 2)
        } else if rest.starts_with('h') {
            (Duration::from_secs(n * 3600), 1)
        } else if rest.starts_with('m') {
            (Duration::from_secs(n * 60), 1)
        } else if rest.starts_with('s') {
            (Duration::from_secs(n), 1)
        } else {
            return Err(bad());
        };
        total += unit;
        rest = &rest[len..];
        parts += 1;
    }
    if parts == 0 || parts > 4 {
        return Err(bad());
    }
    Ok((!total.is_zero()).then_some(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_durations() {
        let d = |s| parse_gateway_duration(s);
        assert_eq!(d("10s"), Ok(Some(Duration::from_secs(10))));
        assert_eq!(d("1m30s"), Ok(Some(Duration::from_secs(90))));
        assert_eq!(d("500ms"), Ok(Some(Duration::from_millis(500))));
        assert_eq!(d("1h1m1s1ms"), Ok(Some(Duration::from_millis(3_661_001))));
        assert_eq!(d("0s"), Ok(None));
        for bad in ["", "10", "s", "1.5s", "1d", "123456s", "1h1m1s1ms1s", "-1s"] {
            assert!(d(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn prefixes_ignore_a_trailing_slash_and_names_lowercase() {
        let view: MatchView = serde_json::from_value(serde_json::json!({
            "path": {"type": "PathPrefix", "value": "/api/"},
            "headers": [{"name": "X-Env", "value": "a"}, {"name": "x-env", "value": "b"}],
            "queryParams": [{"type": "RegularExpression", "name": "v", "value": "[0-9]+"}],
            "method": "POST"
        }))
        .unwrap_or_default();
        let m = match_spec(&view);
        assert_eq!(m.path, PathMatch::Prefix("/api".into()));
        // The first entry for a header name counts, the later one is ignored.
        assert_eq!(m.headers.len(), 1);
        assert_eq!(m.headers[0].name, "x-env");
        assert_eq!(m.headers[0].value, ValueMatch::Exact("a".into()));
        assert_eq!(m.query[0].value, ValueMatch::Regex("[0-9]+".into()));
        assert_eq!(m.method.as_deref(), Some("POST"));
    }
}
