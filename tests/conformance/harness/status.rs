//! Status as the suite judges it (`utils_kubernetes_helpers.go`), read from the fake API
//! server's stored objects. Every wait is bounded by [`STATUS_TIMEOUT`] (the suite allows
//! 60–180 s; a weir that writes status does so within a second or two).
//!
//! The API server fills a `parentRef`'s defaults (group `gateway.networking.k8s.io`, kind
//! `Gateway`) from the CRD schema on every write, status included; the fake API server does
//! not, so a missing group or kind is read here as the API server would have stored it.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::cluster::CONTROLLER;
use crate::fake_kube::FakeCluster;

pub const STATUS_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(100);
pub const GROUP: &str = "gateway.networking.k8s.io";
const V1: &str = "gateway.networking.k8s.io/v1";

/// An expected condition: type, status, reason ("" matches any, as in `findConditionInList`).
pub type Cond = (&'static str, &'static str, &'static str);

pub const ACCEPTED: Cond = ("Accepted", "True", "Accepted");
pub const RESOLVED_REFS: Cond = ("ResolvedRefs", "True", "ResolvedRefs");

/// `findConditionInList`.
pub fn has_condition(conditions: &Value, (kind, status, reason): Cond) -> bool {
    conditions.as_array().is_some_and(|cs| {
        cs.iter().any(|c| {
            c["type"] == kind
                && (status.is_empty() || c["status"] == status)
                && (reason.is_empty() || c["reason"] == reason)
        })
    })
}

/// `ConditionsHaveLatestObservedGeneration`: every condition observed the object's generation.
pub fn latest(object: &Value, conditions: &Value) -> Result<(), String> {
    let generation = &object["metadata"]["generation"];
    let stale: Vec<String> = conditions
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter(|c| c["observedGeneration"] != *generation)
                .map(|c| format!("{} (generation {})", c["type"], c["observedGeneration"]))
                .collect()
        })
        .unwrap_or_default();
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "expected observedGeneration {generation} for all conditions; stale: {}",
            stale.join(", ")
        ))
    }
}

/// Polls `check` on the object until it passes; panics with the last reason and the object.
pub async fn wait_object(
    cluster: &FakeCluster,
    kind: &str,
    (namespace, name): (&str, &str),
    what: &str,
    poll: Duration,
    mut check: impl FnMut(&Value) -> Result<(), String>,
) {
    let start = Instant::now();
    loop {
        let object = cluster
            .get(V1, kind, namespace, name)
            .unwrap_or(Value::Null);
        let verdict = if object.is_null() {
            Err(format!("{kind} {namespace}/{name} not found"))
        } else {
            check(&object)
        };
        match verdict {
            Ok(()) => return,
            Err(e) if start.elapsed() > STATUS_TIMEOUT => panic!(
                "{what}: not within {STATUS_TIMEOUT:?}: {e}\n{kind} {namespace}/{name}: {:#}",
                object["status"]
            ),
            Err(_) => tokio::time::sleep(poll).await,
        }
    }
}

