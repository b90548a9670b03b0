//! httproute-observed-generation-bump.go (Core): after an edit, the route's conditions
//! observe the new generation.

use crate::harness::status::{self, ACCEPTED};
use crate::harness::{Suite, INFRA_NS, INFRA_V2};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_observed_generation_bump() {
    let suite = Suite::start(
        17,
        "httproute-observed-generation-bump.yaml",
        &["same-namespace"],
    )
    .await;
    let (route, gw) = (
        (INFRA_NS, "observed-generation-bump"),
        (INFRA_NS, "same-namespace"),
    );
    suite.namespaces_must_be_ready().await;
    let get = || {
        suite
            .cluster
            .get(
                "gateway.networking.k8s.io/v1",
                "HTTPRoute",
                route.0,
                route.1,
            )
            .expect("the route")
    };
    let original = get();
    status::route_must_have_latest_conditions(&suite.cluster, route).await;
    let mut mutate = get();
    mutate["spec"]["rules"][0]["backendRefs"][0]["name"] = INFRA_V2.into();
    suite.cluster.apply(mutate);
    status::route_must_have_condition(&suite.cluster, route, gw, (ACCEPTED.0, ACCEPTED.1, ""))
        .await;
    status::route_must_have_resolved_refs(&suite.cluster, route, gw).await;
    status::route_must_have_latest_conditions(&suite.cluster, route).await;
    let updated = get();
    assert_ne!(
        original["metadata"]["generation"], updated["metadata"]["generation"],
        "generation should change after an update"
    );
}
