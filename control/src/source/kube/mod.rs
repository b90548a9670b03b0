//! The Kubernetes source: follow the weights Argo Rollouts decides.
//!
//! In a cluster Argo Rollouts' controller decides the canary weight and weir carries it out. This
//! source watches, in one namespace, either Argo `Rollout`s (`status.canary.weights`,
//! `status.abort`, the canary/blue-green Services) or an SMI `TrafficSplit` (what Argo writes for
//! `trafficRouting.smi`), plus the `EndpointSlice`s of the Services involved, and turns them into
//! the same `TableSpec` the file source produces, applied with `DataPlane::apply`. The data plane
//! does not know the difference.
//!
//! - [`reconcile::reconcile`] is the pure part: watched state → table.
//! - [`start`] / [`start_with_client`] run it: one watch task per resource (kube's watcher; any
//!   error → back off → fresh list) and a reconcile task that recomputes on every change,
//!   debounced by [`KubeSourceConfig::debounce`], and applies only changed, valid tables.
//! - Resilience: API unreachable, watch errors, 410 Gone, an unreadable object — the last good
//!   table keeps serving; [`KubeHandle::staleness`] and the gauges
//!   `weir_kube_sync_staleness_seconds` / `weir_kube_last_sync_timestamp_seconds` say for how long
//!   the view may be out of date.
//!
//! RBAC it needs (least privilege), in `namespace` only: `get`, `list`, `watch` on
//! `rollouts.argoproj.io` (or `trafficsplits.split.smi-spec.io`) and
//! `endpointslices.discovery.k8s.io`.

mod attach;
pub mod certificates;
pub mod condition;
mod endpoints;
pub mod filters;
pub mod gateway;
pub mod gateway_status;
pub mod gateway_view;
pub mod hostnames;
pub mod httproute;
pub mod lease;
mod mesh;
pub mod objects;
mod observed;
mod plan;
pub mod quantity;
pub mod reconcile;
pub mod route_status;
pub mod service;
mod status_writer;
mod watch;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::mpsc;
use weir_proxy::table::spec::TableSpec;
use weir_proxy::DataPlane;

pub use crate::config::{KubeSourceConfig, PortRef, SmiVersion, WeightSource};
pub use quantity::parse_quantity;
pub use reconcile::{reconcile, Desired, Observed};

/// The running source. Dropping it stops the watches (the table in force stays).
pub struct KubeHandle {
    shared: watch::Shared,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    client: kube::Client,
    gauges: Gauges,
    plane: Arc<DataPlane>,
}

impl KubeHandle {
    /// Time since the source was last known to be in sync with the API server: zero while every
    /// watch is listed and healthy, growing while any is failing; None before the first complete
    /// sync.
    pub fn staleness(&self) -> Option<Duration> {
        watch::lock(&self.shared).staleness()
    }

    /// Wall-clock time the source was last known to be in sync (now, while it is).
    pub fn last_sync(&self) -> Option<SystemTime> {
        let s = watch::lock(&self.shared);
        if s.in_sync {
            return Some(SystemTime::now());
        }
        s.last_in_sync.map(|(_, at)| at)
    }

    /// The last table this source applied, and its generation.
    pub fn applied(&self) -> Option<(TableSpec, u64)> {
        let s = watch::lock(&self.shared);
        Some((s.applied.clone()?, s.applied_generation?))
    }

    /// Why the table in force is not what the cluster says right now (no ready stable endpoints,
    /// several matching Rollouts, a rejected table), if anything.
    pub fn problem(&self) -> Option<String> {
        watch::lock(&self.shared).last_problem.clone()
    }

    /// Stops the watches; the table in force stays.
    pub fn stop(self) {}

    /// A source on a new config (a reload), on the same client and metrics; this one stops when
    /// dropped. The table in force serves until the new source has listed.
    pub fn restart(&self, cfg: KubeSourceConfig) -> Result<KubeHandle, String> {
        launch(
            self.client.clone(),
            cfg,
            self.plane.clone(),
            self.gauges.clone(),
        )
    }
}

impl Drop for KubeHandle {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The staleness gauges, registered on the data plane's registry.
#[derive(Clone, Default)]
pub(crate) struct Gauges {
    staleness: Gauge<f64, AtomicU64>,
    last_sync: Gauge<f64, AtomicU64>,
}

impl Gauges {
    fn register(plane: &DataPlane) -> Self {
        let g = Gauges::default();
        plane.metrics.register(|registry| {
            registry.register(
                "kube_sync_staleness_seconds",
                "Seconds since the Kubernetes source was last in sync with the API server (0 while it is; since start before the first sync)",
                g.staleness.clone(),
            );
            registry.register(
                "kube_last_sync_timestamp_seconds",
                "Unix time the Kubernetes source was last in sync with the API server (0 = never)",
                g.last_sync.clone(),
            );
        });
        g
    }

    fn update(&self, s: &watch::SyncState) {
        let staleness = s.staleness().unwrap_or_else(|| s.started.elapsed());
        self.staleness.set(staleness.as_secs_f64());
        let last = if s.in_sync {
            Some(SystemTime::now())
        } else {
            s.last_in_sync.map(|(_, at)| at)
        };
        let unix = last
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        self.last_sync.set(unix);
    }
}

/// Starts the source with the cluster's client configuration (in-cluster service account, or
/// `KUBECONFIG` / `~/.kube/config`). Must be called inside a tokio runtime.
pub async fn start(cfg: KubeSourceConfig, plane: Arc<DataPlane>) -> Result<KubeHandle, String> {
    cfg.validate()?;
    let client = kube::Client::try_default()
        .await
        .map_err(|e| format!("kube: cannot configure a client: {e}"))?;
    start_with_client(client, cfg, plane)
}

/// Starts the source with a given client (tests point it at a fake API server).
pub fn start_with_client(
    client: kube::Client,
    cfg: KubeSourceConfig,
    plane: Arc<DataPlane>,
) -> Result<KubeHandle, String> {
    cfg.validate()?;
    let gauges = Gauges::register(&plane);
    launch(client, cfg, plane, gauges)
}

fn launch(
    client: kube::Client,
    cfg: KubeSourceConfig,
    plane: Arc<DataPlane>,
    gauges: Gauges,
) -> Result<KubeHandle, String> {
    cfg.validate()?;
    let shared: watch::Shared = Arc::new(std::sync::Mutex::new(watch::SyncState::new()));
    gauges.update(&watch::lock(&shared));
    let (tx, rx) = mpsc::channel(256);
    let mut tasks = watch::spawn_watches(client.clone(), &cfg, tx);
    let statuses = match &cfg.weights {
        WeightSource::HttpRoutes(source) => {
            let (status_tx, status_rx) = tokio::sync::watch::channel(Default::default());
            let writer = status_writer::StatusConfig {
                namespace: cfg.namespace.clone(),
                controller: source.controller_name.clone(),
                lease_name: source.lease_name.clone(),
                lease_duration: source.lease_duration,
                identity: status_writer::identity(),
                routes: httproute::api_resource(source.version),
                gateways: httproute::gateway_api_resource(source.version),
                source: source.clone(),
            };
            tasks.push(tokio::spawn(status_writer::run(
                client.clone(),
                writer,
                status_rx,
            )));
            Some(status_tx)
        }
        _ => None,
    };
    let reconciler = watch::Reconciler::new(cfg, plane.clone(), shared.clone(), statuses);
    tasks.push(tokio::spawn(reconciler.run(rx, gauges.clone())));
    Ok(KubeHandle {
        shared,
        tasks,
        client,
        gauges,
        plane,
    })
}
