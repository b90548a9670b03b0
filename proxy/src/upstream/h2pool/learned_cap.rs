//! A server's cap on streams a connection, learnt from how it ends connections: pure.
//!
//! nginx ends each HTTP/2 connection after `keepalive_requests` streams (1,000 by default) with
//! one GOAWAY, refusing the streams a client had already sent past it. Packed onto few
//! connections, a busy pool has up to a connection's stream limit in flight past the cap each
//! time: every one of them refused, and sent again a round trip later. A server that ended two
//! connections in a row at the same count, refusing streams each time, has such a cap: the
//! pool retires its connections at that count from then on, and the server refuses nothing.
//! Two in a row, so that a restart's GOAWAY (at whatever count each connection had reached) is
//! not taken for a cap.

/// Caps below this are not learnt: a server that ends connections after a handful of streams
/// is failing, not configured, and retiring connections that early would only churn them.
const SMALLEST: u32 = 10;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LearnedCap {
    /// The count the last connection ended at, refusing streams.
    last: Option<u32>,
    cap: Option<u32>,
}

impl LearnedCap {
    /// A connection the server ended with GOAWAY after `processed` streams, refusing some
    /// sent past them. Returns the cap when this learnt a new one.
    pub fn ended_at(&mut self, processed: u32) -> Option<u32> {
        let repeated = self.last == Some(processed);
        self.last = Some(processed);
        if repeated && processed >= SMALLEST && self.cap != Some(processed) {
            self.cap = Some(processed);
            return self.cap;
        }
        None
    }

    /// Streams a connection carries before it is retired, by what was learnt.
    pub fn cap(&self) -> Option<u32> {
        self.cap
    }
}

/// Streams a server processed on a connection whose GOAWAY names `last_stream`: a client's
/// streams are odd, from 1, and weir opens them in order (RFC 9113 §5.1.1).
pub fn processed(last_stream: u32) -> u32 {
    last_stream.div_ceil(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_connections_ended_at_the_same_count_make_a_cap() {
        let mut learned = LearnedCap::default();
        assert_eq!(learned.ended_at(1000), None, "one is not a pattern");
        assert_eq!(learned.cap(), None);
        assert_eq!(learned.ended_at(1000), Some(1000));
        assert_eq!(learned.cap(), Some(1000));
        assert_eq!(learned.ended_at(1000), None, "nothing new");
    }

    #[test]
    fn ends_at_different_counts_change_nothing_and_a_new_repeated_count_replaces_the_cap() {
        let mut learned = LearnedCap::default();
        for count in [37, 512, 37 + 1, 999] {
            assert_eq!(learned.ended_at(count), None);
        }
        assert_eq!(learned.cap(), None, "a restart's ends are not a cap");
        learned.ended_at(1000);
        learned.ended_at(1000);
        // A restart while the cap holds leaves it; the server's cap lowered is learnt again.
        assert_eq!(learned.ended_at(412), None);
        assert_eq!(learned.cap(), Some(1000));
        assert_eq!(learned.ended_at(500), None);
        assert_eq!(learned.ended_at(500), Some(500));
    }

    #[test]
    fn a_tiny_count_is_not_learnt() {
        let mut learned = LearnedCap::default();
        learned.ended_at(3);
        assert_eq!(learned.ended_at(3), None);
        assert_eq!(learned.cap(), None);
    }

    #[test]
    fn the_count_processed_is_read_from_the_last_stream_id() {
        assert_eq!(processed(0), 0);
        assert_eq!(processed(1), 1);
        assert_eq!(processed(1999), 1000);
    }
}
