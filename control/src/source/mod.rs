//! Where configs come from. Each source hands over freshly loaded `Config`s (or the errors that
//! kept one from loading); the caller decides what to swap in.

pub mod file;
pub mod kube;
