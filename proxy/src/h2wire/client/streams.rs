//! The streams a client connection has open: each one's state, windows and response length.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::super::flow::{RecvWindow, SendWindow};
use super::super::stream::{State, Stream};
use super::ClientConn;

/// A stream this side opened and has not yet seen closed (§5.1). Closed streams are removed:
/// what later frames on them get is decided from the identifier alone (`receive`).
pub(super) struct Slot {
    pub stream: Stream,
    /// What this side may still send (§6.9).
    pub send: SendWindow,
    /// What the server may still send.
    pub recv: RecvWindow,
    /// What the DATA must add up to once the final head came: its Content-Length, or 0 for a
    /// response with no content by definition (§8.1.1). None while unknown.
    pub expected: Option<u64>,
    /// Octets of DATA received (without padding).
    pub received: u64,
    /// The request is a HEAD: its response has no content, whatever it says (RFC 9110 §9.3.2).
    pub head_request: bool,
}

impl Slot {
    pub fn new(stream: Stream, send: u32, recv: u32, head_request: bool) -> Slot {
        Slot {
            stream,
            send: SendWindow::new(send),
            recv: RecvWindow::new(recv),
            expected: None,
            received: 0,
            head_request,
        }
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.stream.state(), State::Closed(_))
    }

    /// Counts `n` octets of DATA; false when they take the response past its length.
    pub fn count(&mut self, n: usize) -> bool {
        self.received = self.received.saturating_add(n as u64);
        self.expected.is_none_or(|len| self.received <= len)
    }

    /// At END_STREAM: whether the DATA added up to the length (§8.1.1).
    pub fn complete(&self) -> bool {
        self.expected.is_none_or(|len| self.received == len)
    }
}

/// The open streams by identifier.
///
/// A hash map rather than a Vec: identifiers grow for the connection's whole life and streams
/// end out of order, so a Vec indexed by identifier would grow without bound and a sorted one
/// would shift its tail on every close. The hash is a multiplication, not SipHash: this side
/// chooses every key (its own identifiers), so there is no flooding to defend against, and
/// the map is looked up on every DATA frame.
pub(super) type Streams = HashMap<u32, Slot, BuildHasherDefault<IdHasher>>;

/// Fibonacci hashing of a stream identifier: one multiplication that spreads consecutive odd
/// numbers over the high bits the table's control bytes use.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u32` is called for `u32` keys; any other input is folded in the same way.
        for &b in bytes {
            self.write_u32(u32::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl ClientConn {
    /// Forgets stream `id` once both sides ended it (§5.1 "closed").
    pub(super) fn forget_if_closed(&mut self, id: u32) {
        if self.streams.get(&id).is_some_and(Slot::is_closed) {
            self.forget(id);
        }
    }

    /// Forgets stream `id`: it no longer counts against the server's limit (§5.1.2).
    pub(super) fn forget(&mut self, id: u32) {
        if self.streams.remove(&id).is_some() {
            self.concurrency.close_local();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn the_length_is_checked_as_data_comes_and_at_the_end() {
        let mut slot = Slot::new(Stream::local(1), 10, 10, false);
        assert!(slot.count(1_000) && slot.complete(), "unknown length");
        let mut slot = Slot::new(Stream::local(1), 10, 10, false);
        slot.expected = Some(5);
        assert!(slot.count(3));
        assert!(!slot.complete());
        assert!(slot.count(2));
        assert!(slot.complete());
        assert!(!slot.count(1));
    }

    #[test]
    fn identifiers_hash_apart_and_the_map_finds_them() {
        let build = BuildHasherDefault::<IdHasher>::default();
        let (a, b) = (build.hash_one(1u32), build.hash_one(3u32));
        assert_ne!(a >> 57, b >> 57, "the top 7 bits differ");
        let mut streams = Streams::default();
        for id in (1..2_000).step_by(2) {
            streams.insert(id, Slot::new(Stream::local(id), 1, 1, false));
        }
        assert!(streams.get(&1_999).is_some_and(|s| s.stream.id() == 1_999));
        assert!(!streams.contains_key(&2));
    }
}
