//! criterion micro-benchmarks of the per-request work that is weir's own (everything but the
//! sockets): route match + backend pick, recording one outcome, and table loads during swaps.
//! Run: cargo bench --bench data_path. Results and the machine they came from: benches/README.md.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use http::HeaderMap;
use weir_proxy::h1::head::{HeadFields, Parsed, RequestHead};
use weir_proxy::stats::{LiveStats, Metrics, Outcome};
use weir_proxy::table::spec::{
    BackendSpec, HeaderMatchSpec, HeaderRouteSpec, RouteSpec, StickySpec, TableSpec, Target,
    ValueMatch,
};
use weir_proxy::table::{Backend, Compiler, RouteTable, TableHandle};
use weir_proxy::upstream::Upstreams;

/// Ten routes over three hosts, the one under test with a canary at 20 % and a header route.
fn spec(sticky: bool) -> TableSpec {
    let mut routes = Vec::new();
    for (i, host) in ["api.example.com", "www.example.com", "*.example.com"]
        .iter()
        .enumerate()
    {
        for prefix in ["/", "/v1", "/v2"] {
            let mut r = RouteSpec::new(
                format!("r{i}{}", prefix.replace('/', "_")),
                BackendSpec::new(["127.0.0.1:9001", "127.0.0.1:9002"]),
            );
            r.hosts = vec![host.to_string()];
            r.matches[0].path = weir_proxy::table::spec::PathMatch::Prefix(prefix.to_string());
            routes.push(r);
        }
    }
    let mut web = RouteSpec::new(
        "web",
        BackendSpec::new(["127.0.0.1:9001", "127.0.0.1:9002"]),
    );
    web.hosts = vec!["shop.example.com".into()];
    web.matches[0].path = weir_proxy::table::spec::PathMatch::Prefix("/cart".into());
    web.set_canary(Some(BackendSpec::new(["127.0.0.1:9101"])));
    web.set_canary_weight_bp(2000);
    web.header_routes = vec![HeaderRouteSpec {
        name: "testers".into(),
        matches: vec![HeaderMatchSpec {
            name: "x-canary".into(),
            value: ValueMatch::Exact("yes".into()),
        }],
        target: Target::Canary,
    }];
    if sticky {
        web.sticky = Some(StickySpec::Cookie("session".into()));
    }
    routes.push(web);
    TableSpec { routes }
}

fn compiler() -> Compiler {
    let metrics = Arc::new(Metrics::new());
    Compiler {
        upstreams: Arc::new(Upstreams::new(metrics.clone(), 1)),
        metrics,
        live: Arc::new(LiveStats::new()),
    }
}

fn headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("host", "shop.example.com".parse().unwrap());
    h.insert("user-agent", "bench/1.0".parse().unwrap());
    h.insert("accept", "*/*".parse().unwrap());
    h.insert(
        "cookie",
        "theme=dark; session=3f2a9c; lang=en".parse().unwrap(),
    );
    h
}

/// The same request as the HTTP/1 passthrough engine sees it: a head parsed into offsets.
const RAW_HEAD: &[u8] =
    b"GET /cart/items HTTP/1.1\r\nHost: shop.example.com\r\nUser-Agent: bench/1.0\r\n\
Accept: */*\r\nCookie: theme=dark; session=3f2a9c; lang=en\r\n\r\n";

fn raw_head() -> RequestHead {
    let mut head = RequestHead::default();
    assert!(matches!(head.parse(RAW_HEAD, 100), Parsed::Complete));
    head
}

/// Match and pick as the passthrough engine does: host, path and fields read in place.
fn route_raw<'t>(table: &'t RouteTable, head: &RequestHead) -> &'t Backend {
    let buf = black_box(RAW_HEAD);
    let fields = HeadFields {
        buf,
        list: &head.list,
    };
    let route = table
        .find(
            head.host(buf),
            false,
            head.method(buf),
            head.target(buf),
            &fields,
        )
        .unwrap();
    let backend = route.backend(route.choose(&fields).unwrap());
    black_box(backend.pick());
    backend
}

fn match_and_pick(c: &mut Criterion) {
    let compiler = compiler();
    let h = headers();
    for (name, sticky) in [("match+pick", false), ("match+pick sticky", true)] {
        let table: RouteTable = compiler.compile(&spec(sticky)).unwrap();
        c.bench_function(name, |b| {
            b.iter(|| {
                let route = table
                    .find(
                        Some(black_box(&b"shop.example.com"[..])),
                        false,
                        b"GET",
                        black_box(&b"/cart/items"[..]),
                        &h,
                    )
                    .unwrap();
                let chosen = route.choose(&h).unwrap();
                black_box(route.backend(chosen).pick());
            })
        });
    }
    let table: RouteTable = compiler.compile(&spec(false)).unwrap();
    let head = raw_head();
    c.bench_function("match+pick (raw head)", |b| {
        b.iter(|| route_raw(&table, &head))
    });
}

fn record(c: &mut Criterion) {
    let table = compiler().compile(&spec(false)).unwrap();
    let backend = table.route("web").unwrap().backend(0);
    // As the data path builds it: one clock read per request, for the latency and the live
    // window's second alike.
    let started = Instant::now() - Duration::from_micros(420);
    let outcome = || Outcome::response_between(200, started, Instant::now());
    c.bench_function("record outcome (metrics + live window)", |b| {
        b.iter(|| backend.stats.record(black_box(&outcome())))
    });

    let h = headers();
    c.bench_function("match+pick+record", |b| {
        b.iter(|| {
            let route = table
                .find(
                    Some(black_box(&b"shop.example.com"[..])),
                    false,
                    b"GET",
                    black_box(&b"/cart/items"[..]),
                    &h,
                )
                .unwrap();
            let backend = route.backend(route.choose(&h).unwrap());
            black_box(backend.pick());
            backend.stats.record(black_box(&outcome()));
        })
    });

    let head = raw_head();
    c.bench_function("match+pick+record (raw head)", |b| {
        b.iter(|| route_raw(&table, &head).stats.record(black_box(&outcome())))
    });
}

fn swaps(c: &mut Criterion) {
    let compiler = compiler();
    let handle = Arc::new(TableHandle::new(compiler.metrics.clone()));
    handle.swap(compiler.compile(&spec(false)).unwrap());
    c.bench_function("table load (no swaps)", |b| {
        b.iter(|| black_box(handle.load().generation()))
    });

    // Another thread swaps as fast as it can while this one loads.
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (handle, stop) = (handle.clone(), stop.clone());
        let tables: Vec<_> = (0..2)
            .map(|_| compiler.compile(&spec(false)).unwrap())
            .collect();
        std::thread::spawn(move || {
            let mut tables = tables;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Re-use compiled tables: this measures swapping, not compiling.
                let t = tables.pop().unwrap_or_else(RouteTable::empty);
                handle.swap(t);
                n += 1;
                if tables.is_empty() {
                    tables.push(RouteTable::empty());
                }
            }
            n
        })
    };
    c.bench_function("table load (during a swap storm)", |b| {
        b.iter(|| black_box(handle.load().generation()))
    });
    stop.store(true, Ordering::Relaxed);
    let _ = swapper.join();

    c.bench_function("compile + swap (11 routes)", |b| {
        let spec = spec(false);
        b.iter(|| handle.swap(compiler.compile(&spec).unwrap()))
    });
}

criterion_group!(benches, match_and_pick, record, swaps);
criterion_main!(benches);
