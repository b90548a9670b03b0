//! Redirects and rewrites through a real listener on 127.0.0.1, for HTTP/1 and HTTP/2 clients,
//! with a loopback backend that sends back the request head it received: the Gateway API
//! conformance suite's cases (httproute-redirect-*, httproute-30{3,7,8}-redirect,
//! httproute-rewrite-path, httproute-rewrite-host), each status, Location, path and host.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::spec::LimitsSpec;
use super::{serve, ConnectionLimit, Shutdown};
use crate::plane::DataPlane;
use crate::table_spec::{
    BackendSpec, HeaderEdits, MatchSpec, PathModifier, RedirectSpec, RewriteSpec, RouteSpec,
    TableSpec,
};

/// Every read and whole exchange is bounded: a hang fails the test instead of stalling it.
const LIMIT: Duration = Duration::from_secs(5);

/// A backend that answers each connection's one request with the head it received as body.
pub(super) struct Echo {
    pub(super) addr: SocketAddr,
    pub(super) requests: Arc<AtomicUsize>,
}

pub(super) async fn echo() -> Echo {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind backend");
    let addr = listener.local_addr().expect("backend addr");
    let requests = Arc::new(AtomicUsize::new(0));
    let count = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let head = read_head(&mut tcp).await;
                count.fetch_add(1, Ordering::SeqCst);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{head}",
                    head.len()
                );
                let _ = tcp.write_all(reply.as_bytes()).await;
            });
        }
    });
    Echo { addr, requests }
}

