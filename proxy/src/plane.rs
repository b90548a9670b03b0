//! The data plane as one value: what the control plane holds to drive it.

use std::sync::Arc;

use crate::access_log::{AccessLog, Counters};
use crate::pipeline::Proxy;
use crate::sni::CertificateStore;
use crate::stats::{LiveStats, Metrics};
use crate::table::{Compiler, TableErrors, TableHandle};
use crate::table_spec::TableSpec;
use crate::upstream::Upstreams;

pub struct DataPlane {
    pub table: Arc<TableHandle>,
    pub metrics: Arc<Metrics>,
    pub live: Arc<LiveStats>,
    pub proxy: Arc<Proxy>,
    /// One line per request, when configured (`access_log:`).
    pub access_log: Arc<AccessLog>,
    /// The certificates of listeners that take them from the control plane (`ListenerTls::Installed`).
    pub certificates: Arc<CertificateStore>,
    compiler: Compiler,
}

impl DataPlane {
    /// A data plane for one worker (tests, tools): see `for_workers`.
    pub fn new() -> Arc<Self> {
        Self::for_workers(1)
    }

    /// A data plane served by `workers` worker threads, each with its own upstream
    /// connections (`crate::worker`).
    pub fn for_workers(workers: usize) -> Arc<Self> {
        let metrics = Arc::new(Metrics::new());
        let live = Arc::new(LiveStats::new());
        let table = Arc::new(TableHandle::new(metrics.clone()));
        let compiler = Compiler {
            upstreams: Arc::new(Upstreams::new(metrics.clone(), workers)),
            metrics: metrics.clone(),
            live: live.clone(),
        };
        let counters = Counters::default();
        metrics.register(|registry| {
            registry.register(
                "access_log_lines",
                "Access-log lines written",
                counters.lines.clone(),
            );
            registry.register(
                "access_log_dropped",
                "Access-log lines dropped: the writer could not keep up, or a write failed",
                counters.dropped.clone(),
            );
        });
        let access_log = Arc::new(AccessLog::new(counters));
        Arc::new(DataPlane {
            proxy: Arc::new(Proxy::new(
                table.clone(),
                access_log.clone(),
                metrics.clone(),
            )),
            access_log,
            table,
            metrics,
            live,
            certificates: Arc::new(CertificateStore::default()),
            compiler,
        })
    }

    /// Compiles and validates `spec`; only a table without errors is swapped in. Returns the
    /// new generation. On error the table in force keeps serving.
    pub fn apply(&self, spec: &TableSpec) -> Result<u64, TableErrors> {
        let table = self.compiler.compile(spec)?;
        Ok(self.table.swap(table))
    }

    /// Background upkeep of the data plane; runs until dropped. Today: closing idle upstream
    /// connections past their pool idle timeout.
    pub async fn housekeeping(self: Arc<Self>) {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
        loop {
            tick.tick().await;
            let evicted = self.compiler.upstreams.evict_idle();
            if evicted > 0 {
                tracing::debug!(evicted, "closed idle upstream connections");
            }
        }
    }

    /// Checks a spec without swapping anything (for `weir check`).
    pub fn validate(&self, spec: &TableSpec) -> Result<(), TableErrors> {
        self.compiler.compile(spec).map(|_| ())
    }
}
