//! The pure part of the Gateway's own status: what weir reports for the Gateway it serves and
//! each of its listeners (kinds supported, routes attached, the spec's conditions), and the
//! `status` to write — conditions keep their `lastTransitionTime` while their status holds,
//! and nothing is written when nothing changed.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::attach::supported_kinds;
use super::condition::Condition;
use super::gateway_view::GatewayView;
use super::httproute::GATEWAY_GROUP;

/// What weir says of the Gateway it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayReport {
    pub namespace: String,
    pub name: String,
    pub generation: i64,
    pub conditions: Vec<Condition>,
    pub listeners: Vec<ListenerReport>,
    /// `status.addresses`: where clients reach the Gateway (empty: left as it is).
    pub addresses: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerReport {
    pub name: String,
    pub supported_kinds: Vec<&'static str>,
    pub attached_routes: usize,
    pub conditions: Vec<Condition>,
}

fn condition(kind: &'static str, status: bool, reason: &'static str, message: &str) -> Condition {
    Condition {
        kind,
        status,
        reason,
        message: message.to_string(),
    }
}

/// The report for `gateway`, given how many routes attached to each listener (by name) and
/// the addresses configured (else the Gateway's own `spec.addresses`).
pub fn report(
    gateway: &GatewayView,
    attached: &BTreeMap<String, usize>,
    addresses: &[String],
    certificate_problems: &BTreeMap<String, String>,
) -> GatewayReport {
    let listeners = gateway
        .listeners
        .iter()
        .map(|l| {
            let kinds = supported_kinds(l);
            let http = matches!(l.protocol.as_str(), "HTTP" | "HTTPS");
            let conflicted = gateway
                .listeners
                .iter()
                .filter(|o| o.port == l.port && o.hostname == l.hostname)
                .count()
                > 1;
            let mut conditions = Vec::new();
            conditions.push(if http {
                condition("Accepted", true, "Accepted", "listener accepted")
            } else {
                condition(
                    "Accepted",
                    false,
                    "UnsupportedProtocol",
                    &format!("weir serves HTTP and HTTPS listeners, not {}", l.protocol),
                )
            });
            conditions.push(if conflicted {
                condition(
                    "Conflicted",
                    true,
                    "HostnameConflict",
                    "another listener has the same port and hostname",
                )
            } else {
                condition("Conflicted", false, "NoConflicts", "no conflicts")
            });
            let certificate = certificate_problems.get(&l.name);
            conditions.push(if http && kinds.is_empty() {
                condition(
                    "ResolvedRefs",
                    false,
                    "InvalidRouteKinds",
                    "allowedRoutes.kinds names no kind weir serves (HTTPRoute)",
                )
            } else if let Some(problem) = certificate {
                condition("ResolvedRefs", false, "InvalidCertificateRef", problem)
            } else {
                condition("ResolvedRefs", true, "ResolvedRefs", "references resolved")
            });
            conditions.push(if http && !conflicted && certificate.is_none() {
                condition("Programmed", true, "Programmed", "served by weir")
            } else {
                condition("Programmed", false, "Invalid", "not served")
            });
            ListenerReport {
                name: l.name.clone(),
                supported_kinds: kinds,
                attached_routes: attached.get(&l.name).copied().unwrap_or(0),
                conditions,
            }
        })
        .collect::<Vec<_>>();
    let any = listeners.iter().any(|l| {
        l.conditions
            .iter()
            .any(|c| c.kind == "Programmed" && c.status)
    });
    let conditions = vec![
        condition("Accepted", true, "Accepted", "served by weir"),
        if any {
            condition("Programmed", true, "Programmed", "served by weir")
        } else {
            condition("Programmed", false, "Invalid", "no listener weir can serve")
        },
    ];
    GatewayReport {
        namespace: gateway.namespace.clone(),
        name: gateway.name.clone(),
        generation: gateway.generation,
        conditions,
        listeners,
        addresses: if addresses.is_empty() {
            gateway.addresses.clone()
        } else {
            addresses.to_vec()
        },
    }
}

/// An address as `status.addresses` types it: an IP, else a hostname.
fn address_json(address: &str) -> Value {
    let kind = if address.parse::<std::net::IpAddr>().is_ok() {
        "IPAddress"
    } else {
        "Hostname"
    };
    json!({"type": kind, "value": address})
}

fn conditions_json(
    conditions: &[Condition],
    generation: i64,
    previous: Option<&Value>,
    now: &str,
) -> Value {
    Value::Array(
        conditions
            .iter()
            .map(|c| {
                let status = if c.status { "True" } else { "False" };
                let old = previous
                    .and_then(|p| p.as_array())
                    .and_then(|cs| cs.iter().find(|o| o["type"] == c.kind));
                let since = match old {
                    Some(o) if o["status"] == status => o["lastTransitionTime"].clone(),
                    _ => json!(now),
                };
                json!({
                    "type": c.kind, "status": status, "reason": c.reason, "message": c.message,
                    "observedGeneration": generation, "lastTransitionTime": since,
                })
            })
            .collect(),
    )
}