async fn read_head(tcp: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout(LIMIT, tcp.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn route(name: &str, prefix: &str) -> RouteSpec {
    let mut r = RouteSpec::new(name, BackendSpec::new(["127.0.0.1:1"]));
    r.backends.clear();
    r.matches = vec![MatchSpec::prefix(prefix)];
    r
}

fn redirecting(name: &str, prefix: &str, edit: impl FnOnce(&mut RedirectSpec)) -> RouteSpec {
    let mut r = route(name, prefix);
    let mut redirect = RedirectSpec::found();
    edit(&mut redirect);
    r.redirect = Some(redirect);
    r
}

fn rewriting(
    name: &str,
    prefix: &str,
    backend: SocketAddr,
    hostname: Option<&str>,
    path: Option<PathModifier>,
) -> RouteSpec {
    let mut r = RouteSpec::new(name, BackendSpec::new([backend.to_string()]));
    r.matches = vec![MatchSpec::prefix(prefix)];
    r.rewrite = Some(RewriteSpec {
        hostname: hostname.map(String::from),
        path,
    });
    r
}

/// The conformance manifests' routes, as the translation makes them.
fn conformance_table(backend: SocketAddr) -> TableSpec {
    use PathModifier::{ReplaceFullPath as Full, ReplacePrefixMatch as Prefix};
    let host = |h: &str| Some(h.to_string());
    let mut routes = vec![
        // httproute-redirect-host-and-status
        redirecting("hostname-redirect", "/hostname-redirect", |r| {
            r.hostname = host("example.org")
        }),
        redirecting("host-and-status", "/host-and-status", |r| {
            r.hostname = host("example.org");
            r.status = 301;
        }),
        // httproute-redirect-path
        redirecting("original-prefix", "/original-prefix", |r| {
            r.path = Some(Prefix("/replacement-prefix".into()))
        }),
        redirecting("full", "/full", |r| {
            r.path = Some(Full("/full-path-replacement".into()))
        }),
        redirecting("path-and-host", "/path-and-host", |r| {
            r.hostname = host("example.org");
            r.path = Some(Prefix("/replacement-prefix".into()));
        }),
        redirecting("path-and-status", "/path-and-status", |r| {
            r.path = Some(Prefix("/replacement-prefix".into()));
            r.status = 301;
        }),
        redirecting("full-path-and-host", "/full-path-and-host", |r| {
            r.hostname = host("example.org");
            r.path = Some(Full("/replacement-full".into()));
        }),
        redirecting("full-path-and-status", "/full-path-and-status", |r| {
            r.path = Some(Full("/replacement-full".into()));
            r.status = 301;
        }),
        // httproute-redirect-port
        redirecting("port", "/port", |r| r.port = Some(8083)),
        redirecting("port-and-host", "/port-and-host", |r| {
            r.hostname = host("example.org");
            r.port = Some(8083);
        }),
        redirecting("port-and-status", "/port-and-status", |r| {
            r.port = Some(8083);
            r.status = 301;
        }),
        redirecting(
            "port-and-host-and-status",
            "/port-and-host-and-status",
            |r| {
                r.hostname = host("example.org");
                r.port = Some(8083);
                r.status = 302;
            },
        ),
        // httproute-redirect-scheme
        redirecting("scheme", "/scheme", |r| r.scheme = host("https")),
        redirecting("scheme-and-host", "/scheme-and-host", |r| {
            r.scheme = host("https");
            r.hostname = host("example.org");
        }),
        redirecting("scheme-and-status", "/scheme-and-status", |r| {
            r.scheme = host("https");
            r.status = 301;
        }),
        redirecting(
            "scheme-and-host-and-status",
            "/scheme-and-host-and-status",
            |r| {
                r.scheme = host("https");
                r.hostname = host("example.org");
                r.status = 302;
            },
        ),
        // httproute-30{3,7,8}-redirect
        redirecting("see-other", "/see-other", |r| r.status = 303),
        redirecting("temporary", "/temporary", |r| r.status = 307),
        redirecting("permanent", "/permanent", |r| r.status = 308),
        // httproute-rewrite-path
        rewriting(
            "prefix-one",
            "/prefix/one",
            backend,
            None,
            Some(Prefix("/one".into())),
        ),
        rewriting(
            "strip-prefix",
            "/strip-prefix",
            backend,
            None,
            Some(Prefix("/".into())),
        ),
        rewriting(
            "full-one",
            "/full/one",
            backend,
            None,
            Some(Full("/one".into())),
        ),
        rewriting(
            "full-and-headers",
            "/full/rewrite-path-and-modify-headers",
            backend,
            None,
            Some(Full("/test".into())),
        ),
        rewriting(
            "prefix-and-headers",
            "/prefix/rewrite-path-and-modify-headers",
            backend,
            None,
            Some(Prefix("/prefix".into())),
        ),
        // httproute-rewrite-host (hostnames: rewrite.example)
        rewriting(
            "rewrite-host-one",
            "/one",
            backend,
            Some("one.example.org"),
            None,
        ),
        rewriting("rewrite-host-any", "/", backend, Some("example.org"), None),
        rewriting(
            "rewrite-host-and-headers",
            "/rewrite-host-and-modify-headers",
            backend,
            Some("test.example.org"),
            None,
        ),
        // A redirect with a backend too (a rule with both, which CEL refuses but a cluster
        // without the CRD's validation could hold): the redirect wins, the backend is not
        // contacted.
        {
            let mut r = rewriting("redirect-wins", "/redirect-wins", backend, None, None);
            r.rewrite = None;
            let mut redirect = RedirectSpec::found();
            redirect.hostname = host("example.org");
            r.redirect = Some(redirect);
            r
        },
        // The listener-on-8080 routes of httproute-redirect-port-and-scheme, under a host
        // of their own, with the listener port the translation will fill in.
        {
            let mut r = redirecting("l8080-nil-nil", "/scheme-nil-and-port-nil", |r| {
                r.hostname = host("example.org");
                r.listener_port = Some(8080);
            });
            r.hosts = vec!["listener8080.example".into()];
            r
        },
        {
            let mut r = redirecting("l8080-https-nil", "/scheme-https-and-port-nil", |r| {
                r.hostname = host("example.org");
                r.scheme = host("https");
                r.listener_port = Some(8080);
            });
            r.hosts = vec!["listener8080.example".into()];
            r
        },
    ];
    let headers = HeaderEdits {
        set: vec![("x-header-set".into(), "set-overwrites-values".into())],
        add: vec![
            ("x-header-add".into(), "header-val-1".into()),
            ("x-header-add-append".into(), "header-val-2".into()),
        ],
        remove: vec!["x-header-remove".into()],
    };
    for r in &mut routes {
        if r.name.ends_with("-and-headers") {
            r.request_headers = headers.clone();
        }
        if r.name.starts_with("rewrite-host-") {
            r.hosts = vec!["rewrite.example".into()];
        }
    }
    TableSpec { routes }
}

/// weir's listener, serving `spec`.
pub(super) async fn weir(spec: &TableSpec) -> SocketAddr {
    let plane = DataPlane::new();
    if let Err(errors) = plane.apply(spec) {
        panic!("table: {errors}");
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind weir");
    let addr = listener.local_addr().expect("weir addr");
    let (stop, shutdown) = Shutdown::new();
    tokio::spawn(async move {
        // Held for the test's life: dropping it would stop the listener.
        let _stop = stop;
        let limits = LimitsSpec::default();
        let connections = ConnectionLimit::new(limits.max_connections);
        serve(
            listener,
            "test".into(),
            None,
            plane.proxy.clone(),
            limits,
            connections,
            shutdown,
        )
        .await;
    });
    addr
}

/// An HTTP/1.1 request as bytes; the whole response back as text.
pub(super) async fn h1(weir: SocketAddr, host: &str, target: &str, extra: &str) -> String {
    let exchange = async {
        let mut tcp = TcpStream::connect(weir).await.expect("connect");
        let req =
            format!("GET {target} HTTP/1.1\r\nhost: {host}\r\n{extra}connection: close\r\n\r\n");
        tcp.write_all(req.as_bytes()).await.expect("write");
        let mut out = Vec::new();
        tcp.read_to_end(&mut out).await.expect("read");
        String::from_utf8_lossy(&out).into_owned()
    };
    tokio::time::timeout(LIMIT, exchange)
        .await
        .expect("HTTP/1 exchange in time")
}

pub(super) fn status_of(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"))
}

/// The value of field `name` in a head (case-blind), the first one.
pub(super) fn field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Every value of field `name`, joined as one field would be.
fn fields(head: &str, name: &str) -> String {
    head.lines()
        .filter_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The request line the backend saw, from the echoed body.
fn upstream_target(response: &str) -> &str {
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    body.split(' ').nth(1).unwrap_or("")
}

pub(super) fn upstream_head(response: &str) -> &str {
    response.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

/// (path, request host with port, status, Location) of the conformance redirects.
fn redirect_cases(port: u16) -> Vec<(&'static str, String, u16, String)> {
    let gw = format!("127.0.0.1:{port}");
    let same = |path: &str| format!("http://127.0.0.1:{port}{path}");
    vec![
        (
            "/hostname-redirect",
            gw.clone(),
            302,
            format!("http://example.org:{port}/hostname-redirect"),
        ),
        (
            "/host-and-status",
            gw.clone(),
            301,
            format!("http://example.org:{port}/host-and-status"),
        ),
        (
            "/original-prefix/lemon",
            gw.clone(),
            302,
            same("/replacement-prefix/lemon"),
        ),
        (
            "/full/path/original",
            gw.clone(),
            302,
            same("/full-path-replacement"),
        ),
        (
            "/path-and-host",
            gw.clone(),
            302,
            format!("http://example.org:{port}/replacement-prefix"),
        ),
        (
            "/path-and-status",
            gw.clone(),
            301,
            same("/replacement-prefix"),
        ),
        (
            "/full-path-and-host",
            gw.clone(),
            302,
            format!("http://example.org:{port}/replacement-full"),
        ),
        (
            "/full-path-and-status",
            gw.clone(),
            301,
            same("/replacement-full"),
        ),
        (
            "/port",
            gw.clone(),
            302,
            "http://127.0.0.1:8083/port".into(),
        ),
        (
            "/port-and-host",
            gw.clone(),
            302,
            "http://example.org:8083/port-and-host".into(),
        ),
        (
            "/port-and-status",
            gw.clone(),
            301,
            "http://127.0.0.1:8083/port-and-status".into(),
        ),
        (
            "/port-and-host-and-status",
            gw.clone(),
            302,
            "http://example.org:8083/port-and-host-and-status".into(),
        ),
        (
            "/scheme",
            gw.clone(),
            302,
            "https://127.0.0.1/scheme".into(),
        ),
        (
            "/scheme-and-host",
            gw.clone(),
            302,
            "https://example.org/scheme-and-host".into(),
        ),
        (
            "/scheme-and-status",
            gw.clone(),
            301,
            "https://127.0.0.1/scheme-and-status".into(),
        ),
        (
            "/scheme-and-host-and-status",
            gw.clone(),
            302,
            "https://example.org/scheme-and-host-and-status".into(),
        ),
        ("/see-other", gw.clone(), 303, same("/see-other")),
        ("/temporary", gw.clone(), 307, same("/temporary")),
        ("/permanent", gw.clone(), 308, same("/permanent")),
        // The query is kept, whatever the path becomes.
        (
            "/original-prefix/lemon?x=1&y",
            gw.clone(),
            302,
            same("/replacement-prefix/lemon?x=1&y"),
        ),
        (
            "/redirect-wins/a",
            gw.clone(),
            302,
            format!("http://example.org:{port}/redirect-wins/a"),
        ),
        // Listener 8080: no scheme or port given → the listener's port; https → 443, left out.
        (
            "/scheme-nil-and-port-nil",
            "listener8080.example".into(),
            302,
            "http://example.org:8080/scheme-nil-and-port-nil".into(),
        ),
        (
            "/scheme-https-and-port-nil",
            "listener8080.example".into(),
            302,
            "https://example.org/scheme-https-and-port-nil".into(),
        ),
    ]
}

#[tokio::test]
async fn redirects_over_http1() {
    let backend = echo().await;
    let addr = weir(&conformance_table(backend.addr)).await;
    for (path, host, status, location) in redirect_cases(addr.port()) {
        let response = h1(addr, &host, path, "").await;
        assert_eq!(status_of(&response), status, "{path}: {response}");
        assert_eq!(
            field(&response, "location"),
            Some(location.as_str()),
            "{path}: {response}"
        );
        assert_eq!(
            field(&response, "content-length"),
            Some("0"),
            "{path}: {response}"
        );
    }
    // A request for port 80 (no port in Host) keeps none in Location.
    let response = h1(addr, "gw.example", "/hostname-redirect", "").await;
    assert_eq!(
        field(&response, "location"),
        Some("http://example.org/hostname-redirect")
    );
    assert_eq!(
        backend.requests.load(Ordering::SeqCst),
        0,
        "a redirect contacts no backend"
    );
}

#[tokio::test]
async fn redirects_over_http2() {
    let backend = echo().await;
    let addr = weir(&conformance_table(backend.addr)).await;
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (mut client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(connection);
    for (path, host, status, location) in redirect_cases(addr.port()) {
        let req = http::Request::get(format!("http://{host}{path}"))
            .body(())
            .expect("request");
        let exchange = async {
            let (response, _) = client.send_request(req, true).expect("send");
            response.await.expect("response")
        };
        let response = tokio::time::timeout(LIMIT, exchange)
            .await
            .expect("HTTP/2 exchange in time");
        assert_eq!(response.status().as_u16(), status, "{path}");
        assert_eq!(
            response.headers().get("location").map(|v| v.to_str().ok()),
            Some(Some(location.as_str())),
            "{path}"
        );
    }
    assert_eq!(backend.requests.load(Ordering::SeqCst), 0);
}

/// (path, host, what the upstream must see: target, Host)
fn rewrite_cases() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    vec![
        ("/prefix/one/two", "gw.example", "/one/two", "gw.example"),
        ("/strip-prefix/three", "gw.example", "/three", "gw.example"),
        ("/strip-prefix", "gw.example", "/", "gw.example"),
        ("/strip-prefix?q=1", "gw.example", "/?q=1", "gw.example"),
        ("/full/one/two", "gw.example", "/one", "gw.example"),
        (
            "/full/rewrite-path-and-modify-headers/test",
            "gw.example",
            "/test",
            "gw.example",
        ),
        (
            "/prefix/rewrite-path-and-modify-headers/one",
            "gw.example",
            "/prefix/one",
            "gw.example",
        ),
        ("/one", "rewrite.example", "/one", "one.example.org"),
        ("/two", "rewrite.example", "/two", "example.org"),
        (
            "/rewrite-host-and-modify-headers",
            "rewrite.example",
            "/rewrite-host-and-modify-headers",
            "test.example.org",
        ),
    ]
}

const CLIENT_HEADERS: &str =
    "x-header-remove: remove-val\r\nx-header-add-append: append-val-1\r\nx-header-set: set-val\r\n";

fn check_modified_headers(path: &str, head: &str) {
    if path.contains("modify-headers") {
        assert_eq!(field(head, "x-header-add"), Some("header-val-1"), "{head}");
        assert_eq!(
            fields(head, "x-header-add-append"),
            "append-val-1,header-val-2",
            "{head}"
        );
        assert_eq!(
            field(head, "x-header-set"),
            Some("set-overwrites-values"),
            "{head}"
        );
        assert_eq!(field(head, "x-header-remove"), None, "{head}");
    }
}

#[tokio::test]
async fn rewrites_over_http1() {
    let backend = echo().await;
    let addr = weir(&conformance_table(backend.addr)).await;
    for (path, host, target, upstream_host) in rewrite_cases() {
        let response = h1(addr, host, path, CLIENT_HEADERS).await;
        assert_eq!(status_of(&response), 200, "{path}: {response}");
        assert_eq!(upstream_target(&response), target, "{path}: {response}");
        let head = upstream_head(&response);
        assert_eq!(field(head, "host"), Some(upstream_host), "{path}: {head}");
        // The host the client asked for is kept where forwarding fields say it.
        assert_eq!(
            field(head, "x-forwarded-host"),
            Some(host),
            "{path}: {head}"
        );
        check_modified_headers(path, head);
    }
    assert_eq!(
        backend.requests.load(Ordering::SeqCst),
        rewrite_cases().len()
    );
}

#[tokio::test]
async fn rewrites_over_http2() {
    let backend = echo().await;
    let addr = weir(&conformance_table(backend.addr)).await;
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (mut client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(connection);
    for (path, host, target, upstream_host) in rewrite_cases() {
        let req = http::Request::get(format!("http://{host}{path}"))
            .header("x-header-remove", "remove-val")
            .header("x-header-add-append", "append-val-1")
            .header("x-header-set", "set-val")
            .body(())
            .expect("request");
        let exchange = async {
            let (response, _) = client.send_request(req, true).expect("send");
            let mut body = response.await.expect("response").into_body();
            let mut out = Vec::new();
            while let Some(chunk) = body.data().await {
                let chunk: Bytes = chunk.expect("body");
                let _ = body.flow_control().release_capacity(chunk.len());
                out.extend_from_slice(&chunk);
            }
            String::from_utf8_lossy(&out).into_owned()
        };
        let head = tokio::time::timeout(LIMIT, exchange)
            .await
            .expect("HTTP/2 exchange in time");
        assert_eq!(head.split(' ').nth(1), Some(target), "{path}: {head}");
        assert_eq!(field(&head, "host"), Some(upstream_host), "{path}: {head}");
        assert_eq!(
            field(&head, "x-forwarded-host"),
            Some(host),
            "{path}: {head}"
        );
        check_modified_headers(path, &head);
    }
}

/// The table refuses bad redirect and rewrite values, naming the route and field; the last
/// good table keeps serving.
#[tokio::test]
async fn bad_values_are_refused_and_the_table_in_force_stays() {
    let plane = DataPlane::new();
    let good = TableSpec {
        routes: vec![redirecting("ok", "/", |_| {})],
    };
    if let Err(errors) = plane.apply(&good) {
        panic!("{errors}");
    }
    let mut exact = redirecting("exact", "/x", |r| {
        r.path = Some(PathModifier::ReplacePrefixMatch("/y".into()))
    });
    exact.matches[0].path = crate::table_spec::PathMatch::Exact("/x".into());
    let bad = TableSpec {
        routes: vec![
            redirecting("status", "/a", |r| r.status = 200),
            redirecting("hostname", "/b", |r| r.hostname = Some("a b".into())),
            exact,
        ],
    };
    let errors = match plane.apply(&bad) {
        Ok(_) => panic!("bad redirects compiled"),
        Err(errors) => errors.to_string(),
    };
    for expected in [
        "routes[0].redirect.status: 200 is not a redirect status",
        "routes[1].redirect.hostname: `a b` is not a host name",
        "routes[2].redirect.path: replace_prefix_match needs every match",
    ] {
        assert!(errors.contains(expected), "{expected} in {errors}");
    }
    assert!(
        plane.table.load().route("ok").is_some(),
        "the good table stays"
    );
}

/// An h2c upstream answering each request with its `:authority` and `:path` as the body.
async fn h2_echo() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind h2 backend");
    let addr = listener.local_addr().expect("h2 backend addr");
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    let seen = format!(
                        "authority={} path={}",
                        req.uri().authority().map_or("", |a| a.as_str()),
                        req.uri().path_and_query().map_or("", |p| p.as_str())
                    );
                    let response = http::Response::new(());
                    if let Ok(mut send) = respond.send_response(response, false) {
                        let _ = send.send_data(Bytes::from(seen), true);
                    }
                }
            });
        }
    });
    addr
}

