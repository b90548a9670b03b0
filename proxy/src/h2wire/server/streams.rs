//! The streams a server connection has open: each one's state, windows and request length.

use std::collections::HashMap;

use super::super::flow::{RecvWindow, SendWindow};
use super::super::stream::{Half, State, Stream};
use super::ServerConn;

/// A stream the client opened and that is not yet closed (§5.1).
pub(super) struct Slot {
    pub stream: Stream,
    pub send: SendWindow,
    pub recv: RecvWindow,
    /// The request's Content-Length, which its DATA must add up to (§8.1.1).
    pub expected: Option<u64>,
    /// Octets of DATA received (without padding).
    pub received: u64,
}

impl Slot {
    pub fn new(stream: Stream, send: u32, recv: u32, expected: Option<u64>) -> Slot {
        Slot {
            stream,
            send: SendWindow::new(send),
            recv: RecvWindow::new(recv),
            expected,
            received: 0,
        }
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.stream.state(), State::Closed(_))
    }

    /// Counts `n` octets of DATA; false when they take the request past its length.
    pub fn count(&mut self, n: usize) -> bool {
        self.received = self.received.saturating_add(n as u64);
        self.expected.is_none_or(|len| self.received <= len)
    }

    /// At END_STREAM: whether the DATA added up to the length (§8.1.1).
    pub fn complete(&self) -> bool {
        self.expected.is_none_or(|len| self.received == len)
    }
}

/// The open streams by identifier. The standard (SipHash) map rather than the client's
/// multiplicative hash: here the client chooses the keys, and at most
/// MAX_CONCURRENT_STREAMS of them at once.
pub(super) type Streams = HashMap<u32, Slot>;

impl ServerConn {
    /// Forgets stream `id` once both sides ended it (§5.1 "closed").
    pub(super) fn forget_if_closed(&mut self, id: u32) {
        if self.streams.get(&id).is_some_and(Slot::is_closed) {
            self.forget(id);
        }
    }

    /// Forgets stream `id`: it no longer counts against this side's limit (§5.1.2). A
    /// response completed gives one back to the Rapid Reset budget.
    pub(super) fn forget(&mut self, id: u32) {
        if let Some(slot) = self.streams.remove(&id) {
            self.concurrency.close_remote();
            // Called for streams closed by END_STREAM both ways: the response is complete.
            if slot.stream.send_half() == Half::Ended {
                self.reset_budget = (self.reset_budget + 1).min(self.config.reset_budget);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_is_checked_as_data_comes_and_at_the_end() {
        let mut slot = Slot::new(Stream::remote(1), 10, 10, None);
        assert!(slot.count(1_000) && slot.complete(), "unknown length");
        let mut slot = Slot::new(Stream::remote(1), 10, 10, Some(5));
        assert!(slot.count(3) && !slot.complete());
        assert!(slot.count(2) && slot.complete());
        assert!(!slot.count(1));
    }
}
