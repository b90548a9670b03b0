//! HTTP/2 client connections on weir's own engine (`h2wire::server::ServerConn`): one task per
//! connection owns the socket and the engine, and polls its streams in place.
//!
//! Why not a task per stream (hyper's HTTP/2 server): it moves each request's future into a
//! task of its own (callgrind on h2c → HTTP/1: its stream spawns were 6.5 % of weir's
//! instructions per request, benches/README.md). Why not the h2 crate's server: header maps
//! built and checked per message, frame queues and locks per stream (weir's engine is about a
//! fifth of its instructions for the same exchanges, benches/README).
//!
//! The parts: `conn` the connection's future (reads, writes, events, drain); `io` the socket
//! buffers; `timers` keepalive PING, PONG timeout, idle GOAWAY, the preface's deadline;
//! `request` a request head made into an `http::Request`; `stream` one stream's future, its
//! request through the pipeline and its response written under the client's windows;
//! `response` a response head and trailers made into fields; `state` and `link` the state the
//! connection shares with its streams and request bodies. Request bodies are
//! `h2link::H2RequestBody`, outside `listen` so that `upstream::Received` can name them.

mod conn;
mod events;
mod link;
mod request;
mod response;
mod state;
mod stream;
#[cfg(test)]
mod tests;
mod timers;

use std::time::Duration;

use super::spec::LimitsSpec;
use crate::h2wire::server::Config;

pub use conn::H2Connection;
pub use stream::serve;

/// Streams a client may open at once (SETTINGS_MAX_CONCURRENT_STREAMS; hyper's default too).
const MAX_CONCURRENT_STREAMS: u32 = 200;
/// Each stream's receive window, and the connection's: a 1 MiB upload is not held up by
/// WINDOW_UPDATE round trips.
const WINDOW: u32 = 1024 * 1024;

/// Stream and flow-control settings of client connections, and their timers.
#[derive(Clone, Copy, Debug)]
pub struct H2Settings {
    pub(super) config: Config,
    pub(super) head_timeout: Duration,
    pub(super) keepalive: Duration,
    pub(super) idle_timeout: Duration,
}

impl H2Settings {
    pub fn new(limits: &LimitsSpec) -> Self {
        let config = Config {
            max_concurrent_streams: MAX_CONCURRENT_STREAMS,
            stream_window: WINDOW,
            connection_window: WINDOW,
            max_header_list_size: u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX),
            ..Config::default()
        };
        H2Settings {
            config,
            head_timeout: limits.header_read_timeout,
            keepalive: (limits.idle_timeout / 2).max(Duration::from_millis(10)),
            idle_timeout: limits.idle_timeout,
        }
    }
}
