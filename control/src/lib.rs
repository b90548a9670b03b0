//! weir-control: the control plane — config model, sources, Argo manifests, analysis, rollouts.

pub mod analysis;
pub mod argo;
pub mod config;
/// The condition language of AnalysisTemplates: parsed when manifests load (argo), evaluated
/// on measurements (analysis).
pub mod expr;
pub mod inject;
pub mod owner;
pub mod rollout;
pub mod source;
