//! SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 §5.1.2): how many streams each side may have
//! active at once.

use super::super::frame::ErrorCode;
use super::error::Refused;

/// The active streams of one connection, by who opened them, and the limits on each. A stream
/// is active while open or half-closed (`State::is_active`): the engine counts it in when it
/// leaves "idle" and out when it reaches "closed".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Concurrency {
    active_local: u32,
    active_remote: u32,
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS: the streams this side may open.
    peer_max: u32,
    /// This side's SETTINGS_MAX_CONCURRENT_STREAMS: the streams the peer may open.
    local_max: u32,
}

impl Default for Concurrency {
    fn default() -> Concurrency {
        Concurrency::new()
    }
}

impl Concurrency {
    /// No limit either way: SETTINGS_MAX_CONCURRENT_STREAMS starts unlimited (§6.5.2), and
    /// `u32::MAX` streams cannot be active on one connection (ids run out first).
    pub fn new() -> Concurrency {
        Concurrency {
            active_local: 0,
            active_remote: 0,
            peer_max: u32::MAX,
            local_max: u32::MAX,
        }
    }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS. Lowered below the streams already active,
    /// they go on to their end and no new one opens until enough have closed (§5.1.2).
    pub fn set_peer_max(&mut self, max: u32) {
        self.peer_max = max;
    }

    /// This side's SETTINGS_MAX_CONCURRENT_STREAMS, applied when sent (the refusal below is
    /// one the peer may retry, so refusing before it saw the value does no harm).
    pub fn set_local_max(&mut self, max: u32) {
        self.local_max = max;
    }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS (`u32::MAX` until it says).
    pub fn peer_max(&self) -> u32 {
        self.peer_max
    }

    pub fn active_local(&self) -> u32 {
        self.active_local
    }

    pub fn active_remote(&self) -> u32 {
        self.active_remote
    }

    /// Counts a stream this side opens; false, counting nothing, when the peer's limit is
    /// reached: the request waits for a stream to close, or goes to another connection.
    pub fn open_local(&mut self) -> bool {
        if self.active_local >= self.peer_max {
            return false;
        }
        self.active_local += 1;
        true
    }

    /// Counts a stream the peer opened with HEADERS on `id`, or refuses it when this side's
    /// limit is reached. §5.1.2 allows PROTOCOL_ERROR or REFUSED_STREAM, both stream errors;
    /// REFUSED_STREAM tells the client the request was not processed and may be retried
    /// (§8.7), which is right for a client that sent before it saw the limit, or while its
    /// streams were closing. A client that keeps opening streams only to be refused is the
    /// engine's to end (ENHANCE_YOUR_CALM). The refused stream's field block must still be
    /// decoded to keep HPACK in step.
    pub fn open_remote(&mut self, id: u32) -> Result<(), Refused> {
        if self.active_remote >= self.local_max {
            let why = "SETTINGS_MAX_CONCURRENT_STREAMS reached (§5.1.2)";
            return Err(Refused::stream(id, ErrorCode::REFUSED_STREAM, why));
        }
        self.active_remote += 1;
        Ok(())
    }

    /// A stream this side opened has closed.
    pub fn close_local(&mut self) {
        debug_assert!(self.active_local > 0, "closing a local stream never opened");
        self.active_local = self.active_local.saturating_sub(1);
    }

    /// A stream the peer opened has closed.
    pub fn close_remote(&mut self) {
        debug_assert!(
            self.active_remote > 0,
            "closing a remote stream never opened"
        );
        self.active_remote = self.active_remote.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::frame::Scope;
    use super::*;

    #[test]
    fn this_side_opens_up_to_the_peers_limit_then_waits_for_a_close() {
        let mut c = Concurrency::new();
        assert_eq!(c.peer_max(), u32::MAX, "unlimited until the peer says");
        c.set_peer_max(2);
        assert_eq!(c.peer_max(), 2);
        assert!(c.open_local());
        assert!(c.open_local());
        assert!(!c.open_local());
        assert_eq!(c.active_local(), 2);
        c.close_local();
        assert!(c.open_local());
        assert_eq!(c.active_local(), 2);
    }

    #[test]
    fn a_limit_lowered_below_the_active_streams_lets_them_finish() {
        let mut c = Concurrency::new();
        for _ in 0..5 {
            assert!(c.open_local());
        }
        c.set_peer_max(3);
        assert!(!c.open_local());
        c.close_local();
        c.close_local();
        assert!(!c.open_local(), "4 active, then 3: still at the limit");
        c.close_local();
        assert!(c.open_local());
    }

    #[test]
    fn the_peer_is_refused_with_a_stream_refused_stream_above_this_sides_limit() {
        let mut c = Concurrency::new();
        c.set_local_max(1);
        assert_eq!(c.open_remote(1), Ok(()));
        let e = c.open_remote(3).unwrap_err();
        assert_eq!(
            (e.scope, e.code),
            (Scope::Stream(3), ErrorCode::REFUSED_STREAM)
        );
        assert_eq!(c.active_remote(), 1, "a refused stream is not counted");
        c.close_remote();
        assert_eq!(c.open_remote(5), Ok(()));
    }

    #[test]
    fn a_limit_of_zero_refuses_every_stream() {
        let mut c = Concurrency::new();
        c.set_local_max(0);
        c.set_peer_max(0);
        assert!(c.open_remote(1).is_err());
        assert!(!c.open_local());
    }

    #[test]
    fn the_two_sides_are_counted_apart_and_start_unlimited() {
        let mut c = Concurrency::default();
        for id in (1..200).step_by(2) {
            assert_eq!(c.open_remote(id), Ok(()));
        }
        c.set_peer_max(1);
        assert!(c.open_local());
        assert!(!c.open_local());
        assert_eq!((c.active_local(), c.active_remote()), (1, 100));
    }
}