pub fn route_parents(route: &Value) -> Vec<Value> {
    route["status"]["parents"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// A parentRef as the API server stores it (the CRD's defaults filled in).
fn defaulted(parent_ref: &Value) -> Value {
    let mut r = parent_ref.clone();
    if r["group"].is_null() {
        r["group"] = json!(GROUP);
    }
    if r["kind"].is_null() {
        r["kind"] = json!("Gateway");
    }
    r
}

/// One expected `RouteParentStatus` (controllerName is always weir's).
pub struct Parent {
    pub gateway: (String, String),
    pub conditions: Vec<Cond>,
}

/// `parentsForRouteMatch`: each expected parent matched by an entry with the same
/// controllerName, group, kind, name, namespace (an absent one matches unless required) and
/// conditions.
fn parents_match(actual: &[Value], expected: &[Parent], namespace_required: bool) -> bool {
    expected.iter().all(|e| {
        actual.iter().any(|a| {
            let r = defaulted(&a["parentRef"]);
            a["controllerName"] == CONTROLLER
                && r["group"] == GROUP
                && r["kind"] == "Gateway"
                && r["name"] == e.gateway.1.as_str()
                && (r["namespace"] == e.gateway.0.as_str()
                    || (!namespace_required && r["namespace"].is_null()))
                && e.conditions
                    .iter()
                    .all(|c| has_condition(&a["conditions"], *c))
        })
    })
}

/// `HTTPRouteMustHaveParents` (every parent's conditions at the route's generation).
pub async fn route_must_have_parents(
    cluster: &FakeCluster,
    route: (&str, &str),
    expected: &[Parent],
    namespace_required: bool,
) {
    wait_object(
        cluster,
        "HTTPRoute",
        route,
        "HTTPRoute parents",
        POLL,
        |r| {
            for p in route_parents(r) {
                latest(r, &p["conditions"])?;
            }
            if parents_match(&route_parents(r), expected, namespace_required) {
                Ok(())
            } else {
                Err("parents do not match".into())
            }
        },
    )
    .await;
}

/// `HTTPRouteMustHaveCondition`: some parent entry for the Gateway has the condition.
pub async fn route_must_have_condition(
    cluster: &FakeCluster,
    route: (&str, &str),
    gateway: (&str, &str),
    condition: Cond,
) {
    wait_object(
        cluster,
        "HTTPRoute",
        route,
        &format!("HTTPRoute condition {condition:?}"),
        POLL,
        |r| {
            let mut found = false;
            for p in route_parents(r) {
                latest(r, &p["conditions"])?;
                let pr = &p["parentRef"];
                if pr["name"] == gateway.1
                    && (pr["namespace"].is_null() || pr["namespace"] == gateway.0)
                    && has_condition(&p["conditions"], condition)
                {
                    found = true;
                }
            }
            found
                .then_some(())
                .ok_or_else(|| "no such condition".into())
        },
    )
    .await;
}

/// `HTTPRouteMustHaveResolvedRefsConditionsTrue`.
pub async fn route_must_have_resolved_refs(
    cluster: &FakeCluster,
    route: (&str, &str),
    gateway: (&str, &str),
) {
    route_must_have_condition(cluster, route, gateway, RESOLVED_REFS).await;
}

/// `HTTPRouteMustHaveLatestConditions`.
pub async fn route_must_have_latest_conditions(cluster: &FakeCluster, route: (&str, &str)) {
    wait_object(
        cluster,
        "HTTPRoute",
        route,
        "HTTPRoute latest conditions",
        POLL,
        |r| {
            let parents = route_parents(r);
            if parents.is_empty() {
                return Err("no parents in status".into());
            }
            parents.iter().try_for_each(|p| latest(r, &p["conditions"]))
        },
    )
    .await;
}

/// `HTTPRouteMustHaveNoAcceptedParents`: no parents (seen twice, a second apart), or exactly
/// one, at the latest generation, with Accepted False.
pub async fn route_must_have_no_accepted_parents(cluster: &FakeCluster, route: (&str, &str)) {
    let mut empty_seen = false;
    wait_object(
        cluster,
        "HTTPRoute",
        route,
        "HTTPRoute with no accepted parents",
        Duration::from_secs(1),
        |r| {
            let parents = route_parents(r);
            match parents.as_slice() {
                [] if !empty_seen => {
                    empty_seen = true;
                    Err("no parents yet".into())
                }
                [] => Ok(()),
                [p] => {
                    latest(r, &p["conditions"])?;
                    has_condition(&p["conditions"], ("Accepted", "False", ""))
                        .then_some(())
                        .ok_or_else(|| "its one parent is not Accepted False".into())
                }
                _ => Err("more than one parent".into()),
            }
        },
    )
    .await;
}

/// The Gateway's own conditions observed its generation (`getGatewayStatus`).
fn gateway_latest(gw: &Value) -> Result<(), String> {
    latest(gw, &gw["status"]["conditions"])
}

/// `WaitForGatewayAddress`: an address with a type in the Gateway's status; returns it.
pub async fn gateway_address(cluster: &FakeCluster, gateway: (&str, &str)) -> String {
    let mut address = String::new();
    wait_object(
        cluster,
        "Gateway",
        gateway,
        "Gateway address in status",
        POLL,
        |gw| {
            gateway_latest(gw)?;
            let found = gw["status"]["addresses"].as_array().and_then(|a| {
                a.iter()
                    .find(|a| !a["type"].is_null())
                    .and_then(|a| a["value"].as_str())
            });
            address = found.ok_or("no typed address in status")?.to_string();
            Ok(())
        },
    )
    .await;
    address
}

/// `GatewayListenersMustHaveConditions` for every listener in the Gateway's status.
pub async fn gateway_listeners_must_have(
    cluster: &FakeCluster,
    gateway: (&str, &str),
    conditions: &[Cond],
) {
    wait_object(
        cluster,
        "Gateway",
        gateway,
        "Gateway listeners' conditions",
        POLL,
        |gw| {
            for c in conditions {
                for l in gw["status"]["listeners"].as_array().into_iter().flatten() {
                    if !has_condition(&l["conditions"], *c) {
                        return Err(format!("listener {} lacks {c:?}", l["name"]));
                    }
                }
            }
            Ok(())
        },
    )
    .await;
}

/// `GatewayMustHaveZeroRoutes`: no listeners in status, or one with no attached routes.
/// A route that names `gateway` but attaches to none of its listeners, as the suite's invalid
/// parentRef tests judge it: `Accepted` False with `reason`, no accepted parent, and the
/// Gateway counting no route.
pub async fn route_must_be_refused(
    cluster: &FakeCluster,
    route: (&str, &str),
    gateway: (&str, &str),
    reason: &'static str,
) {
    route_must_have_condition(cluster, route, gateway, ("Accepted", "False", reason)).await;
    route_must_have_no_accepted_parents(cluster, route).await;
    gateway_must_have_zero_routes(cluster, gateway).await;
}

pub async fn gateway_must_have_zero_routes(cluster: &FakeCluster, gateway: (&str, &str)) {
    wait_object(
        cluster,
        "Gateway",
        gateway,
        "Gateway with zero routes",
        POLL,
        |gw| {
            gateway_latest(gw)?;
            match gw["status"]["listeners"].as_array().map(Vec::as_slice) {
                None | Some([]) => Ok(()),
                Some([l]) if l["attachedRoutes"] == 0 => Ok(()),
                _ => Err("routes attached".into()),
            }
        },
    )
    .await;
}

/// An expected `ListenerStatus`.
pub struct Listener {
    pub name: &'static str,
    pub supported_kinds: &'static [&'static str],
    pub conditions: Vec<Cond>,
    pub attached_routes: u64,
}

/// `GatewayStatusMustHaveListeners` (`gatewayListenersMatch`).
pub async fn gateway_status_must_have_listeners(
    cluster: &FakeCluster,
    gateway: (&str, &str),
    expected: &[Listener],
) {
    wait_object(
        cluster,
        "Gateway",
        gateway,
        "Gateway status listeners",
        POLL,
        |gw| {
            gateway_latest(gw)?;
            let actual = gw["status"]["listeners"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if actual.len() != expected.len() {
                return Err(format!("{} listeners in status", actual.len()));
            }
            for e in expected {
                let a = actual
                    .iter()
                    .find(|a| a["name"] == e.name)
                    .ok_or_else(|| format!("no status for listener {}", e.name))?;
                for kind in e.supported_kinds {
                    let found = a["supportedKinds"].as_array().is_some_and(|ks| {
                        ks.iter().any(|k| {
                            k["kind"] == *kind && (k["group"].is_null() || k["group"] == GROUP)
                        })
                    });
                    if !found {
                        return Err(format!("{} does not list {kind}", e.name));
                    }
                }
                if a["attachedRoutes"] != e.attached_routes {
                    return Err(format!(
                        "{}: attachedRoutes {} (want {})",
                        e.name, a["attachedRoutes"], e.attached_routes
                    ));
                }
                if !e
                    .conditions
                    .iter()
                    .all(|c| has_condition(&a["conditions"], *c))
                {
                    return Err(format!("{}: conditions {}", e.name, a["conditions"]));
                }
            }
            Ok(())
        },
    )
    .await;
}
