//! weir's own: a sidecar writes status only for the parentRefs naming a Service it serves. Of
//! two routes, the one naming echo-v1 (served) gets weir's entry; the one naming echo-v2 (not
//! served) gets none — another mesh's sidecar may be answering for it.

use std::time::Duration;

use super::{serving, status, ECHO_V1, MESH_NS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_no_status_for_a_service_not_served() {
    let (suite, _to) = super::start(77, &["status-other-service.yaml"], serving(&[ECHO_V1])).await;
    // weir has seen the routes once it has written the first one's status.
    status::route_must_be_accepted(&suite.cluster, (MESH_NS, "for-echo-v1"), 0).await;
    status::route_must_have_no_entry(
        &suite.cluster,
        (MESH_NS, "for-echo-v2"),
        Duration::from_secs(2),
    )
    .await;
}
