//! The HTTP/2 wire format, without I/O: HPACK (RFC 7541), frames (RFC 9113 §4–6), flow-control
//! windows (§5.2, §6.9), stream states and identifiers (§5.1), the rules on messages' fields
//! (§8), and one connection made of them (`conn`) with its client and server roles (`client`,
//! `server`).
//!
//! Both of weir's HTTP/2 legs run on it: client connections (`listen::h2`) and the upstream
//! pool (`upstream::h2pool`). They ran on the h2 crate before, whose two connections were about
//! 40 % of weir's instructions per HTTP/2 → HTTP/2 request (benches/README, session 17): header
//! maps built and checked per message, HPACK with Huffman coding on every string, frame
//! queues. These modules are the parts of a frame-level engine, as `h1` is for HTTP/1: pure
//! functions over byte slices, each held to the RFC's rules and tested against its vectors, so
//! that the connection code above them only moves bytes and keeps state.

pub mod client;
pub mod common;
mod conn;
pub mod flow;
pub mod frame;
pub mod hpack;
pub mod message;
pub mod server;
pub mod stream;

/// The connection both sides are, for code generic over the side (`h2link::chunk`).
pub use conn::{Conn, Role};
