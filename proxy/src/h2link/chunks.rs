//! The DATA a stream received and its reader has not taken yet, in order: a queue that holds
//! its first chunk in place.
//!
//! Why not a `VecDeque` alone: most messages are one DATA frame (a gRPC unary call's request
//! and response), and a queue that allocates on its first push cost each of them an allocation
//! on each leg. A stream whose reader falls behind queues the rest as before.

use std::collections::VecDeque;

use bytes::Bytes;

#[derive(Debug, Default)]
pub struct Chunks {
    /// The oldest chunk; None only when `rest` is empty too.
    first: Option<Bytes>,
    rest: VecDeque<Bytes>,
    /// A chunk was pushed, ever.
    began: bool,
}

impl Chunks {
    /// No chunk was ever pushed: the next is the stream's first DATA.
    pub fn is_unbegun(&self) -> bool {
        !self.began
    }

    pub fn push_back(&mut self, chunk: Bytes) {
        self.began = true;
        if self.first.is_none() {
            self.first = Some(chunk);
        } else {
            self.rest.push_back(chunk);
        }
    }

    pub fn pop_front(&mut self) -> Option<Bytes> {
        let first = self.first.take();
        self.first = self.rest.pop_front();
        first
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Exactly one chunk is held.
    pub fn is_single(&self) -> bool {
        self.first.is_some() && self.rest.is_empty()
    }

    /// Empties the queue; returns the octets it held.
    pub fn clear(&mut self) -> usize {
        let held = self.first.take().map_or(0, |c| c.len());
        held + self.rest.drain(..).map(|c| c.len()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_come_out_in_order_and_the_first_takes_no_allocation() {
        let mut chunks = Chunks::default();
        assert!(chunks.is_empty());
        assert!(chunks.is_unbegun());
        assert_eq!(chunks.pop_front(), None);
        chunks.push_back(Bytes::from_static(b"a"));
        assert!(!chunks.is_unbegun());
        assert!(!chunks.is_empty());
        assert!(chunks.is_single());
        assert_eq!(chunks.rest.capacity(), 0, "one chunk is held in place");
        chunks.push_back(Bytes::from_static(b"bc"));
        assert!(!chunks.is_single());
        chunks.push_back(Bytes::from_static(b"def"));
        assert_eq!(chunks.pop_front().as_deref(), Some(&b"a"[..]));
        chunks.push_back(Bytes::from_static(b"g"));
        let order: Vec<Bytes> = std::iter::from_fn(|| chunks.pop_front()).collect();
        assert_eq!(order, [&b"bc"[..], b"def", b"g"]);
        assert!(chunks.is_empty());
        assert!(!chunks.is_unbegun(), "emptied, but begun");
    }

    #[test]
    fn clear_counts_what_was_held() {
        let mut chunks = Chunks::default();
        assert_eq!(chunks.clear(), 0);
        for c in [&b"ab"[..], b"cde", b"f"] {
            chunks.push_back(Bytes::copy_from_slice(c));
        }
        assert_eq!(chunks.clear(), 6);
        assert!(chunks.is_empty());
        assert_eq!(chunks.pop_front(), None);
    }
}
