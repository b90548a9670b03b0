//! A full config loads and compiles to the data plane's specs.

mod common;

use std::path::Path;
use std::time::Duration;

use common::TempDir;
use weir_control::config::{self, load};
use weir_proxy::listen::spec::{AdminSpec, LimitsSpec, ListenerTls, ServerTlsSpec};
use weir_proxy::table::spec::{
    Balance, HeaderMatchSpec, HeaderRouteSpec, MatchSpec, MirrorSpec, PathMatch, StickySpec,
    Target, UpstreamProtocol, UpstreamTlsSpec, ValueMatch,
};

const FULL: &str = r#"
listeners:
  - name: public
    address: 0.0.0.0:8443
    tls:
      cert: tls.crt
      key: /ABSOLUTE/tls.key
  - address: 127.0.0.1:8080
admin:
  address: 127.0.0.1:9902
limits:
  max_connections: 500
  header_read_timeout: 5s
  shutdown_grace: 1m
upstream_defaults:
  connect_timeout: 1s
  response_timeout: 15s
  pool_max_idle: 64
routes:
  - name: api
    match:
      hosts: [API.example.com, "*.example.com"]
      path_prefix: /api
      headers:
        - {name: X-Tenant, exact: blue}
        - {name: x-env, prefix: prod}
        - {name: x-build, regex: "v[0-9]+"}
    timeout: 30s
    stable:
      addresses: [127.0.0.1:9001, 127.0.0.1:9002]
      balance: least_request
      protocol: http2
      tls: {server_name: api.internal, ca: ca.pem}
      connect_timeout: 500ms
    canary:
      addresses: ["[::1]:9101", canary.internal:9102]
      tls: {}
      pool_idle_timeout: 2m
      pool_max_idle: 0
    canary_weight: 12.5
    header_routes:
      - name: beta-testers
        match: [{name: x-canary, exact: "true"}]
      - name: opt-out
        match: [{name: x-canary, exact: "false"}]
        backend: stable
    sticky: {cookie: session}
    mirror:
      name: shadow
      percent: 10
      match: [{name: x-mirror, prefix: "yes"}]
      methods: [post]
      header: X-Shadow-Copy
  - name: web
    stable: {addresses: [127.0.0.1:9003]}
    canary: {addresses: [127.0.0.1:9103]}
    canary_weight: 20
    sticky: {header: X-User-Id}
"#;

fn write_full(dir: &TempDir) -> std::path::PathBuf {
    dir.write("tls.crt", "cert");
    dir.write("tls.key", "key");
    dir.write("ca.pem", "ca");
    let text = FULL.replace("/ABSOLUTE", &dir.path().display().to_string());
    dir.write("weir.yaml", &text)
}

