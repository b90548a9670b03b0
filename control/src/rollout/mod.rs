//! The standalone rollout engine: Argo's canary and blue-green steps, driven by weir itself.
//!
//! `machine` decides (pure), `driver` acts (clocks, analyses, the data plane, the state file),
//! `compose` turns a rollout's traffic into the table the data plane serves.

mod analysis;
pub mod applier;
pub mod compose;
pub mod driver;
pub mod events;
pub mod machine;
mod metrics;
pub mod persist;
pub mod plan;
pub mod secrets;
pub mod setup;
pub mod state;
pub mod status;

pub use applier::Applier;
pub use driver::{start, AbortRamp, RolloutHandle, RolloutSettings};
pub use machine::Command;
pub use plan::Plan;
pub use state::{Phase, RolloutState};
pub use status::RolloutStatus;
