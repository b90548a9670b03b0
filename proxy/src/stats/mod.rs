//! Recording outcomes: Prometheus metrics for scrapers, live windows for the analysis loop.
//!
//! Both are resolved per route×backend when a table is compiled (`table::Compiler`), so the data
//! path records through pre-resolved handles: no label hashing, no lock.

pub mod differences;
mod exposition;
mod histogram;
mod latency;
mod live;
mod metrics;
mod outcome;
pub mod pairs;

pub use exposition::{content_type, negotiate, to_classic, Format};
pub use histogram::AtomicHistogram;
pub use latency::{LatencyDistribution, LatencyThreshold};
pub use live::{now_second, LiveStats, LiveWindow, SecondCounts, WindowSnapshot, WINDOW_SECS};
pub use metrics::{BackendMetrics, Metrics, PoolMetrics};
pub use outcome::{
    grpc_fault_in, grpc_status_in_trailers, grpc_status_is_fault, Outcome, Role, UpstreamError,
    GRPC_STATUS,
};
