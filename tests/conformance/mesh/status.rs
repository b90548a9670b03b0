//! Route status for a Service parent, as a mesh implementation writes it: one
//! `status.parents[]` entry per parentRef naming a Service it serves, with its controllerName
//! and the parentRef as the route wrote it (group `""`, kind `Service`, its namespace and port
//! kept), `Accepted` and `ResolvedRefs` at the route's generation; none for other parentRefs.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fake_kube::FakeCluster;
use crate::harness::cluster::CONTROLLER;
use crate::harness::status::{self, ACCEPTED, RESOLVED_REFS};

const POLL: Duration = Duration::from_millis(100);

/// weir's entry for the route's parentRef number `index`, if any.
fn our_entry(route: &Value, index: usize) -> Option<Value> {
    let written = &route["spec"]["parentRefs"][index];
    status::route_parents(route)
        .into_iter()
        .find(|p| p["controllerName"] == CONTROLLER && p["parentRef"] == *written)
}

/// The route's parentRef number `index` has weir's entry, Accepted and ResolvedRefs True at
/// the route's generation.
pub async fn route_must_be_accepted(cluster: &FakeCluster, route: (&str, &str), index: usize) {
    status::wait_object(
        cluster,
        "HTTPRoute",
        route,
        "HTTPRoute accepted by the Service parent",
        POLL,
        |r| {
            let entry = our_entry(r, index).ok_or_else(|| {
                format!(
                    "no entry of {CONTROLLER} for parentRef {}",
                    r["spec"]["parentRefs"][index]
                )
            })?;
            status::latest(r, &entry["conditions"])?;
            for c in [ACCEPTED, RESOLVED_REFS] {
                if !status::has_condition(&entry["conditions"], c) {
                    return Err(format!("no {c:?} in {}", entry["conditions"]));
                }
            }
            Ok(())
        },
    )
    .await;
}

/// No entry of weir's controllerName on the route, for all of `hold`. Call it once weir has
/// shown it has seen the route's world (another route's entry, a request served), so that
/// "none" is not "none yet".
pub async fn route_must_have_no_entry(cluster: &FakeCluster, route: (&str, &str), hold: Duration) {
    let start = Instant::now();
    while start.elapsed() < hold {
        let object = cluster
            .get(
                "gateway.networking.k8s.io/v1",
                "HTTPRoute",
                route.0,
                route.1,
            )
            .unwrap_or_else(|| panic!("HTTPRoute {}/{} not found", route.0, route.1));
        let ours: Vec<Value> = status::route_parents(&object)
            .into_iter()
            .filter(|p| p["controllerName"] == CONTROLLER)
            .collect();
        assert!(
            ours.is_empty(),
            "HTTPRoute {}/{}: {CONTROLLER} wrote {ours:?}",
            route.0,
            route.1
        );
        tokio::time::sleep(POLL).await;
    }
}