#[test]
fn full_example_loads_and_converts() {
    let dir = TempDir::new("full");
    let file = write_full(&dir);
    let config = load(&file).unwrap_or_else(|errors| panic!("{errors}"));

    assert_eq!(config.source_file, file);
    assert_eq!(config.listeners.len(), 2);
    let public = &config.listeners[0];
    assert_eq!(public.name, "public");
    assert_eq!(public.address, "0.0.0.0:8443".parse().unwrap());
    assert_eq!(
        public.tls,
        Some(ListenerTls::Files(ServerTlsSpec {
            client_auth: None,
            cert_file: dir.path().join("tls.crt"),
            key_file: dir.path().join("tls.key"),
        }))
    );
    assert_eq!(config.listeners[1].name, "listener-1");
    assert_eq!(config.listeners[1].tls, None);
    assert_eq!(config.admin.address, "127.0.0.1:9902".parse().unwrap());

    let limits = &config.limits;
    assert_eq!(limits.max_connections, 500);
    assert_eq!(limits.header_read_timeout, Duration::from_secs(5));
    assert_eq!(limits.shutdown_grace, Duration::from_secs(60));
    assert_eq!(limits.max_headers, LimitsSpec::default().max_headers);
    assert_eq!(limits.idle_timeout, LimitsSpec::default().idle_timeout);

    let routes = &config.table.routes;
    assert_eq!(routes.len(), 2);
    let api = &routes[0];
    assert_eq!(api.name, "api");
    assert_eq!(api.hosts, ["api.example.com", "*.example.com"]);
    assert_eq!(api.matches.len(), 1);
    assert_eq!(api.matches[0].path, PathMatch::Prefix("/api".into()));
    assert_eq!(
        api.matches[0].headers,
        [
            header("x-tenant", ValueMatch::Exact("blue".into())),
            header("x-env", ValueMatch::Prefix("prod".into())),
            header("x-build", ValueMatch::Regex("v[0-9]+".into())),
        ]
    );
    assert_eq!(api.timeout, Some(Duration::from_secs(30)));
    assert_eq!(api.canary_weight_bp(), 1250);

    let stable = &api.stable().unwrap();
    assert_eq!(stable.addresses, ["127.0.0.1:9001", "127.0.0.1:9002"]);
    assert_eq!(stable.balance, Balance::LeastRequest);
    assert_eq!(stable.protocol, UpstreamProtocol::Http2);
    assert_eq!(
        stable.tls,
        Some(UpstreamTlsSpec {
            server_name: Some("api.internal".into()),
            ca_file: Some(dir.path().join("ca.pem")),
            client_cert: None,
            identities: Vec::new(),
        })
    );
    assert_eq!(stable.connect_timeout, Duration::from_millis(500));
    assert_eq!(
        stable.response_timeout,
        Duration::from_secs(15),
        "upstream_defaults"
    );
    assert_eq!(
        stable.pool_idle_timeout,
        Duration::from_secs(60),
        "built-in default"
    );
    assert_eq!(stable.pool_max_idle, 64, "upstream_defaults");

    let canary = api.canary().expect("canary");
    assert_eq!(canary.addresses, ["[::1]:9101", "canary.internal:9102"]);
    assert_eq!(canary.balance, Balance::RoundRobin);
    assert_eq!(canary.protocol, UpstreamProtocol::Http1);
    assert_eq!(canary.tls, Some(UpstreamTlsSpec::default()));
    assert_eq!(
        canary.connect_timeout,
        Duration::from_secs(1),
        "upstream_defaults"
    );
    assert_eq!(canary.pool_idle_timeout, Duration::from_secs(120));
    assert_eq!(canary.pool_max_idle, 0, "none kept, as asked");

    assert_eq!(
        api.header_routes,
        [
            HeaderRouteSpec {
                name: "beta-testers".into(),
                matches: vec![header("x-canary", ValueMatch::Exact("true".into()))],
                target: Target::Canary,
            },
            HeaderRouteSpec {
                name: "opt-out".into(),
                matches: vec![header("x-canary", ValueMatch::Exact("false".into()))],
                target: Target::Stable,
            },
        ]
    );
    assert_eq!(api.sticky, Some(StickySpec::Cookie("session".into())));
    assert_eq!(
        api.mirror,
        Some(MirrorSpec {
            name: "shadow".into(),
            to: "canary".into(),
            percent_bp: 1000,
            matches: vec![header("x-mirror", ValueMatch::Prefix("yes".into()))],
            rules: Vec::new(),
            methods: vec!["POST".into()],
            header: "x-shadow-copy".into(),
        })
    );

    let web = &routes[1];
    assert_eq!(web.canary_weight_bp(), 2000);
    assert_eq!(web.matches, [MatchSpec::prefix("/")]);
    assert!(web.hosts.is_empty());
    assert_eq!(web.sticky, Some(StickySpec::Header("x-user-id".into())));
    assert_eq!(web.timeout, None);
}

