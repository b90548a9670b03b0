//! The connection driver against the h2 crate's client over real sockets on 127.0.0.1:
//! exchanges and bodies both ways, resets, flow control, drain and the clocks.

mod backpressure;
mod bodies;
mod coalescing;
mod harness;
mod lifecycle;
mod resets;
