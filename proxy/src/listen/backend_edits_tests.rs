//! A backend's own request header edits (an HTTPRoute backendRef's RequestHeaderModifier)
//! through a real listener on 127.0.0.1: each request carries the edits of the backend it
//! was sent to and of no other — also when a failed connect moved it to the other backend.

use std::sync::atomic::Ordering;

use super::url_tests::{echo, field, h1, status_of, upstream_head, weir};
use crate::table_spec::{BackendSpec, HeaderEdits, RouteSpec, TableSpec, WeightedBackend};

fn edits(set: &[(&str, &str)], add: &[(&str, &str)], remove: &[&str]) -> HeaderEdits {
    let pairs = |list: &[(&str, &str)]| {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    };
    HeaderEdits {
        set: pairs(set),
        add: pairs(add),
        remove: remove.iter().map(|n| n.to_string()).collect(),
    }
}

fn backend(name: &str, weight: u32, address: String, request: HeaderEdits) -> WeightedBackend {
    let mut b = WeightedBackend::new(name, weight, BackendSpec::new([address]));
    b.request_headers = request;
    // Which backend answered, told by the response.
    b.response_headers = edits(&[("x-answered-by", name)], &[], &[]);
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_carries_the_edits_of_the_backend_it_went_to() {
    let (a, b) = (echo().await, echo().await);
    let mut route = RouteSpec::new("weighted", BackendSpec::new(["127.0.0.1:1"]));
    route.backends = vec![
        backend(
            "a",
            1,
            a.addr.to_string(),
            edits(
                &[("x-header-set", "a")],
                &[("x-header-add", "a")],
                &["x-remove"],
            ),
        ),
        backend(
            "b",
            1,
            b.addr.to_string(),
            edits(&[("x-header-set", "b")], &[], &[]),
        ),
    ];
    let weir = weir(&TableSpec {
        routes: vec![route],
    })
    .await;
    let mut seen = Vec::new();
    for _ in 0..8 {
        let response = h1(
            weir,
            "example.com",
            "/",
            "x-remove: gone\r\nx-header-set: client\r\n",
        )
        .await;
        assert_eq!(status_of(&response), 200, "{response}");
        let answered = field(&response, "x-answered-by").unwrap_or("").to_string();
        let head = upstream_head(&response);
        assert_eq!(
            field(head, "x-header-set"),
            Some(answered.as_str()),
            "{head}"
        );
        match answered.as_str() {
            "a" => {
                assert_eq!(field(head, "x-header-add"), Some("a"), "{head}");
                assert_eq!(field(head, "x-remove"), None, "{head}");
            }
            "b" => {
                assert_eq!(field(head, "x-header-add"), None, "{head}");
                assert_eq!(field(head, "x-remove"), Some("gone"), "{head}");
            }
            other => panic!("answered by {other:?}: {response}"),
        }
        seen.push(answered);
    }
    // The split is exact per rotation: both backends were tried.
    assert!(
        seen.iter().any(|s| s == "a") && seen.iter().any(|s| s == "b"),
        "{seen:?}"
    );
    assert_eq!(
        a.requests.load(Ordering::SeqCst) + b.requests.load(Ordering::SeqCst),
        8
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_moved_by_a_failed_connect_carries_only_the_other_backends_edits() {
    let b = echo().await;
    // Nothing listens on a's address: the connect fails and the request goes to b.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = closed.local_addr().expect("addr").to_string();
    drop(closed);
    let mut route = RouteSpec::new("fallback", BackendSpec::new(["127.0.0.1:1"]));
    route.backends = vec![
        backend(
            "a",
            100,
            dead,
            edits(&[("x-backend", "a")], &[("x-only-a", "1")], &[]),
        ),
        backend(
            "b",
            0,
            b.addr.to_string(),
            edits(&[("x-backend", "b")], &[], &[]),
        ),
    ];
    let weir = weir(&TableSpec {
        routes: vec![route],
    })
    .await;
    let response = h1(weir, "example.com", "/", "").await;
    assert_eq!(status_of(&response), 200, "{response}");
    let head = upstream_head(&response);
    assert_eq!(field(head, "x-backend"), Some("b"), "{head}");
    assert_eq!(field(head, "x-only-a"), None, "{head}");
    assert_eq!(b.requests.load(Ordering::SeqCst), 1);
}
