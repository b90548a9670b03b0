//! Analysis: Argo's AnalysisTemplate semantics — providers take measurements, conditions judge
//! them, limits turn judgements into a verdict.

mod args;
pub mod judge;
mod metric;
pub mod provider;
pub mod run;
pub mod verdict;

pub use args::resolve;
pub use provider::{measure, ProviderContext, Reading, ResolvedProvider};
pub use run::{AnalysisRun, MeasurementStatus, MetricStatus, RunStatus};
pub use verdict::Phase;
