//! Route matching and choosing on arbitrary requests: a table with hosts (exact, wildcard),
//! prefixes, header rules, header routes, stickiness and a split; the request's host, target
//! and fields come from the input, both as a raw head (the passthrough engine) and as a map
//! (the hyper engine). The two must find the same route.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use weir_proxy::h1::head::{HeadFields, Parsed, RequestHead};
use weir_proxy::pipeline::{match_route, Exchange};
use weir_proxy::stats::{LiveStats, Metrics};
use weir_proxy::table::spec::{
    BackendSpec, HeaderMatchSpec, HeaderRouteSpec, MatchSpec, PathMatch, QueryMatchSpec, RouteSpec,
    StickySpec, TableSpec, Target, ValueMatch,
};
use weir_proxy::table::{Compiler, RouteTable};
use weir_proxy::upstream::Upstreams;

fn table() -> &'static RouteTable {
    static TABLE: OnceLock<RouteTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let backend = || BackendSpec::new(["127.0.0.1:9"]);
        let mut routes = Vec::new();
        for (i, (host, prefix)) in [
            ("api.example.com", "/"),
            ("api.example.com", "/v1"),
            ("*.example.com", "/"),
            ("", "/static/"),
            ("", "/"),
        ]
        .iter()
        .enumerate()
        {
            let mut r = RouteSpec::new(format!("r{i}"), backend());
            if !host.is_empty() {
                r.hosts = vec![host.to_string()];
            }
            r.matches[0].path = PathMatch::Prefix(prefix.to_string());
            r.set_canary(Some(BackendSpec::new(["127.0.0.1:10"])));
            r.set_canary_weight_bp(2500);
            if i == 1 {
                r.matches[0].headers = vec![HeaderMatchSpec {
                    name: "x-version".into(),
                    value: ValueMatch::Regex("^v[0-9]+$".into()),
                }];
                r.sticky = Some(StickySpec::Cookie("session".into()));
            }
            if i == 2 {
                r.header_routes = vec![HeaderRouteSpec {
                    name: "testers".into(),
                    matches: vec![HeaderMatchSpec {
                        name: "x-canary".into(),
                        value: ValueMatch::Prefix("y".into()),
                    }],
                    target: Target::Canary,
                }];
                r.sticky = Some(StickySpec::Header("x-user".into()));
            }
            if i == 4 {
                // HTTPRoute shapes: an exact path with a method, a regex path with a query rule.
                let mut exact = MatchSpec::prefix("/");
                exact.path = PathMatch::Exact("/login".into());
                exact.method = Some("POST".into());
                let mut regex = MatchSpec::prefix("/");
                regex.path = PathMatch::Regex("/v[0-9]+/.*".into());
                regex.query = vec![QueryMatchSpec {
                    name: "beta".into(),
                    value: ValueMatch::Exact("1".into()),
                }];
                r.matches.extend([exact, regex]);
            }
            routes.push(r);
        }
        let metrics = Arc::new(Metrics::new());
        let compiler = Compiler {
            upstreams: Arc::new(Upstreams::new(metrics.clone(), 1)),
            metrics,
            live: Arc::new(LiveStats::new()),
        };
        compiler
            .compile(&TableSpec { routes })
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

fuzz_target!(|data: &[u8]| {
    let table = table();
    let mut head = RequestHead::default();
    if !matches!(head.parse(data, 100), Parsed::Complete | Parsed::Hyper) {
        return;
    }
    let fields = HeadFields {
        buf: data,
        list: &head.list,
    };
    let method = &data[head.method.clone()];
    let raw = match_route(
        table,
        head.host(data),
        false,
        method,
        head.target(data),
        &fields,
    );
    if let Some(route) = raw {
        let _ = Exchange::choose(route, &fields);
    }
    // The same request as hyper's map: the same route.
    let mut map = http::HeaderMap::new();
    for f in &head.list.fields {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(&data[f.name.clone()]),
            http::HeaderValue::from_bytes(&data[f.value.clone()]),
        ) {
            map.append(name, value);
        }
    }
    if map.len() == head.list.fields.len() {
        let mapped = match_route(
            table,
            head.host(data),
            false,
            method,
            head.target(data),
            &map,
        );
        assert_eq!(
            raw.map(|r| &r.name),
            mapped.map(|r| &r.name),
            "the engines' views of one request found different routes"
        );
    }
});
