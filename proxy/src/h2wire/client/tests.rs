//! Frame-level tests: a hand-driven server's frames fed to `receive`, the client's output
//! parsed back into frames; and an exchange with the h2 crate's server over a real socket.

mod driver;
mod flow;
mod h2server;
mod handshake;
mod interop;
mod malformed;
mod peer;
mod requests;
mod response;
