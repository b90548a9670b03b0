//! weir-control: the control plane — config model, sources, reconcile.

pub mod config;
pub mod source;
