//! This side's SETTINGS (RFC 9113 §6.5.2) and the limits the connection holds the client to.

use super::super::flow::MAX_WINDOW;
use super::super::frame::{
    DEFAULT_MAX_FRAME_SIZE, MAX_ALLOWED_FRAME_SIZE, SETTINGS_ENABLE_CONNECT_PROTOCOL,
    SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_MAX_FRAME_SIZE,
    SETTINGS_MAX_HEADER_LIST_SIZE,
};

/// What a server connection advertises and accepts. The defaults are those weir's server on
/// the h2 crate had (`listen::h2` sets its own from the listener's limits). Values out of their protocol range are taken to the nearest
/// allowed one ([`Config::checked`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams the client may have open at once; beyond it a
    /// stream is refused with REFUSED_STREAM (§5.1.2).
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: what the client may send on each stream before this side
    /// releases any of it.
    pub stream_window: u32,
    /// The connection's receive window, set by a WINDOW_UPDATE on stream 0 right after the
    /// SETTINGS (§6.9.2). Not below 65,535.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload the client may send.
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest request or trailer section, decoded. A larger
    /// one is decoded and its stream refused (`Event::Reset`).
    pub max_header_list_size: u32,
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 (RFC 8441): `:protocol` is accepted on CONNECT.
    pub enable_connect_protocol: bool,
    /// The largest field block, as received, collected before decoding; past it the
    /// connection ends with ENHANCE_YOUR_CALM (§10.5), as in the client.
    pub max_header_block: usize,
    /// Streams this side may reset for the client's errors over the connection's life; one
    /// more ends it with ENHANCE_YOUR_CALM. Bounds "MadeYouReset": a client that makes the
    /// server reset streams (malformed requests, flow control) to open more than
    /// MAX_CONCURRENT_STREAMS streams' worth of work. Every RST_STREAM this side sends for the
    /// client's doing counts: malformed requests, flow control, content-length, 431, and
    /// streams refused (past MAX_CONCURRENT_STREAMS, or after this side's GOAWAY); the
    /// owner's own `reset`s do not.
    pub max_local_resets: u32,
    /// The budget of streams the client may reset before their response is complete (Rapid
    /// Reset, CVE-2023-44487): each such reset takes one, each response completed gives one
    /// back up to this; a reset with none left ends the connection with ENHANCE_YOUR_CALM.
    pub reset_budget: u32,
    /// Octets of unwritten output past which a frame that calls for an answer (PING, SETTINGS,
    /// a stream to reset, ...) ends the connection with ENHANCE_YOUR_CALM (§10.5). DATA is
    /// queued only below half of it, so that a client reading slowly is not mistaken for one
    /// not reading at all.
    pub max_queued_output: usize,
    /// Empty frames that carry nothing and end nothing: DATA without END_STREAM, HEADERS or
    /// CONTINUATION with an empty fragment and without END_HEADERS. One more ends the
    /// connection with ENHANCE_YOUR_CALM: each costs a wake-up and nothing bounds them else.
    pub max_empty_frames: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_concurrent_streams: 200,
            stream_window: 1 << 20,
            connection_window: 1 << 20,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_header_list_size: 64 << 10,
            enable_connect_protocol: false,
            max_header_block: 128 << 10,
            // As the h2 crate's server was given (MAX_LOCAL_ERROR_RESETS).
            max_local_resets: 1024,
            // Twice MAX_CONCURRENT_STREAMS: a browser that drops a whole page's streams twice
            // over before any completes is still served; a loop of open-and-reset is not.
            reset_budget: 400,
            max_queued_output: 1 << 20,
            max_empty_frames: 1024,
        }
    }
}

impl Config {
    /// The same values, each within its protocol range (as the client's `Config::checked`).
    pub fn checked(self) -> Config {
        Config {
            stream_window: self.stream_window.min(MAX_WINDOW),
            connection_window: self.connection_window.clamp(65_535, MAX_WINDOW),
            max_frame_size: self
                .max_frame_size
                .clamp(DEFAULT_MAX_FRAME_SIZE, MAX_ALLOWED_FRAME_SIZE),
            max_header_block: self.max_header_block.max(DEFAULT_MAX_FRAME_SIZE as usize),
            // Room for at least a few control frames beyond DATA's half.
            max_queued_output: self.max_queued_output.max(64 << 10),
            ..self
        }
    }

    /// The SETTINGS frame's entries; MAX_FRAME_SIZE only when not the default, and
    /// ENABLE_CONNECT_PROTOCOL only when on (RFC 8441 §3: 0 is the default).
    pub(super) fn settings(&self) -> Vec<(u16, u32)> {
        let mut values = vec![
            (SETTINGS_MAX_CONCURRENT_STREAMS, self.max_concurrent_streams),
            (SETTINGS_INITIAL_WINDOW_SIZE, self.stream_window),
        ];
        if self.max_frame_size != DEFAULT_MAX_FRAME_SIZE {
            values.push((SETTINGS_MAX_FRAME_SIZE, self.max_frame_size));
        }
        values.push((SETTINGS_MAX_HEADER_LIST_SIZE, self.max_header_list_size));
        if self.enable_connect_protocol {
            values.push((SETTINGS_ENABLE_CONNECT_PROTOCOL, 1));
        }
        values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_carry_the_limits_and_connect_only_when_on() {
        let values = Config::default().settings();
        assert_eq!(
            values,
            [
                (SETTINGS_MAX_CONCURRENT_STREAMS, 200),
                (SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20),
                (SETTINGS_MAX_HEADER_LIST_SIZE, 64 << 10),
            ]
        );
        let on = Config {
            enable_connect_protocol: true,
            ..Config::default()
        };
        assert!(on
            .settings()
            .contains(&(SETTINGS_ENABLE_CONNECT_PROTOCOL, 1)));
        assert_eq!(Config::default().checked(), Config::default());
        let wild = Config {
            connection_window: 1,
            max_frame_size: u32::MAX,
            ..Config::default()
        }
        .checked();
        assert_eq!(wild.connection_window, 65_535);
        assert_eq!(wild.max_frame_size, MAX_ALLOWED_FRAME_SIZE);
    }
}
