//! weir-proxy: the data plane. It knows routes, backends and weights — nothing about rollouts.
//! The control plane drives it only through `DataPlane::apply` (a new `TableSpec`, compiled and
//! swapped whole) and reads it through the live windows.

pub mod access_log;
pub mod admin;
mod authority;
mod buffer;
mod deadline;
pub mod field;
pub mod forward;
mod framing;
mod graceful;
pub mod h1;
mod h2link;
pub mod h2wire;
pub mod identity;
pub mod interim;
pub mod listen;
pub mod pipeline;
pub mod plane;
pub mod problems;
pub mod rfc3339;
pub mod sni;
pub mod stats;
mod stock;
pub mod table;
pub mod table_spec;
pub mod upstream;
pub mod worker;

pub use plane::DataPlane;
/// Empties the per-thread stocks of request buffers and busy connections' futures, before a
/// trim of the heap.
pub use stock::release as release_stocks;
