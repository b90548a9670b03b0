//! Which listeners of the Gateway an HTTPRoute's parentRef attaches to, and for which hosts —
//! or the reason the spec gives for attaching to none. Pure: the Gateway, the route, the
//! namespaces' labels in; the attachment out.
//!
//! The order is the spec's: a parentRef's `sectionName` and `port` choose the listeners it
//! may attach to (none: `NoMatchingParent`); of those, a listener takes the route when it
//! allows its kind and namespace (none: `NotAllowedByListeners`) and their hostnames
//! intersect (none: `NoMatchingListenerHostname`).

use std::collections::BTreeMap;

use super::gateway_view::{GatewayView, ListenerView, NamespaceView};
use super::hostnames::{intersect, Hosts};
use super::httproute::{HttpRouteView, ParentRef, GATEWAY_GROUP};
use weir_proxy::table::spec::PortMatch;

/// A parentRef attached to one or more listeners.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attached {
    /// The hosts the route is served for through this parent (never `Disjoint`).
    pub hosts: Hosts,
    /// The listeners (by name) that took it.
    pub listeners: Vec<String>,
    /// Their port when they share one (a redirect without a port or scheme keeps it). For a
    /// Service parent (GAMMA): the Service port the parentRef names.
    pub port: Option<u16>,
    /// Per port of the listeners that took it, the hosts it is served for there.
    pub per_port: BTreeMap<u16, Hosts>,
}

/// Where a route's rules are served: for these hosts, on these request ports; a redirect with
/// neither port nor scheme keeps `listener_port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Serving {
    pub hosts: Hosts,
    pub ports: PortMatch,
    pub listener_port: Option<u16>,
}

/// The hosts and ports an edge route is served on, through the parentRefs that attached it.
/// A Gateway whose HTTP listeners share one port: one group, any request port (a request's
/// Host need not name the listener's port, as behind a port-forward). Listeners on several
/// ports: a request is served by the routes of the listeners on its port (its Host's, else 80,
/// or 443 over TLS), one group per set of hosts (usually one: a route on listeners `:80` and
/// `:443` for the same hostname serves both ports).
pub fn serving(gateway: &GatewayView, attached: &[&Attached]) -> Vec<Serving> {
    let mut hosts = Hosts::Disjoint;
    let mut per_port: BTreeMap<u16, Hosts> = BTreeMap::new();
    for a in attached {
        hosts = hosts.union(a.hosts.clone());
        for (port, here) in &a.per_port {
            let entry = per_port.entry(*port).or_insert(Hosts::Disjoint);
            *entry = entry.clone().union(here.clone());
        }
    }
    if hosts == Hosts::Disjoint {
        return Vec::new();
    }
    let mut gateway_ports: Vec<u16> = gateway
        .listeners
        .iter()
        .filter(|l| takes_http_routes(l))
        .map(|l| l.port)
        .collect();
    gateway_ports.sort_unstable();
    gateway_ports.dedup();
    let one = |ports: &[u16]| match ports {
        [one] => Some(*one),
        _ => None,
    };
    if gateway_ports.len() <= 1 {
        let ports: Vec<u16> = per_port.keys().copied().collect();
        return vec![Serving {
            hosts,
            ports: PortMatch::Any,
            listener_port: one(&ports),
        }];
    }
    let mut groups: Vec<(Hosts, Vec<u16>)> = Vec::new();
    for (port, mut hosts) in per_port {
        if let Hosts::Only(h) = &mut hosts {
            h.sort();
        }
        match groups.iter_mut().find(|(h, _)| *h == hosts) {
            Some((_, ports)) => ports.push(port),
            None => groups.push((hosts, vec![port])),
        }
    }
    groups
        .into_iter()
        .map(|(hosts, ports)| Serving {
            hosts,
            listener_port: one(&ports),
            ports: PortMatch::Only(ports),
        })
        .collect()
}

/// Why a parentRef naming this Gateway attaches to no listener (`Accepted` False).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub reason: &'static str,
    pub message: String,
}

