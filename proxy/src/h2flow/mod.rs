//! HTTP/2 streams as the h2 crate gives them, made into bodies: a body read from a stream with
//! its flow-control window given back as it is read (`Received`), and a body written to a
//! stream never faster than the peer's window (`Pump`). weir's HTTP/2 upstream pool
//! (`upstream::h2pool`) uses them; the client connections weir serves run on its own engine
//! (`listen::h2`). A leaf: it knows nothing of routes or pools.

mod body;
mod pump;

pub use body::{content_length, H2Body};
pub use pump::Pump;
