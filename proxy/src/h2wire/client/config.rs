//! This side's SETTINGS (RFC 9113 §6.5.2) and the limits the connection holds the server to.

use super::super::conn::DEFAULT_HEADER_TABLE_SIZE;
use super::super::flow::MAX_WINDOW;
use super::super::frame::{
    DEFAULT_MAX_FRAME_SIZE, MAX_ALLOWED_FRAME_SIZE, SETTINGS_ENABLE_PUSH,
    SETTINGS_HEADER_TABLE_SIZE, SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE,
    SETTINGS_MAX_HEADER_LIST_SIZE,
};

/// What a client connection advertises and accepts. Values out of their protocol range are
/// taken to the nearest allowed one ([`Config::checked`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// SETTINGS_INITIAL_WINDOW_SIZE: what the server may send on each stream before this side
    /// releases any of it.
    pub stream_window: u32,
    /// The connection's receive window, set by a WINDOW_UPDATE on stream 0 right after the
    /// SETTINGS (SETTINGS cannot move it, §6.9.2). Not below 65,535: a window announced cannot
    /// be taken back.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload the server may send.
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest response or trailer section, decoded (names,
    /// values and 32 octets a field). A larger one is decoded and dropped, its stream reset.
    /// Held from the start, before the server acknowledged it: the setting is advisory
    /// (§6.5.2), and a list past it costs only its stream.
    pub max_header_list_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: the most the server's HPACK encoder may keep for this side's
    /// decoder.
    pub header_table_size: u32,
    /// The largest field block, as received (HEADERS and its CONTINUATIONs joined), this side
    /// collects before decoding. A server past it ends the connection (ENHANCE_YOUR_CALM,
    /// §10.5): the block cannot be skipped without desynchronising HPACK (§4.3), and collecting
    /// it unbounded is the CONTINUATION flood of §10.5.
    pub max_header_block: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            stream_window: 1 << 20,
            connection_window: 1 << 20,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_header_list_size: 64 << 10,
            header_table_size: 4_096,
            // An encoded block is rarely larger than its decoded list (indexing and Huffman
            // coding shrink it); twice the list limit leaves room for plain literals.
            max_header_block: 128 << 10,
        }
    }
}

impl Config {
    /// The same values, each within its protocol range: windows at most 2^31−1 (§6.9.1), the
    /// connection's at least 65,535; the frame size within 16,384..=16,777,215 (§6.5.2); a block
    /// cap of at least one frame.
    pub fn checked(self) -> Config {
        Config {
            stream_window: self.stream_window.min(MAX_WINDOW),
            connection_window: self.connection_window.clamp(65_535, MAX_WINDOW),
            max_frame_size: self
                .max_frame_size
                .clamp(DEFAULT_MAX_FRAME_SIZE, MAX_ALLOWED_FRAME_SIZE),
            max_header_block: self.max_header_block.max(DEFAULT_MAX_FRAME_SIZE as usize),
            ..self
        }
    }

    /// The SETTINGS frame's entries. ENABLE_PUSH = 0 always: weir never accepts server push,
    /// and saying so makes any PUSH_PROMISE a connection error (§6.5.2, §8.4). Values at their
    /// defaults are left out.
    pub(super) fn settings(&self) -> Vec<(u16, u32)> {
        let mut values = vec![(SETTINGS_ENABLE_PUSH, 0)];
        if self.header_table_size != DEFAULT_HEADER_TABLE_SIZE {
            values.push((SETTINGS_HEADER_TABLE_SIZE, self.header_table_size));
        }
        values.push((SETTINGS_INITIAL_WINDOW_SIZE, self.stream_window));
        if self.max_frame_size != DEFAULT_MAX_FRAME_SIZE {
            values.push((SETTINGS_MAX_FRAME_SIZE, self.max_frame_size));
        }
        values.push((SETTINGS_MAX_HEADER_LIST_SIZE, self.max_header_list_size));
        values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_takes_each_value_into_its_range() {
        let wild = Config {
            stream_window: u32::MAX,
            connection_window: 10,
            max_frame_size: 1,
            max_header_list_size: 0,
            header_table_size: 0,
            max_header_block: 0,
        }
        .checked();
        assert_eq!(wild.stream_window, MAX_WINDOW);
        assert_eq!(wild.connection_window, 65_535);
        assert_eq!(wild.max_frame_size, DEFAULT_MAX_FRAME_SIZE);
        assert_eq!(wild.max_header_block, 16_384);
        assert_eq!(Config::default().checked(), Config::default());
    }

    #[test]
    fn settings_refuse_push_and_leave_defaults_out() {
        let values = Config::default().settings();
        assert_eq!(
            values,
            [
                (SETTINGS_ENABLE_PUSH, 0),
                (SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20),
                (SETTINGS_MAX_HEADER_LIST_SIZE, 64 << 10),
            ]
        );
        let other = Config {
            header_table_size: 0,
            max_frame_size: 32_768,
            ..Config::default()
        };
        assert!(other.settings().contains(&(SETTINGS_HEADER_TABLE_SIZE, 0)));
        assert!(other
            .settings()
            .contains(&(SETTINGS_MAX_FRAME_SIZE, 32_768)));
    }
}
