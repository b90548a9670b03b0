//! The pure part of writing HTTPRoute status: weir's entries of `status.parents[]` merged into
//! what the object holds now, as a conformant implementation does — entries of other
//! controllers untouched, ours replaced, a condition's `lastTransitionTime` kept while its
//! status does not change — and nothing to write when nothing changed.

use serde_json::{json, Map, Value};

use super::gateway::RouteStatus;
use super::httproute::{is_core_group, ParentRef, GATEWAY_GROUP};
use crate::config::{HttpRouteParents, HttpRoutesSource};

/// Does `parent` (of a route in `route_namespace`) name what this weir serves — its Gateway,
/// or one of its Services — whether or not it attached?
pub fn names_served_parent(
    source: &HttpRoutesSource,
    source_namespace: &str,
    route_namespace: &str,
    parent: &ParentRef,
) -> bool {
    let namespace = parent.namespace.as_deref().unwrap_or(route_namespace);
    match &source.parents {
        HttpRouteParents::Gateway { name, .. } => {
            parent.group() == GATEWAY_GROUP
                && parent.kind() == "Gateway"
                && parent.name == *name
                && namespace == source.gateway_namespace(source_namespace)
        }
        HttpRouteParents::Services(services) => {
            is_core_group(parent.group())
                && parent.kind() == "Service"
                && namespace == source_namespace
                && services.contains(&parent.name)
        }
    }
}

/// The `status.parents` to write, or None when the object already says exactly this (so a
/// steady state costs no write). `ours` are this route's statuses, one per parentRef naming
/// what this weir serves; empty removes this weir's entries (the route no longer names it).
///
/// An entry is this weir's when it carries its controllerName *and* its parentRef names what
/// this weir serves (`serves`): two weirs of one controller serving two Gateways each keep
/// their own entry of a route attached to both.
pub fn merged_parents(
    current: &Value,
    ours: &[RouteStatus],
    controller: &str,
    now: &str,
    serves: impl Fn(&ParentRef) -> bool,
) -> Option<Value> {
    let existing: Vec<Value> = current["status"]["parents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let (mine, others): (Vec<Value>, Vec<Value>) = existing.into_iter().partition(|p| {
        p["controllerName"] == controller
            && serde_json::from_value::<ParentRef>(p["parentRef"].clone())
                .is_ok_and(|parent| serves(&parent))
    });
    let wanted: Vec<Value> = ours
        .iter()
        .map(|s| entry(s, controller, now, &mine))
        .collect();
    if same(&mine, &wanted) {
        return None;
    }
    let mut parents = others;
    parents.extend(wanted);
    Some(Value::Array(parents))
}

fn entry(s: &RouteStatus, controller: &str, now: &str, previous: &[Value]) -> Value {
    let parent_ref = parent_ref_json(&s.parent);
    let before = previous.iter().find(|p| p["parentRef"] == parent_ref);
    let conditions: Vec<Value> = s
        .conditions
        .iter()
        .map(|c| {
            let status = if c.status { "True" } else { "False" };
            let old = before.and_then(|b| {
                b["conditions"]
                    .as_array()?
                    .iter()
                    .find(|o| o["type"] == c.kind)
            });
            let since = match old {
                Some(o) if o["status"] == status => o["lastTransitionTime"].clone(),
                _ => json!(now),
            };
            json!({
                "type": c.kind,
                "status": status,
                "reason": c.reason,
                "message": c.message,
                "observedGeneration": s.generation,
                "lastTransitionTime": since,
            })
        })
        .collect();
    json!({"parentRef": parent_ref, "controllerName": controller, "conditions": conditions})
}

/// The parentRef as the route wrote it, without the fields it left out.
fn parent_ref_json(p: &ParentRef) -> Value {
    let mut m = Map::new();
    if let Some(g) = &p.group {
        m.insert("group".into(), json!(g));
    }
    if let Some(k) = &p.kind {
        m.insert("kind".into(), json!(k));
    }
    if let Some(n) = &p.namespace {
        m.insert("namespace".into(), json!(n));
    }
    m.insert("name".into(), json!(p.name));
    if let Some(s) = &p.section_name {
        m.insert("sectionName".into(), json!(s));
    }
    if let Some(port) = p.port {
        m.insert("port".into(), json!(port));
    }
    Value::Object(m)
}