/// An HTTP/2 upstream gets the rewritten host as `:authority`, from HTTP/1 and HTTP/2 clients.
#[tokio::test]
async fn rewrites_reach_an_http2_upstream() {
    let upstream = h2_echo().await;
    let mut route = rewriting(
        "h2-up",
        "/api",
        upstream,
        Some("internal.example"),
        Some(PathModifier::ReplacePrefixMatch("/v2".into())),
    );
    if let Some(b) = route.backends.first_mut() {
        b.spec.protocol = crate::table_spec::UpstreamProtocol::Http2;
    }
    let addr = weir(&TableSpec {
        routes: vec![route],
    })
    .await;
    let expected = "authority=internal.example path=/v2/users?id=7";

    let response = h1(addr, "shop.example", "/api/users?id=7", "").await;
    assert_eq!(status_of(&response), 200, "{response}");
    assert!(response.contains(expected), "{response}");

    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (mut client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(connection);
    let req = http::Request::get("http://shop.example/api/users?id=7")
        .body(())
        .expect("request");
    let exchange = async {
        let (response, _) = client.send_request(req, true).expect("send");
        let mut body = response.await.expect("response").into_body();
        let mut out = Vec::new();
        while let Some(chunk) = body.data().await {
            out.extend_from_slice(&chunk.expect("body"));
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    let seen = tokio::time::timeout(LIMIT, exchange)
        .await
        .expect("HTTP/2 exchange in time");
    assert_eq!(seen, expected);
}
