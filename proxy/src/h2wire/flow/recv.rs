//! The receive side of a window: what the peer may still send, and when to give it more
//! (RFC 9113 §6.9).

use super::{allowance, clamp, FlowError, DEFAULT_WINDOW};

/// What the peer may still send on a stream or on the connection, and the WINDOW_UPDATEs that
/// give back what the application has consumed.
///
/// Three amounts always add up to the target: the window the peer sees, the octets received
/// and not yet released by the application, and the octets released but not yet announced.
/// Releases are announced in one WINDOW_UPDATE once they reach half the target: the peer is
/// never left stalled on a window that is mostly free on this side, and a stream of small
/// frames does not cost a WINDOW_UPDATE each.
///
/// For the connection's window the engine must count every DATA frame it receives, including
/// those on streams it has reset or refused, or no longer knows, and release them at once when
/// it drops them: the peer counts them against the connection window (§6.9, §5.1 "closed"),
/// and a connection window that forgot them would shrink for good.
///
/// A stream whose peer has ended it (END_STREAM received) needs no more updates: the engine may
/// skip what [`release`](Self::release) returns there (§6.9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWindow {
    /// What this side has advertised as the window: the initial one for a stream, or the one
    /// chosen for the connection.
    target: i64,
    /// What the peer may still send, as the peer counts it once it has every WINDOW_UPDATE sent.
    /// Negative after this side lowered SETTINGS_INITIAL_WINDOW_SIZE (§6.9.2).
    window: i64,
    /// Released by the application, not yet announced.
    unannounced: i64,
}

impl RecvWindow {
    /// A stream's window: the peer starts it at this side's SETTINGS_INITIAL_WINDOW_SIZE, as it
    /// stands when the stream opens (see [`set_target`](Self::set_target) while a change is in
    /// flight). Clamped to 2^31−1.
    pub fn new(target: u32) -> RecvWindow {
        let target = clamp(target);
        RecvWindow {
            target,
            window: target,
            unannounced: 0,
        }
    }

    /// The connection's window, with the WINDOW_UPDATE (on stream 0) that takes it from the
    /// 65,535 every connection starts with to `target`, if `target` is larger. SETTINGS cannot
    /// set it (§6.9.2); nor can a window be taken back once announced, so a `target` below
    /// 65,535 is raised to it.
    pub fn connection(target: u32) -> (RecvWindow, Option<u32>) {
        let initial = i64::from(DEFAULT_WINDOW);
        let target = clamp(target).max(initial);
        let window = RecvWindow {
            target,
            window: target,
            unannounced: 0,
        };
        let update = u32::try_from(target - initial).ok().filter(|&n| n > 0);
        (window, update)
    }

    /// What the peer may still send: 0 while the window is used up or negative.
    pub fn available(&self) -> u32 {
        allowance(self.window)
    }

    /// The window this side advertises.
    pub fn target(&self) -> u32 {
        allowance(self.target)
    }

    /// Counts a DATA frame's flow-controlled length (the whole payload, padding included:
    /// `frame::Data::flow_len`, or `head.len` for a frame refused or dropped). More than the
    /// window allows is a FLOW_CONTROL_ERROR (§6.9.1): the caller resets the stream for a
    /// stream's window, sends GOAWAY for the connection's. The window is left as it was.
    pub fn receive(&mut self, n: u32) -> Result<(), FlowError> {
        let n = i64::from(n);
        if n > self.window {
            return Err(FlowError {
                why: "DATA beyond the receive window",
            });
        }
        self.window -= n;
        Ok(())
    }

    /// The application consumed `n` received octets (or the engine dropped them). Returns the
    /// increment for a WINDOW_UPDATE when what has been released and not announced reaches
    /// half the target (at least 1 octet), and counts it as announced; `None` otherwise.
    ///
    /// Releasing more than was received is a bug in the caller (debug builds assert); release
    /// builds release only what was received, so an update never takes the peer's window
    /// above the target.
    pub fn release(&mut self, n: u32) -> Option<u32> {
        let held = self.target - self.window - self.unannounced;
        debug_assert!(
            i64::from(n) <= held,
            "releasing {n} octets of {held} received"
        );
        self.unannounced += i64::from(n).min(held.max(0));
        self.announce()
    }

    /// Applies a change of this side's SETTINGS_INITIAL_WINDOW_SIZE to a stream's window. The
    /// peer moves its window for the stream by new − old when it applies the SETTINGS (§6.9.2),
    /// so this does the same: a decrease may leave the window negative, and the peer then sends
    /// nothing more on the stream until enough is released. Not for the connection's window,
    /// which SETTINGS do not move.
    ///
    /// When: an increase as the SETTINGS frame is sent; a decrease when its ACK is received.
    /// Until the peer has applied the new value it may count either one, so this side must
    /// accept the larger meanwhile (§6.9.3: a sender may exceed a lowered window before it
    /// processes the SETTINGS). Streams opened in between start at the value applied here.
    ///
    /// Returns the WINDOW_UPDATE to send now, if the released amount not yet announced has
    /// reached half the new target: after a decrease nothing else might prompt it.
    pub fn set_target(&mut self, target: u32) -> Option<u32> {
        let target = clamp(target);
        self.window += target - self.target;
        self.target = target;
        self.announce()
    }

    /// What has been released and not yet announced, as an update if it is due.
    fn announce(&mut self) -> Option<u32> {
        if self.unannounced == 0 || self.unannounced < self.target / 2 {
            return None;
        }
        let increment = u32::try_from(self.unannounced).ok()?;
        self.window += self.unannounced;
        self.unannounced = 0;
        Some(increment)
    }
}

#[cfg(test)]
mod tests;