/// Does this parentRef name `gateway` (its group, kind, namespace and name)?
pub fn names_gateway(gateway: &GatewayView, route_namespace: &str, parent: &ParentRef) -> bool {
    parent.group() == GATEWAY_GROUP
        && parent.kind() == "Gateway"
        && parent.name == gateway.name
        && parent.namespace.as_deref().unwrap_or(route_namespace) == gateway.namespace
}

/// The protocols whose listeners take HTTPRoutes.
fn takes_http_routes(listener: &ListenerView) -> bool {
    matches!(listener.protocol.as_str(), "HTTP" | "HTTPS")
}

/// The route kinds a listener supports, of those it allows (weir serves HTTPRoutes only).
pub fn supported_kinds(listener: &ListenerView) -> Vec<&'static str> {
    let kinds = &listener.allowed_routes.kinds;
    let allowed = kinds.is_empty()
        || kinds
            .iter()
            .any(|k| k.group() == GATEWAY_GROUP && k.kind == "HTTPRoute");
    if takes_http_routes(listener) && allowed {
        vec!["HTTPRoute"]
    } else {
        Vec::new()
    }
}

/// Whether a listener lets a route from `namespace` attach.
fn allows_namespace(
    gateway: &GatewayView,
    listener: &ListenerView,
    namespace: &str,
    namespaces: &BTreeMap<String, NamespaceView>,
) -> bool {
    let from = &listener.allowed_routes.namespaces;
    match from.from.as_deref().unwrap_or("Same") {
        "All" => true,
        "Selector" => {
            let labels = namespaces.get(namespace).map(|n| &n.labels);
            match (&from.selector, labels) {
                (Some(selector), Some(labels)) => selector.matches(labels),
                // A Namespace not (yet) seen has no labels to match.
                (Some(selector), None) => selector.matches(&BTreeMap::new()),
                // A Selector without a selector is refused by the CRD; allow nothing.
                (None, _) => false,
            }
        }
        _ => namespace == gateway.namespace,
    }
}