/// The Gateway's `status` to write, or None when the object already says this. Fields weir
/// does not report (`addresses` set by whoever exposes the Gateway) are kept.
pub fn merged_status(current: &Value, report: &GatewayReport, now: &str) -> Option<Value> {
    let old = &current["status"];
    let listeners: Vec<Value> = report
        .listeners
        .iter()
        .map(|l| {
            let before = old["listeners"]
                .as_array()
                .and_then(|ls| ls.iter().find(|o| o["name"] == l.name.as_str()));
            json!({
                "name": l.name,
                "supportedKinds": l.supported_kinds.iter()
                    .map(|k| json!({"group": GATEWAY_GROUP, "kind": k})).collect::<Vec<_>>(),
                "attachedRoutes": l.attached_routes,
                "conditions": conditions_json(&l.conditions, report.generation,
                    before.map(|b| &b["conditions"]), now),
            })
        })
        .collect();
    let mut status = match old {
        Value::Object(m) => Value::Object(m.clone()),
        _ => json!({}),
    };
    status["conditions"] = conditions_json(
        &report.conditions,
        report.generation,
        Some(&old["conditions"]),
        now,
    );
    status["listeners"] = Value::Array(listeners);
    if !report.addresses.is_empty() {
        status["addresses"] = report.addresses.iter().map(|a| address_json(a)).collect();
    }
    (strip_times(&status) != strip_times(old)).then_some(status)
}

fn strip_times(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "lastTransitionTime")
                .map(|(k, v)| (k.clone(), strip_times(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_times).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway() -> GatewayView {
        GatewayView::parse(&json!({
            "metadata": {"name": "gw", "namespace": "infra", "generation": 2},
            "spec": {"gatewayClassName": "weir", "listeners": [
                {"name": "http", "port": 80, "protocol": "HTTP"},
                {"name": "udp", "port": 53, "protocol": "UDP"},
                {"name": "grpc-only", "port": 81, "protocol": "HTTP",
                 "allowedRoutes": {"kinds": [{"kind": "GRPCRoute"}]}},
            ]}
        }))
        .unwrap()
    }

    #[test]
    fn listeners_report_kinds_attachments_and_conditions() {
        let r = report(
            &gateway(),
            &BTreeMap::from([("http".to_string(), 3)]),
            &[],
            &BTreeMap::new(),
        );
        let find = |l: &ListenerReport, kind: &str| {
            let c = l.conditions.iter().find(|c| c.kind == kind).unwrap();
            (c.status, c.reason)
        };
        let http = &r.listeners[0];
        assert_eq!(
            (http.attached_routes, &http.supported_kinds[..]),
            (3, &["HTTPRoute"][..])
        );
        assert_eq!(find(http, "Accepted"), (true, "Accepted"));
        assert_eq!(find(http, "Programmed"), (true, "Programmed"));
        assert_eq!(
            find(&r.listeners[1], "Accepted"),
            (false, "UnsupportedProtocol")
        );
        assert_eq!(
            find(&r.listeners[2], "ResolvedRefs"),
            (false, "InvalidRouteKinds")
        );
        assert!(r.conditions.iter().all(|c| c.status));
    }

    #[test]
    fn a_steady_state_writes_nothing_and_addresses_stay() {
        let rep = report(&gateway(), &BTreeMap::new(), &[], &BTreeMap::new());
        let object = json!({"status": {"addresses": [{"type": "IPAddress", "value": "10.0.0.1"}]}});
        let first = merged_status(&object, &rep, "T1").unwrap();
        assert_eq!(first["addresses"][0]["value"], "10.0.0.1");
        assert_eq!(first["listeners"][0]["attachedRoutes"], 0);
        assert_eq!(first["conditions"][0]["observedGeneration"], 2);
        let written = json!({"status": first});
        assert_eq!(merged_status(&written, &rep, "T2"), None);
        let more = report(
            &gateway(),
            &BTreeMap::from([("http".to_string(), 1)]),
            &[],
            &BTreeMap::new(),
        );
        let next = merged_status(&written, &more, "T3").unwrap();
        assert_eq!(next["listeners"][0]["attachedRoutes"], 1);
        // Same status: the transition time stays.
        assert_eq!(
            next["listeners"][0]["conditions"][0]["lastTransitionTime"],
            "T1"
        );
        // Addresses configured: written, typed.
        let addressed = report(
            &gateway(),
            &BTreeMap::new(),
            &["127.0.0.1".into(), "gw.example.com".into()],
            &BTreeMap::new(),
        );
        let with = merged_status(&written, &addressed, "T4").unwrap();
        assert_eq!(
            with["addresses"],
            json!([{"type": "IPAddress", "value": "127.0.0.1"},
                   {"type": "Hostname", "value": "gw.example.com"}])
        );
    }

    #[test]
    fn a_listener_without_its_certificate_is_not_programmed() {
        let problems =
            BTreeMap::from([("http".to_string(), "Secret infra/x not found".to_string())]);
        let r = report(&gateway(), &BTreeMap::new(), &[], &problems);
        let http = &r.listeners[0];
        let find = |kind: &str| http.conditions.iter().find(|c| c.kind == kind).unwrap();
        assert_eq!(
            (find("ResolvedRefs").status, find("ResolvedRefs").reason),
            (false, "InvalidCertificateRef")
        );
        assert!(find("ResolvedRefs").message.contains("not found"));
        assert!(!find("Programmed").status);
    }
}