#[test]
fn minimal_config_gets_defaults() {
    let text = "
listeners: [{address: 0.0.0.0:8080}]
routes:
  - name: app
    stable: {addresses: [127.0.0.1:9000]}
";
    let config = config::from_str(text, Path::new("/etc/weir/weir.yaml"))
        .unwrap_or_else(|errors| panic!("{errors}"));
    assert_eq!(config.admin, AdminSpec::default());
    assert_eq!(config.limits, LimitsSpec::default());
    let route = &config.table.routes[0];
    assert_eq!(route.canary().cloned(), None);
    assert_eq!(route.canary_weight_bp(), 0);
    assert_eq!(
        route.stable().unwrap().connect_timeout,
        Duration::from_secs(2)
    );
    assert_eq!(
        route.stable().unwrap().response_timeout,
        Duration::from_secs(30)
    );
    assert_eq!(
        route.stable().unwrap().pool_idle_timeout,
        Duration::from_secs(60)
    );
}

#[test]
fn bare_integer_durations_are_seconds() {
    let text = "
listeners: [{address: 0.0.0.0:8080}]
limits: {idle_timeout: 42}
routes: [{name: app, timeout: 3, stable: {addresses: [127.0.0.1:9000]}}]
";
    let config = config::from_str(text, Path::new("weir.yaml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.limits.idle_timeout, Duration::from_secs(42));
    assert_eq!(config.table.routes[0].timeout, Some(Duration::from_secs(3)));
}

fn header(name: &str, value: ValueMatch) -> HeaderMatchSpec {
    HeaderMatchSpec {
        name: name.into(),
        value,
    }
}

#[test]
fn an_http2_backend_gets_its_pool_settings_or_the_defaults() {
    let text = "
listeners: [{address: 0.0.0.0:8080}]
routes:
  - name: grpc
    stable:
      addresses: [127.0.0.1:9000]
      protocol: http2
      http2:
        max_streams_per_connection: 50
        max_connections: 4
        max_pending: 10
        keepalive_interval: 0s
        max_connection_age: 10m
        max_requests_per_connection: 1000
    canary: {addresses: [127.0.0.1:9100], protocol: http2}
";
    let config = config::from_str(text, Path::new("weir.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let route = &config.table.routes[0];
    let pool = &route.stable().unwrap().http2;
    assert_eq!(pool.max_streams_per_connection, 50);
    assert_eq!(pool.max_connections, 4);
    assert_eq!(pool.max_pending, 10);
    assert_eq!(pool.keepalive_interval, None, "0s turns PINGs off");
    assert_eq!(pool.keepalive_timeout, Duration::from_secs(10));
    assert_eq!(pool.max_connection_age, Some(Duration::from_secs(600)));
    assert_eq!(pool.max_requests_per_connection, Some(1000));
    assert_eq!(
        route.canary().unwrap().http2,
        weir_proxy::table::spec::Http2PoolSpec::default()
    );
}

#[test]
fn redirect_and_rewrite_routes_load() {
    use weir_proxy::table::spec::{PathModifier, RedirectSpec, RewriteSpec};
    let text = "
listeners: [{address: 0.0.0.0:8080}]
routes:
  - name: to-https
    redirect: {scheme: https, status: 301}
  - name: api
    match: {path_prefix: /api}
    stable: {addresses: [127.0.0.1:9001]}
    rewrite: {hostname: API.internal, path: {replace_prefix_match: /v2}}
";
    let config = config::from_str(text, Path::new("weir.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let redirect = &config.table.routes[0];
    assert!(redirect.backends.is_empty(), "a redirect needs no backend");
    assert_eq!(
        redirect.redirect,
        Some(RedirectSpec {
            scheme: Some("https".into()),
            status: 301,
            ..RedirectSpec::found()
        })
    );
    assert_eq!(
        config.table.routes[1].rewrite,
        Some(RewriteSpec {
            hostname: Some("api.internal".into()),
            path: Some(PathModifier::ReplacePrefixMatch("/v2".into())),
        })
    );
}