/// Attaches `parent` (which names `gateway`) of `route`.
pub fn attach(
    gateway: &GatewayView,
    route: &HttpRouteView,
    parent: &ParentRef,
    namespaces: &BTreeMap<String, NamespaceView>,
) -> Result<Attached, Refused> {
    let id = format!("Gateway {}/{}", gateway.namespace, gateway.name);
    let candidates: Vec<&ListenerView> = gateway
        .listeners
        .iter()
        .filter(|l| parent.section_name.as_ref().is_none_or(|s| *s == l.name))
        .filter(|l| parent.port.is_none_or(|p| p == l.port))
        .collect();
    if candidates.is_empty() {
        let wanted = match (&parent.section_name, parent.port) {
            (Some(s), Some(p)) => format!("a listener named {s:?} on port {p}"),
            (Some(s), None) => format!("a listener named {s:?}"),
            (None, Some(p)) => format!("a listener on port {p}"),
            (None, None) => "a listener".to_string(),
        };
        return Err(Refused {
            reason: "NoMatchingParent",
            message: format!("{id} has no {wanted}"),
        });
    }
    let mut hosts = Hosts::Disjoint;
    let mut listeners = Vec::new();
    let mut ports = Vec::new();
    let mut per_port: BTreeMap<u16, Hosts> = BTreeMap::new();
    let mut allowed_somewhere = false;
    for l in candidates {
        if supported_kinds(l).is_empty()
            || !allows_namespace(gateway, l, &route.namespace, namespaces)
        {
            continue;
        }
        allowed_somewhere = true;
        let here = intersect(l.hostname.as_deref(), &route.hostnames);
        if here == Hosts::Disjoint {
            continue;
        }
        let at_port = per_port.entry(l.port).or_insert(Hosts::Disjoint);
        *at_port = at_port.clone().union(here.clone());
        hosts = hosts.union(here);
        listeners.push(l.name.clone());
        if !ports.contains(&l.port) {
            ports.push(l.port);
        }
    }
    if listeners.is_empty() {
        return Err(if allowed_somewhere {
            Refused {
                reason: "NoMatchingListenerHostname",
                message: format!(
                    "no listener of {id} has a hostname that intersects the route's ({})",
                    route.hostnames.join(", ")
                ),
            }
        } else {
            Refused {
                reason: "NotAllowedByListeners",
                message: format!(
                    "no listener of {id} allows an HTTPRoute from namespace {}",
                    route.namespace
                ),
            }
        });
    }
    Ok(Attached {
        hosts,
        listeners,
        port: match ports.as_slice() {
            [one] => Some(*one),
            _ => None,
        },
        per_port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gateway() -> GatewayView {
        GatewayView::parse(&json!({
            "metadata": {"name": "gw", "namespace": "infra"},
            "spec": {"gatewayClassName": "weir", "listeners": [
                {"name": "http", "port": 80, "protocol": "HTTP"},
                {"name": "bar", "port": 80, "protocol": "HTTP", "hostname": "*.bar.com",
                 "allowedRoutes": {"namespaces": {"from": "All"}}},
                {"name": "tcp", "port": 9000, "protocol": "TCP"},
                {"name": "sel", "port": 8080, "protocol": "HTTP",
                 "allowedRoutes": {"namespaces": {"from": "Selector",
                    "selector": {"matchLabels": {"team": "web"}}}}},
            ]}
        }))
        .unwrap()
    }

    fn route(namespace: &str, hostnames: &[&str]) -> HttpRouteView {
        HttpRouteView {
            namespace: namespace.into(),
            name: "r".into(),
            hostnames: hostnames.iter().map(|h| h.to_string()).collect(),
            ..HttpRouteView::default()
        }
    }

    fn parent(section: Option<&str>, port: Option<u16>) -> ParentRef {
        ParentRef {
            name: "gw".into(),
            section_name: section.map(str::to_string),
            port,
            ..ParentRef::default()
        }
    }

    #[test]
    fn section_name_and_port_choose_listeners() {
        let (gw, ns) = (gateway(), BTreeMap::new());
        let r = route("infra", &[]);
        let a = attach(&gw, &r, &parent(Some("http"), None), &ns).unwrap();
        assert_eq!(
            (a.hosts, a.listeners, a.port),
            (Hosts::Any, vec!["http".into()], Some(80))
        );
        let e = attach(&gw, &r, &parent(Some("nope"), None), &ns).unwrap_err();
        assert_eq!(e.reason, "NoMatchingParent");
        let e = attach(&gw, &r, &parent(Some("http"), Some(8080)), &ns).unwrap_err();
        assert_eq!(e.reason, "NoMatchingParent");
        // Port 80 without a section: both listeners there, the wildcard one adding its host.
        let a = attach(&gw, &r, &parent(None, Some(80)), &ns).unwrap();
        assert_eq!(a.listeners, ["http", "bar"]);
        assert_eq!(a.hosts, Hosts::Any);
    }

    #[test]
    fn listeners_on_several_ports_serve_each_port_its_own_hosts() {
        let gw = GatewayView::parse(&json!({
            "metadata": {"name": "gw", "namespace": "infra"},
            "spec": {"gatewayClassName": "weir", "listeners": [
                {"name": "foo", "port": 80, "protocol": "HTTP", "hostname": "foo.com"},
                {"name": "foo-tls", "port": 443, "protocol": "HTTPS", "hostname": "foo.com"},
                {"name": "bar", "port": 8080, "protocol": "HTTP", "hostname": "bar.com"},
            ]}
        }))
        .unwrap();
        let ns = BTreeMap::new();
        let r = route("infra", &[]);
        let all = attach(&gw, &r, &parent(None, None), &ns).unwrap();
        // foo.com on 80 and 443 alike (one group), bar.com on 8080 only.
        assert_eq!(
            serving(&gw, &[&all]),
            [
                Serving {
                    hosts: Hosts::Only(vec!["foo.com".into()]),
                    ports: PortMatch::Only(vec![80, 443]),
                    listener_port: None,
                },
                Serving {
                    hosts: Hosts::Only(vec!["bar.com".into()]),
                    ports: PortMatch::Only(vec![8080]),
                    listener_port: Some(8080),
                },
            ]
        );
        // One Gateway port (the usual one listener): any request port, as before ports were
        // read.
        let mut one = gateway();
        one.listeners.retain(|l| l.port != 8080);
        let a = attach(&one, &r, &parent(Some("http"), None), &ns).unwrap();
        let bar = attach(&one, &r, &parent(Some("bar"), None), &ns).unwrap();
        let s = serving(&one, &[&a, &bar]);
        assert_eq!(s.len(), 1);
        assert_eq!(
            (&s[0].ports, s[0].listener_port),
            (&PortMatch::Any, Some(80))
        );
        // The test Gateway has HTTP listeners on 80 and 8080 (and a TCP one, not counted): a
        // route attached on 8080 serves 8080 only, one on 80 port 80 only.
        let one = gateway();
        let a = attach(&one, &r, &parent(Some("http"), None), &ns).unwrap();
        assert_eq!(serving(&one, &[&a])[0].ports, PortMatch::Only(vec![80]));
        let mut labels = BTreeMap::new();
        labels.insert(
            "infra".to_string(),
            NamespaceView {
                labels: [("team".to_string(), "web".to_string())].into(),
                ..NamespaceView::default()
            },
        );
        let sel = attach(&one, &r, &parent(Some("sel"), None), &labels).unwrap();
        assert_eq!(serving(&one, &[&sel])[0].ports, PortMatch::Only(vec![8080]));
    }

    #[test]
    fn kinds_namespaces_and_hostnames_refuse_with_the_specs_reasons() {
        let (gw, mut ns) = (gateway(), BTreeMap::new());
        // A TCP listener takes no HTTPRoute.
        let e = attach(&gw, &route("infra", &[]), &parent(Some("tcp"), None), &ns).unwrap_err();
        assert_eq!(e.reason, "NotAllowedByListeners");
        // `Same` refuses another namespace; `All` takes it, for its hostname only.
        let other = route("apps", &[]);
        let e = attach(&gw, &other, &parent(Some("http"), None), &ns).unwrap_err();
        assert_eq!(e.reason, "NotAllowedByListeners");
        let a = attach(&gw, &other, &parent(None, None), &ns).unwrap();
        assert_eq!(a.listeners, ["bar"]);
        assert_eq!(a.hosts, Hosts::Only(vec!["*.bar.com".into()]));
        // Allowed, but no hostname in common.
        let e = attach(&gw, &route("apps", &["foo.com"]), &parent(None, None), &ns).unwrap_err();
        assert_eq!(e.reason, "NoMatchingListenerHostname");
        // Selector: by the namespace's labels.
        let e = attach(&gw, &other, &parent(Some("sel"), None), &ns).unwrap_err();
        assert_eq!(e.reason, "NotAllowedByListeners");
        ns.insert(
            "apps".to_string(),
            NamespaceView {
                name: "apps".into(),
                labels: BTreeMap::from([("team".to_string(), "web".to_string())]),
            },
        );
        assert!(attach(&gw, &other, &parent(Some("sel"), None), &ns).is_ok());
    }

    #[test]
    fn a_parent_names_the_gateway_by_group_kind_namespace_and_name() {
        let gw = gateway();
        let p = parent(None, None);
        assert!(names_gateway(&gw, "infra", &p));
        assert!(!names_gateway(&gw, "apps", &p));
        let p = ParentRef {
            namespace: Some("infra".into()),
            ..parent(None, None)
        };
        assert!(names_gateway(&gw, "apps", &p));
        let svc = ParentRef {
            group: Some(String::new()),
            kind: Some("Service".into()),
            ..p.clone()
        };
        assert!(!names_gateway(&gw, "apps", &svc));
    }
}
