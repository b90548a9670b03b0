//! weir-control: the control plane — config model, sources, Argo manifests, analysis, rollouts.

pub mod analysis;
pub mod argo;
pub mod config;
/// The condition language of AnalysisTemplates: parsed when manifests load (argo), evaluated
/// on measurements (analysis).
pub mod expr;
pub mod history;
pub mod inject;
/// Where a field path is in YAML text: the line numbers of config and manifest errors.
mod locate;
pub mod notify;
pub mod owner;
pub mod rollout;
pub mod source;
