//! From the config's table and a rollout's traffic to the table the data plane serves.

use weir_proxy::table::spec::{
    BackendSpec, HeaderMatchSpec, HeaderRouteSpec, MirrorRule, MirrorSpec, TableSpec, Target,
    ValueMatch, CANARY, MIRROR_HEADER, STABLE,
};

use super::machine::Traffic;
use crate::argo::model::StringMatch;

fn value(m: &StringMatch) -> ValueMatch {
    match m {
        StringMatch::Exact(v) => ValueMatch::Exact(v.clone()),
        StringMatch::Prefix(v) => ValueMatch::Prefix(v.clone()),
        StringMatch::Regex(v) => ValueMatch::Regex(v.clone()),
    }
}

/// The config's table with `route` driven by the rollout. The managed header routes come before
/// the route's own, so Argo's routes win.
pub fn compose(base: &TableSpec, route: &str, traffic: &Traffic) -> TableSpec {
    let mut table = base.clone();
    apply(&mut table, route, traffic);
    table
}

/// `compose` in place: one rollout's traffic on its route of `table`.
pub fn apply(table: &mut TableSpec, route: &str, traffic: &Traffic) {
    let Some(r) = table.routes.iter_mut().find(|r| r.name == route) else {
        return;
    };
    if traffic.promoted {
        // The canary's version is stable now: it takes stable's place and all the traffic.
        if let Some(canary) = r.canary().cloned() {
            if let Some(stable) = r.backend_mut(STABLE) {
                *stable = canary;
            }
            r.set_canary(None);
        }
        r.set_canary_weight_bp(0);
        return;
    }
    let weight_bp = if r.canary().is_some() {
        traffic.weight_bp
    } else {
        0
    };
    r.set_canary_weight_bp(weight_bp);
    let mut managed: Vec<HeaderRouteSpec> = traffic
        .header_routes
        .iter()
        .map(|(name, matches)| HeaderRouteSpec {
            name: name.clone(),
            matches: matches
                .iter()
                .map(|m| HeaderMatchSpec {
                    name: m.header_name.to_ascii_lowercase(),
                    value: value(&m.header_value),
                })
                .collect(),
            target: Target::Canary,
        })
        .collect();
    managed.append(&mut r.header_routes);
    r.header_routes = managed;
    if let Some((name, percent_bp, matches)) = &traffic.mirror {
        r.mirror = Some(MirrorSpec {
            name: name.clone(),
            to: CANARY.to_string(),
            percent_bp: *percent_bp,
            matches: Vec::new(),
            rules: matches
                .iter()
                .map(|m| MirrorRule {
                    method: m.method.as_ref().map(value),
                    path: m.path.as_ref().map(value),
                    headers: m
                        .headers
                        .iter()
                        .map(|(h, v)| HeaderMatchSpec {
                            name: h.to_ascii_lowercase(),
                            value: value(v),
                        })
                        .collect(),
                })
                .collect(),
            // A rule naming a method opts that method in; no other unsafe one is copied.
            methods: Vec::new(),
            header: MIRROR_HEADER.to_string(),
        });
    }
}

/// Identity of the canary version: a new one restarts the steps.
pub fn revision(base: &TableSpec, route: &str) -> String {
    let canary: Option<&BackendSpec> = base
        .routes
        .iter()
        .find(|r| r.name == route)
        .and_then(|r| r.canary());
    match canary {
        None => String::new(),
        Some(c) => {
            let mut addresses = c.addresses.clone();
            addresses.sort();
            format!(
                "{}|{:?}|{}",
                addresses.join(","),
                c.protocol,
                c.tls.is_some()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argo::model::HeaderRouteMatch;
    use weir_proxy::table::spec::RouteSpec;

    fn base() -> TableSpec {
        let mut web = RouteSpec::new("web", BackendSpec::new(["10.0.0.1:80"]));
        web.set_canary(Some(BackendSpec::new(["10.0.0.2:80"])));
        let other = RouteSpec::new("other", BackendSpec::new(["10.0.0.3:80"]));
        TableSpec {
            routes: vec![web, other],
        }
    }

    #[test]
    fn weight_and_managed_routes_apply_to_the_driven_route_only() {
        let t = Traffic {
            weight_bp: 2500,
            header_routes: vec![(
                "h".into(),
                vec![HeaderRouteMatch {
                    header_name: "X-Canary".into(),
                    header_value: StringMatch::Exact("y".into()),
                }],
            )],
            mirror: None,
            promoted: false,
        };
        let table = compose(&base(), "web", &t);
        assert_eq!(table.routes[0].canary_weight_bp(), 2500);
        assert_eq!(table.routes[0].header_routes[0].matches[0].name, "x-canary");
        assert_eq!(table.routes[1], base().routes[1]);
    }

    #[test]
    fn promotion_makes_the_canary_the_stable() {
        let table = compose(
            &base(),
            "web",
            &Traffic {
                promoted: true,
                ..Traffic::default()
            },
        );
        assert_eq!(
            table.routes[0].stable().unwrap().addresses,
            vec!["10.0.0.2:80"]
        );
        assert_eq!(table.routes[0].canary().cloned(), None);
        assert_eq!(table.routes[0].canary_weight_bp(), 0);
    }

    #[test]
    fn revision_follows_the_canary_backend() {
        let b = base();
        let mut changed = base();
        changed.routes[0].set_canary(Some(BackendSpec::new(["10.0.0.9:80"])));
        assert_ne!(revision(&b, "web"), revision(&changed, "web"));
        assert_eq!(revision(&b, "other"), "");
    }
}
