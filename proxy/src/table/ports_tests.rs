//! Routes that serve some request ports only (a GAMMA parentRef's Service port): the request's
//! port is its Host's, else the listener scheme's default.

use std::sync::Arc;

use http::HeaderMap;

use super::{Compiler, RouteTable};
use crate::stats::{LiveStats, Metrics};
use crate::table_spec::{BackendSpec, MatchSpec, PortMatch, RouteSpec, TableSpec};
use crate::upstream::Upstreams;

fn compile(routes: Vec<RouteSpec>) -> Result<RouteTable, String> {
    let metrics = Arc::new(Metrics::new());
    let compiler = Compiler {
        upstreams: Arc::new(Upstreams::new(metrics.clone(), 1)),
        metrics,
        live: Arc::new(LiveStats::new()),
    };
    compiler
        .compile(&TableSpec { routes })
        .map_err(|e| e.to_string())
}

fn route(name: &str, prefix: &str, ports: PortMatch) -> RouteSpec {
    let mut r = RouteSpec::new(name, BackendSpec::new(["127.0.0.1:1"]));
    r.hosts = vec!["echo".to_string()];
    r.matches = vec![MatchSpec::prefix(prefix)];
    r.ports = ports;
    r
}

fn found(table: &RouteTable, host: &str, tls: bool, path: &str) -> Option<String> {
    table
        .find(
            Some(host.as_bytes()),
            tls,
            b"GET",
            path.as_bytes(),
            &HeaderMap::new(),
        )
        .map(|r| r.name.to_string())
}

#[test]
fn a_route_serves_only_its_ports() {
    let table = compile(vec![
        route("eighty", "/", PortMatch::Except(vec![8080, 9090])),
        route("alt", "/", PortMatch::Only(vec![8080])),
        route("any", "/any", PortMatch::Any),
    ])
    .unwrap();
    assert_eq!(found(&table, "echo", false, "/").as_deref(), Some("eighty"));
    assert_eq!(
        found(&table, "echo:80", false, "/").as_deref(),
        Some("eighty")
    );
    assert_eq!(
        found(&table, "ECHO:8080", false, "/").as_deref(),
        Some("alt")
    );
    // Not another Service port: the default port's route takes it (weir's own port, say).
    assert_eq!(
        found(&table, "echo:15001", false, "/").as_deref(),
        Some("eighty")
    );
    assert_eq!(found(&table, "echo", true, "/").as_deref(), Some("eighty"));
    // A port that only some route lists, none of whose rules match: nothing, not another
    // port's route.
    assert_eq!(found(&table, "echo:9090", false, "/"), None);
    // A route for any port serves every one, in precedence order with the others.
    for host in ["echo", "echo:8080", "echo:9090"] {
        assert_eq!(found(&table, host, false, "/any/x").as_deref(), Some("any"));
    }
}

#[test]
fn same_match_on_other_ports_is_no_overlap() {
    let table = compile(vec![
        route("a", "/", PortMatch::Only(vec![8080])),
        route("b", "/", PortMatch::Only(vec![9090])),
    ]);
    assert!(table.is_ok(), "{:?}", table.err());
    let twice = compile(vec![
        route("a", "/", PortMatch::Only(vec![8080])),
        route("b", "/", PortMatch::Only(vec![8080])),
    ]);
    assert!(twice
        .err()
        .unwrap_or_default()
        .contains("could never match"));
    let zero = compile(vec![route("a", "/", PortMatch::Only(vec![0]))]);
    let zero = zero.err().unwrap_or_default();
    assert!(zero.contains("routes[0].ports: 0 is not a port"), "{zero}");
}
