//! The Prometheus registry and the per route×backend handles the data path records through.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use super::exposition::{to_classic, Format};
use super::histogram::AtomicHistogram;
use super::outcome::{Outcome, UpstreamError};

type RouteLabels = [(&'static str, String); 1];
type BackendLabels = [(&'static str, String); 2];
type ErrorLabels = [(&'static str, String); 3];
type RequestLabels = [(&'static str, String); 4];
type ResultLabels = [(&'static str, &'static str); 1];
type WorkerLabels = [(&'static str, String); 1];

/// Status codes with a pre-resolved counter slot: 100..=599.
const FIRST_STATUS: u16 = 100;
const STATUS_SLOTS: usize = 500;

/// weir's metrics. Shared as `Arc<Metrics>`; the data path only touches `BackendMetrics`.
#[derive(Debug)]
pub struct Metrics {
    /// Behind a mutex only so the control plane can add its own metrics later; the data path
    /// never touches it (scrapes and registration do).
    registry: std::sync::Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    duration: Family<BackendLabels, AtomicHistogram>,
    upstream_errors: Family<ErrorLabels, Counter>,
    canary_weight: Family<RouteLabels, Gauge<f64, AtomicU64>>,
    observed_share: Family<[(&'static str, String); 2], Gauge<f64, AtomicU64>>,
    /// The (route, backend) pairs `observed_share` has, so a route's can be dropped with it.
    observed_labels: std::sync::Mutex<std::collections::BTreeSet<(String, String)>>,
    table_swaps: Counter,
    table_generation: Gauge,
    config_reloads: Family<ResultLabels, Counter>,
    pool: PoolFamilies,
    client_connections: Gauge,
    client_connections_parked: Gauge,
    worker_client_connections: Family<WorkerLabels, Gauge>,
    tls_handshake_failures: Family<[(&'static str, String); 2], Counter>,
    identity_refusals: Family<[(&'static str, String); 2], Counter>,
    /// Handles already resolved, by route and side: a reload (up to 100 a second in the swap
    /// storm) reuses them instead of resolving a route×backend's 500 status slots again.
    backends: std::sync::Mutex<HashMap<(String, String), BackendMetrics>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("weir");
        let requests = Family::default();
        let duration = Family::default();
        let upstream_errors = Family::default();
        let canary_weight = Family::default();
        let observed_share = Family::default();
        let table_swaps = Counter::default();
        let table_generation = Gauge::default();
        let config_reloads = Family::<ResultLabels, Counter>::default();

        registry.register(
            "requests",
            "Upstream attempts by route, backend, status code and class; gRPC server faults \
             and upstream errors are class 5xx",
            requests.clone(),
        );
        registry.register_with_unit(
            "request_duration",
            "Time from sending an upstream attempt to its response headers or error",
            Unit::Seconds,
            duration.clone(),
        );
        registry.register(
            "upstream_errors",
            "Upstream attempts that got no response, by kind",
            upstream_errors.clone(),
        );
        registry.register(
            "canary_weight_ratio",
            "Share of the route's traffic sent to the canary, 0 to 1",
            canary_weight.clone(),
        );
        registry.register(
            "observed_share_ratio",
            "Share of the route's requests each backend took over the last 60 s, 0 to 1 (the \
             split carried out, to check against the weights)",
            observed_share.clone(),
        );
        registry.register(
            "table_swaps",
            "Routing tables swapped in",
            table_swaps.clone(),
        );
        registry.register(
            "table_generation",
            "Generation of the routing table serving traffic",
            table_generation.clone(),
        );
        registry.register(
            "config_reloads",
            "Configuration reloads by result",
            config_reloads.clone(),
        );
        // Both series exist from the start, so `increase()` sees the first failure.
        for result in ["success", "failure"] {
            config_reloads
                .get_or_create(&[("result", result)])
                .inc_by(0);
        }

        let client_connections = Gauge::default();
        registry.register(
            "client_connections",
            "Client connections open over all listeners (limits.max_connections caps them; \
             at the cap, new clients wait in the kernel's accept queue)",
            client_connections.clone(),
        );

        let client_connections_parked = Gauge::default();
        registry.register(
            "client_connections_parked",
            "Of the client connections open, idle HTTP/1 ones parked: watched by one task per \
             listener instead of each by its own (after a second without a request)",
            client_connections_parked.clone(),
        );

        let worker_client_connections = Family::<WorkerLabels, Gauge>::default();
        registry.register(
            "worker_client_connections",
            "Of the client connections open, each worker's (--workers): a worker more than one \
             and a sixty-fourth of the total ahead of the least loaded waits to accept",
            worker_client_connections.clone(),
        );

        let tls_handshake_failures = Family::default();
        registry.register(
            "tls_handshake_failures",
            "Client TLS handshakes that failed, by listener and reason: a client certificate \
             refused (no_certificate, expired, not_yet_valid, unknown_issuer, revoked, \
             bad_certificate), timeout, protocol or io",
            tls_handshake_failures.clone(),
        );
        let identity_refusals = Family::default();
        registry.register(
            "identity_refusals",
            "Requests answered 403 because the route does not allow their client's identity \
             (or the client presented none), by listener and route",
            identity_refusals.clone(),
        );

        let pool = PoolFamilies::register(&mut registry);
        Metrics {
            tls_handshake_failures,
            identity_refusals,
            worker_client_connections,
            pool,
            client_connections,
            client_connections_parked,
            registry: std::sync::Mutex::new(registry),
            requests,
            duration,
            upstream_errors,
            canary_weight,
            observed_share,
            observed_labels: std::sync::Mutex::default(),
            table_swaps,
            table_generation,
            config_reloads,
            backends: std::sync::Mutex::default(),
        }
    }

    /// The count of open client connections, kept by the listeners.
    pub fn client_connections(&self) -> Gauge {
        self.client_connections.clone()
    }

    pub fn client_connections_parked(&self) -> Gauge {
        self.client_connections_parked.clone()
    }

    /// One gauge a worker, for the client connections each serves.
    pub fn worker_client_connections(&self, workers: usize) -> Vec<Gauge> {
        (0..workers)
            .map(|i| {
                self.worker_client_connections
                    .get_or_create(&[("worker", i.to_string())])
                    .clone()
            })
            .collect()
    }

    /// The handles of one upstream address's connection pools.
    pub fn upstream_pool(&self, address: &str) -> PoolMetrics {
        let labels = [("upstream", address.to_owned())];
        let pool = &self.pool;
        PoolMetrics {
            connections: pool.connections.get_or_create(&labels).clone(),
            streams: pool.streams.get_or_create(&labels).clone(),
            goaways: pool.goaways.get_or_create(&labels).clone(),
            refused: pool.refused.get_or_create(&labels).clone(),
            learned_cap: pool.learned_cap.get_or_create(&labels).clone(),
            waits: pool.waits.get_or_create(&labels).clone(),
            wait_time: pool.wait_time.get_or_create(&labels).clone(),
            opened: pool.opened.get_or_create(&labels).clone(),
            idle_full: pool.idle_full.get_or_create(&labels).clone(),
        }
    }

    /// Adds metrics of the control plane (rollouts, analysis) to the same exposition.
    pub fn register(&self, add: impl FnOnce(&mut Registry)) {
        add(&mut self.registry.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// Pre-resolved handles for one route×backend; called when a table is compiled. The same
    /// handles every time for the same route and side.
    /// The handles of a route×backend (`backend` is its name: `stable`, `canary`, a Service).
    pub fn backend(&self, route: &str, backend: impl AsRef<str>) -> BackendMetrics {
        let backend = backend.as_ref();
        let mut backends = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        backends
            .entry((route.to_owned(), backend.to_owned()))
            .or_insert_with(|| self.resolve_backend(route, backend))
            .clone()
    }

    fn resolve_backend(&self, route: &str, backend: &str) -> BackendMetrics {
        let backend_labels = [("route", route.to_owned()), ("backend", backend.to_owned())];
        let errors = UpstreamError::ALL.map(|kind| {
            self.upstream_errors
                .get_or_create(&[
                    ("route", route.to_owned()),
                    ("backend", backend.to_owned()),
                    ("kind", kind.as_str().to_owned()),
                ])
                .clone()
        });
        let empty_slots = || (0..STATUS_SLOTS).map(|_| OnceLock::new()).collect();
        BackendMetrics {
            inner: Arc::new(BackendInner {
                route: route.to_owned(),
                backend: backend.to_owned(),
                requests: self.requests.clone(),
                by_status: empty_slots(),
                grpc_faults: empty_slots(),
                duration: self.duration.get_or_create(&backend_labels).clone(),
                errors,
            }),
        }
    }

    /// Sets the route's canary weight gauge from basis points (0..=10000).
    pub fn set_canary_weight(&self, route: &str, weight_bp: u16) {
        let ratio = f64::from(weight_bp.min(10_000)) / 10_000.0;
        self.canary_weight
            .get_or_create(&[("route", route.to_owned())])
            .set(ratio);
    }

    /// Sets the share of a route's requests a backend took over the last 60 s (0..=1).
    pub fn set_observed_share(&self, route: &str, backend: &str, share: f64) {
        let labels = [("route", route.to_owned()), ("backend", backend.to_owned())];
        self.observed_share.get_or_create(&labels).set(share);
        let mut known = self
            .observed_labels
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        known.insert((route.to_owned(), backend.to_owned()));
    }

    /// Drops a route's weight gauges and its cached handles once the route is gone from the
    /// table (its request counters stay: they are cumulative).
    pub fn remove_route(&self, route: &str) {
        self.canary_weight.remove(&[("route", route.to_owned())]);
        let mut known = self
            .observed_labels
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        known.retain(|(r, backend)| {
            let ours = r == route;
            if ours {
                self.observed_share
                    .remove(&[("route", r.clone()), ("backend", backend.clone())]);
            }
            !ours
        });
        drop(known);
        let mut backends = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        backends.retain(|(name, _), _| name != route);
    }

    pub fn table_swapped(&self, generation: u64) {
        self.table_swaps.inc();
        self.table_generation
            .set(i64::try_from(generation).unwrap_or(i64::MAX));
    }

    /// A client's TLS handshake failed on `listener`, for `reason` (`identity::refusal_reason`).
    pub fn tls_handshake_failed(&self, listener: &str, reason: &'static str) {
        self.tls_handshake_failures
            .get_or_create(&[
                ("listener", listener.to_owned()),
                ("reason", reason.to_owned()),
            ])
            .inc();
    }

    /// A request on `route` was refused for its client's identity (or the lack of one).
    pub fn identity_refused(&self, listener: &str, route: &str) {
        self.identity_refusals
            .get_or_create(&[
                ("listener", listener.to_owned()),
                ("route", route.to_owned()),
            ])
            .inc();
    }

    pub fn config_reload(&self, ok: bool) {
        let result = if ok { "success" } else { "failure" };
        self.config_reloads
            .get_or_create(&[("result", result)])
            .inc();
    }

    /// The registry as text in the given format.
    pub fn encode(&self, format: Format) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail; an encoder error would be a library bug, so serve
        // what was written rather than nothing.
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &registry) {
            tracing::warn!(%error, "encoding metrics failed");
        }
        match format {
            Format::OpenMetrics => text,
            Format::Classic => to_classic(&text),
        }
    }
}

/// The metric handles of one route×backend. Cheap to clone; recording takes no lock once a
/// status code has been seen.
#[derive(Clone, Debug)]
pub struct BackendMetrics {
    inner: Arc<BackendInner>,
}

#[derive(Debug)]
struct BackendInner {
    route: String,
    backend: String,
    requests: Family<RequestLabels, Counter>,
    /// Request counters by status (index `status - 100`), resolved on first use.
    by_status: Box<[OnceLock<Counter>]>,
    /// The same for outcomes forced into class 5xx whose status is not 5xx (gRPC faults).
    grpc_faults: Box<[OnceLock<Counter>]>,
    duration: AtomicHistogram,
    /// Indexed like `UpstreamError::ALL`.
    errors: [Counter; 6],
}

impl BackendMetrics {
    pub fn record(&self, outcome: &Outcome) {
        let inner = &*self.inner;
        inner.duration.observe(outcome.latency);

        let mut code = outcome.status;
        if let Some(error) = outcome.error {
            inner.errors[error as usize].inc();
            // An error's status is weir's answer for it, which is always a 5xx.
            if !(500..=599).contains(&code) {
                code = error.status();
            }
        }
        let forced = outcome.grpc_fault || outcome.error.is_some();
        let class = if forced { "5xx" } else { status_class(code) };
        let slots = if forced && class != status_class(code) {
            &inner.grpc_faults
        } else {
            &inner.by_status
        };
        let slot = usize::from(code)
            .checked_sub(usize::from(FIRST_STATUS))
            .and_then(|i| slots.get(i));
        match slot {
            Some(slot) => slot.get_or_init(|| self.counter(code, class)).inc(),
            // Outside 100..=599: rare enough to resolve every time.
            None => self.counter(code, class).inc(),
        };
    }

    fn counter(&self, code: u16, class: &'static str) -> Counter {
        let inner = &*self.inner;
        inner
            .requests
            .get_or_create(&[
                ("route", inner.route.clone()),
                ("backend", inner.backend.clone()),
                ("code", code.to_string()),
                ("class", class.to_owned()),
            ])
            .clone()
    }
}

fn status_class(code: u16) -> &'static str {
    match code {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Role;
    use std::time::Duration;

    fn classic(metrics: &Metrics) -> String {
        metrics.encode(Format::Classic)
    }

    #[test]
    fn error_kinds_index_like_all() {
        for (i, kind) in UpstreamError::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, i);
        }
    }

    #[test]
    fn a_recompiled_route_records_through_the_same_handles() {
        let metrics = Metrics::new();
        let first = metrics.backend("api", Role::Stable);
        first.record(&Outcome::response(200, Duration::from_millis(3)));
        let again = metrics.backend("api", Role::Stable);
        assert!(Arc::ptr_eq(&first.inner, &again.inner));
        assert!(!Arc::ptr_eq(
            &first.inner,
            &metrics.backend("api", Role::Canary).inner
        ));
        // A removed route's handles go; its counts stay, and a route of that name comes back
        // counting on from them.
        metrics.remove_route("api");
        let back = metrics.backend("api", Role::Stable);
        assert!(!Arc::ptr_eq(&first.inner, &back.inner));
        back.record(&Outcome::response(200, Duration::from_millis(3)));
        assert!(classic(&metrics).contains(
            r#"weir_requests_total{route="api",backend="stable",code="200",class="2xx"} 2"#
        ));
    }

    #[test]
    fn recorded_outcome_has_labels() {
        let metrics = Metrics::new();
        let api = metrics.backend("api", Role::Canary);
        api.record(&Outcome::response(200, Duration::from_millis(3)));
        api.record(&Outcome::response(200, Duration::from_millis(3)));
        api.record(&Outcome::response(404, Duration::from_millis(3)));
        api.clone().record(&Outcome::error(
            UpstreamError::Timeout,
            Duration::from_secs(2),
        ));
        let text = classic(&metrics);
        for line in [
            r#"weir_requests_total{route="api",backend="canary",code="200",class="2xx"} 2"#,
            r#"weir_requests_total{route="api",backend="canary",code="404",class="4xx"} 1"#,
            r#"weir_requests_total{route="api",backend="canary",code="504",class="5xx"} 1"#,
            r#"weir_upstream_errors_total{route="api",backend="canary",kind="timeout"} 1"#,
            r#"weir_upstream_errors_total{route="api",backend="canary",kind="connect"} 0"#,
            r#"weir_request_duration_seconds_count{route="api",backend="canary"} 4"#,
            r#"weir_config_reloads_total{result="failure"} 0"#,
            "# TYPE weir_requests_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        }
    }

    #[test]
    fn grpc_fault_is_class_5xx() {
        let metrics = Metrics::new();
        let api = metrics.backend("api", Role::Stable);
        let mut fault = Outcome::response(200, Duration::from_millis(1));
        fault.grpc_fault = true;
        api.record(&fault);
        api.record(&Outcome::response(200, Duration::from_millis(1)));
        let text = classic(&metrics);
        let fault_line =
            r#"weir_requests_total{route="api",backend="stable",code="200",class="5xx"} 1"#;
        let ok_line =
            r#"weir_requests_total{route="api",backend="stable",code="200",class="2xx"} 1"#;
        assert!(text.lines().any(|l| l == fault_line), "{text}");
        assert!(text.lines().any(|l| l == ok_line), "{text}");
    }

    #[test]
    fn odd_statuses_are_counted() {
        let metrics = Metrics::new();
        let api = metrics.backend("api", Role::Stable);
        api.record(&Outcome::response(799, Duration::ZERO));
        let mut error = Outcome::error(UpstreamError::Connect, Duration::ZERO);
        error.status = 0;
        api.record(&error);
        let text = classic(&metrics);
        assert!(text.contains(r#"code="799",class="other"} 1"#), "{text}");
        assert!(text.contains(r#"code="503",class="5xx"} 1"#), "{text}");
    }

    #[test]
    fn weight_gauge_is_a_ratio() {
        let metrics = Metrics::new();
        metrics.set_canary_weight("api", 2000);
        metrics.set_canary_weight("web", 10_000);
        let text = classic(&metrics);
        assert!(
            text.contains("weir_canary_weight_ratio{route=\"api\"} 0.2\n"),
            "{text}"
        );
        assert!(
            text.contains("weir_canary_weight_ratio{route=\"web\"} 1.0\n"),
            "{text}"
        );
        metrics.remove_route("api");
        assert!(!classic(&metrics).contains("route=\"api\""));
    }

    #[test]
    fn table_and_reload_counters() {
        let metrics = Metrics::new();
        metrics.table_swapped(7);
        metrics.config_reload(true);
        metrics.config_reload(false);
        metrics.config_reload(false);
        let text = classic(&metrics);
        for line in [
            "weir_table_swaps_total 1",
            "weir_table_generation 7",
            r#"weir_config_reloads_total{result="success"} 1"#,
            r#"weir_config_reloads_total{result="failure"} 2"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        }
        let om = metrics.encode(Format::OpenMetrics);
        assert!(om.ends_with("# EOF\n"));
        assert!(om.contains("# TYPE weir_table_swaps counter\n"));
    }

    #[test]
    fn handles_are_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<Metrics>();
        check::<BackendMetrics>();
    }
}

type UpstreamLabels = [(&'static str, String); 1];

/// The upstream pools' metric families, labelled by upstream address (a pool is per address,
/// shared by every route and backend that names it).
#[derive(Debug)]
struct PoolFamilies {
    connections: Family<UpstreamLabels, Gauge>,
    streams: Family<UpstreamLabels, Gauge>,
    goaways: Family<UpstreamLabels, Counter>,
    refused: Family<UpstreamLabels, Counter>,
    learned_cap: Family<UpstreamLabels, Gauge>,
    waits: Family<UpstreamLabels, Counter>,
    wait_time: Family<UpstreamLabels, AtomicHistogram>,
    opened: Family<UpstreamLabels, Counter>,
    idle_full: Family<UpstreamLabels, Counter>,
}

impl PoolFamilies {
    fn register(registry: &mut Registry) -> Self {
        let families = PoolFamilies {
            connections: Family::default(),
            streams: Family::default(),
            goaways: Family::default(),
            refused: Family::default(),
            learned_cap: Family::default(),
            waits: Family::default(),
            wait_time: Family::default(),
            opened: Family::default(),
            idle_full: Family::default(),
        };
        registry.register(
            "upstream_h2_connections",
            "HTTP/2 connections open to the upstream address that take new streams or still \
             carry some",
            families.connections.clone(),
        );
        registry.register(
            "upstream_h2_streams",
            "Requests in flight on the upstream address's HTTP/2 connections",
            families.streams.clone(),
        );
        registry.register(
            "upstream_h2_goaways",
            "HTTP/2 connections to the upstream address that received GOAWAY",
            families.goaways.clone(),
        );
        registry.register(
            "upstream_h2_refused_streams",
            "Streams the upstream refused (REFUSED_STREAM, or above a graceful GOAWAY's last \
             stream id); each is sent again when its body was kept",
            families.refused.clone(),
        );
        registry.register(
            "upstream_h2_learned_stream_cap",
            "Streams an HTTP/2 connection to the upstream address carries before weir retires \
             it, learnt from the server ending connections at that count (0: none learnt)",
            families.learned_cap.clone(),
        );
        registry.register(
            "upstream_h2_stream_waits",
            "Requests that found every HTTP/2 connection at its stream limit and waited",
            families.waits.clone(),
        );
        registry.register_with_unit(
            "upstream_h2_stream_wait",
            "How long requests waited for an HTTP/2 stream",
            Unit::Seconds,
            families.wait_time.clone(),
        );
        registry.register(
            "upstream_connections_opened",
            "Connections opened to the upstream address (HTTP/1 and HTTP/2, TCP and TLS \
             handshakes done); many per request means the pool is too small for the load",
            families.opened.clone(),
        );
        registry.register(
            "upstream_idle_pool_full",
            "HTTP/1 connections closed when handed back because the address had \
             `pool_max_idle` idle already",
            families.idle_full.clone(),
        );
        families
    }
}

/// The handles of one upstream address's pools.
#[derive(Clone, Debug)]
pub struct PoolMetrics {
    pub connections: Gauge,
    pub streams: Gauge,
    pub goaways: Counter,
    pub refused: Counter,
    pub learned_cap: Gauge,
    pub waits: Counter,
    pub wait_time: AtomicHistogram,
    pub opened: Counter,
    pub idle_full: Counter,
}
