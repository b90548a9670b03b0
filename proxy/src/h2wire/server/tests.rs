//! Frame-level tests: a hand-driven client's frames fed to `receive`, the server's output
//! parsed back into frames; and an exchange with the h2 crate's client over a real socket.

mod handshake;
mod hostile;
mod interop;
mod owner;
mod peer;
mod requests;
