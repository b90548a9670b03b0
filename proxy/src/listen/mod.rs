//! Client-facing listeners: accept, optional TLS, HTTP/1.1 and HTTP/2 on the same port, limits,
//! graceful shutdown.

mod balance;
mod drain;
mod h2;
mod limit;
mod park;
mod server;
pub mod spec;
mod tls;
// Redirects and rewrites end to end: here, as the listener's test, since `forward` may not
// import `listen` (which imports it).
#[cfg(test)]
mod backend_edits_tests;
#[cfg(test)]
mod url_tests;

pub use limit::ConnectionLimit;
pub use server::{bind, serve, Shutdown};
pub use tls::{server_config, ReloadableTls};