/// Equal apart from transition times.
fn same(a: &[Value], b: &[Value]) -> bool {
    let strip = |v: &[Value]| -> Vec<Value> {
        v.iter()
            .map(|p| {
                let mut p = p.clone();
                if let Some(cs) = p["conditions"].as_array_mut() {
                    for c in cs {
                        if let Some(o) = c.as_object_mut() {
                            o.remove("lastTransitionTime");
                        }
                    }
                }
                p
            })
            .collect()
    };
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::kube::gateway::Condition;

    fn ours(accepted: bool, generation: i64) -> RouteStatus {
        RouteStatus {
            namespace: "ns".into(),
            name: "r".into(),
            generation,
            uid: String::new(),
            parent: ParentRef {
                name: "gw".into(),
                ..ParentRef::default()
            },
            conditions: vec![Condition {
                kind: "Accepted",
                status: accepted,
                reason: if accepted {
                    "Accepted"
                } else {
                    "UnsupportedValue"
                },
                message: "m".into(),
            }],
        }
    }

    #[test]
    fn other_controllers_entries_stay_and_a_steady_state_writes_nothing() {
        let other =
            json!({"parentRef": {"name": "gw"}, "controllerName": "other.io/x", "conditions": []});
        let object = json!({"status": {"parents": [other.clone()]}});
        let first = merged_parents(&object, &[ours(true, 3)], "weir.io/gw", "T1", gw).unwrap();
        assert_eq!(first[0], other);
        assert_eq!(first[1]["controllerName"], "weir.io/gw");
        assert_eq!(first[1]["parentRef"], json!({"name": "gw"}));
        let c = &first[1]["conditions"][0];
        assert_eq!(
            (c["type"].as_str(), c["status"].as_str()),
            (Some("Accepted"), Some("True"))
        );
        assert_eq!(c["observedGeneration"], 3);
        assert_eq!(c["lastTransitionTime"], "T1");

        let written = json!({"status": {"parents": first}});
        assert_eq!(
            merged_parents(&written, &[ours(true, 3)], "weir.io/gw", "T2", gw),
            None
        );
        // A new generation, same status: written, the transition time kept.
        let next = merged_parents(&written, &[ours(true, 4)], "weir.io/gw", "T2", gw).unwrap();
        assert_eq!(next[1]["conditions"][0]["lastTransitionTime"], "T1");
        // A status change: a new transition time.
        let flipped = merged_parents(&written, &[ours(false, 4)], "weir.io/gw", "T3", gw).unwrap();
        assert_eq!(flipped[1]["conditions"][0]["lastTransitionTime"], "T3");
        // No longer ours: our entry goes, the other stays.
        let gone = merged_parents(&written, &[], "weir.io/gw", "T4", gw).unwrap();
        assert_eq!(gone, json!([other]));
    }

    fn gw(p: &ParentRef) -> bool {
        p.name == "gw"
    }

    #[test]
    fn two_weirs_of_one_controller_keep_each_others_entries() {
        // A route attached to Gateways gw and gw2, each served by its own weir.
        let mut second = ours(true, 1);
        second.parent.name = "gw2".into();
        let gw2 = |p: &ParentRef| p.name == "gw2";
        let object = json!({});
        let one = merged_parents(&object, &[ours(true, 1)], "weir.io/gw", "T1", gw).unwrap();
        let written = json!({"status": {"parents": one}});
        let both = merged_parents(&written, &[second.clone()], "weir.io/gw", "T2", gw2).unwrap();
        assert_eq!(both.as_array().unwrap().len(), 2);
        assert_eq!(both[0]["parentRef"]["name"], "gw");
        assert_eq!(both[1]["parentRef"]["name"], "gw2");
        // Each rewrites only its own: the first weir's steady state writes nothing.
        let written = json!({"status": {"parents": both}});
        assert_eq!(
            merged_parents(&written, &[ours(true, 1)], "weir.io/gw", "T3", gw),
            None
        );
    }
}
