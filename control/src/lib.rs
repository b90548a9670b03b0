//! weir-control: the control plane — config model, sources, Argo manifests, analysis, rollouts.

pub mod analysis;
pub mod argo;
pub mod config;
pub mod inject;
pub mod rollout;
pub mod source;
