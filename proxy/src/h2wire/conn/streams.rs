//! The streams a connection tracks: each one's state, windows and message length; and how one
//! is forgotten.

use std::collections::HashMap;
use std::hash::Hasher;

use super::super::flow::{RecvWindow, SendWindow};
use super::super::stream::{Half, Role as Side, State, Stream};
use super::role::Role;
use super::Conn;

/// A stream open and not yet seen closed (§5.1). Closed streams are removed: what later frames
/// on them get is decided from the identifier alone (`receive`).
pub struct Slot {
    pub stream: Stream,
    /// What this side may still send (§6.9).
    pub send: SendWindow,
    /// What the peer may still send.
    pub recv: RecvWindow,
    /// What the peer's DATA must add up to: its Content-Length, or 0 for a response with no
    /// content by definition (§8.1.1). None while unknown.
    pub expected: Option<u64>,
    /// Octets of DATA received (without padding).
    pub received: u64,
    /// A client's request is a HEAD: its response has no content, whatever it says (RFC 9110
    /// §9.3.2). Always false on a server.
    pub head_request: bool,
}

impl Slot {
    pub fn new(stream: Stream, send: u32, recv: u32) -> Slot {
        Slot {
            stream,
            send: SendWindow::new(send),
            recv: RecvWindow::new(recv),
            expected: None,
            received: 0,
            head_request: false,
        }
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.stream.state(), State::Closed(_))
    }

    /// Counts `n` octets of DATA; false when they take the message past its length.
    pub fn count(&mut self, n: usize) -> bool {
        self.received = self.received.saturating_add(n as u64);
        self.expected.is_none_or(|len| self.received <= len)
    }

    /// At END_STREAM: whether the DATA added up to the length (§8.1.1).
    pub fn complete(&self) -> bool {
        self.expected.is_none_or(|len| self.received == len)
    }
}

/// The open streams by identifier, hashed by `S` (`Role::Hasher`).
///
/// A hash map rather than a Vec: identifiers grow for the connection's whole life and streams
/// end out of order, so a Vec indexed by identifier would grow without bound and a sorted one
/// would shift its tail on every close.
pub type Streams<S> = HashMap<u32, Slot, S>;

/// Fibonacci hashing of a stream identifier: one multiplication that spreads consecutive odd
/// numbers over the high bits the table's control bytes use. The map is looked up on every
/// frame. Both sides use it: a client chooses every key (its own identifiers), and a server's
/// map holds at most its MAX_CONCURRENT_STREAMS, so a client that picks identifiers to
/// collide makes a lookup scan that many at worst — bounded, where flooding needs a map
/// that grows.
#[derive(Default)]
pub struct IdHasher(u64);

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

impl<R: Role> Conn<R> {
    /// Forgets stream `id` once both sides ended it (§5.1 "closed").
    pub(crate) fn forget_if_closed(&mut self, id: u32) {
        if self.streams.get(&id).is_some_and(Slot::is_closed) {
            self.forget(id);
        }
    }

    /// Forgets stream `id`, closed: it no longer counts against the limit (§5.1.2), and the
    /// side learns whether its message was complete (`Role::forgot`).
    pub(crate) fn forget(&mut self, id: u32) {
        if let Some(slot) = self.remove(id) {
            R::forgot(self, slot.stream.send_half() == Half::Ended);
        }
    }

    /// Takes stream `id` out of the map and of the concurrency count, whatever ended it.
    pub(crate) fn remove(&mut self, id: u32) -> Option<Slot> {
        let slot = self.streams.remove(&id)?;
        self.count_closed();
        Some(slot)
    }

    /// One stream less against the limit that counts this side's streams.
    pub(crate) fn count_closed(&mut self) {
        match R::SIDE {
            Side::Client => self.concurrency.close_local(),
            Side::Server => self.concurrency.close_remote(),
        }
    }
}

/// The hasher `Streams` uses with `IdHasher`.
pub type IdHash = std::hash::BuildHasherDefault<IdHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn the_length_is_checked_as_data_comes_and_at_the_end() {
        let mut slot = Slot::new(Stream::local(1), 10, 10);
        assert!(slot.count(1_000) && slot.complete(), "unknown length");
        let mut slot = Slot::new(Stream::local(1), 10, 10);
        slot.expected = Some(5);
        assert!(slot.count(3));
        assert!(!slot.complete());
        assert!(slot.count(2));
        assert!(slot.complete());
        assert!(!slot.count(1));
    }

    #[test]
    fn a_remote_stream_counts_its_length_alike() {
        let mut slot = Slot::new(Stream::remote(1), 10, 10);
        assert!(slot.count(1_000) && slot.complete(), "unknown length");
        let mut slot = Slot::new(Stream::remote(1), 10, 10);
        slot.expected = Some(5);
        assert!(slot.count(3) && !slot.complete());
        assert!(slot.count(2) && slot.complete());
        assert!(!slot.count(1));
    }

    #[test]
    fn identifiers_hash_apart_and_the_map_finds_them() {
        let build = IdHash::default();
        let (a, b) = (build.hash_one(1u32), build.hash_one(3u32));
        assert_ne!(a >> 57, b >> 57, "the top 7 bits differ");
        let mut streams = Streams::<IdHash>::default();
        for id in (1..2_000).step_by(2) {
            streams.insert(id, Slot::new(Stream::local(id), 1, 1));
        }
        assert!(streams.get(&1_999).is_some_and(|s| s.stream.id() == 1_999));
        assert!(!streams.contains_key(&2));
    }

    #[test]
    fn identifiers_chosen_to_collide_are_all_found() {
        // A client's worst choice: every identifier the same in its low 20 bits, so each lands
        // on the same first slot. 200 of them (the server's default stream limit) at once.
        let mut streams = Streams::<IdHash>::default();
        let ids: Vec<u32> = (0..200).map(|k| 1 + (k << 20)).collect();
        for &id in &ids {
            streams.insert(id, Slot::new(Stream::remote(id), 1, 1));
        }
        for &id in &ids {
            assert!(streams.get(&id).is_some_and(|s| s.stream.id() == id));
        }
        assert!(!streams.contains_key(&(1 + (200 << 20))));
        for &id in &ids[..100] {
            assert!(streams.remove(&id).is_some());
        }
        assert_eq!(streams.len(), 100);
        assert!(streams.contains_key(&ids[150]));
    }
}
