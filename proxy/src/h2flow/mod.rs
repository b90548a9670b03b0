//! HTTP/2 streams as the h2 crate gives them, made into bodies: a body read from a stream with
//! its flow-control window given back as it is read (`Received`), and a body written to a
//! stream never faster than the peer's window (`Pump`). Both legs use them: the client
//! connections weir serves (`listen::h2conn`) and its HTTP/2 upstream pool
//! (`upstream::h2pool`). A leaf: it knows nothing of routes or pools.

mod body;
mod pump;

pub use body::{content_length, H2Body};
pub use pump::Pump;
