//! The send side of a window: what the peer still lets this side send (RFC 9113 §6.9).

use super::{allowance, clamp, FlowError, MAX_WINDOW};

/// What this side may still send on a stream or on the connection.
///
/// A stream's starts at the peer's SETTINGS_INITIAL_WINDOW_SIZE (65,535 until its SETTINGS say
/// otherwise); the connection's at 65,535 always, since SETTINGS never move it: only
/// WINDOW_UPDATE on stream 0 does (§6.9.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWindow {
    /// Negative after the peer lowered SETTINGS_INITIAL_WINDOW_SIZE below what was in flight
    /// (§6.9.2); never above [`MAX_WINDOW`].
    window: i64,
}

impl SendWindow {
    /// A window of `initial` octets (clamped to 2^31−1: the frame parser refuses a larger
    /// SETTINGS_INITIAL_WINDOW_SIZE, §6.5.2).
    pub fn new(initial: u32) -> SendWindow {
        SendWindow {
            window: clamp(initial),
        }
    }

    /// The octets of DATA (payload with padding) that may be sent now: 0 while the window is
    /// negative or empty.
    pub fn available(&self) -> u32 {
        allowance(self.window)
    }

    /// The window itself, negative when the peer lowered it below what was already sent.
    pub fn window(&self) -> i64 {
        self.window
    }

    /// Counts `n` octets of DATA sent. Sending more than [`available`](Self::available) is a
    /// bug in the caller (debug builds assert); release builds count it anyway, which leaves
    /// the window negative and so stops further sending until the peer's updates cover it.
    pub fn take(&mut self, n: u32) {
        debug_assert!(
            n <= self.available(),
            "sending {n} octets on a window of {}",
            self.window
        );
        self.window = self.window.saturating_sub(i64::from(n));
    }

    /// Applies a WINDOW_UPDATE's increment (1..=2^31−1, as `frame::parse_window_update` gives
    /// it). A window above 2^31−1 is a FLOW_CONTROL_ERROR (§6.9.1): for a stream's window the
    /// caller resets that stream (RST_STREAM), for the connection's it sends GOAWAY. The window
    /// is left as it was.
    pub fn grow(&mut self, increment: u32) -> Result<(), FlowError> {
        let grown = self.window.saturating_add(i64::from(increment));
        if grown > i64::from(MAX_WINDOW) {
            return Err(FlowError {
                why: "WINDOW_UPDATE takes the send window above 2^31-1",
            });
        }
        self.window = grown;
        Ok(())
    }

    /// Applies a change of the peer's SETTINGS_INITIAL_WINDOW_SIZE, `delta` = new − old, to a
    /// stream's window (§6.9.2) — never to the connection's. The window may become negative:
    /// the peer took back room this side had already used, and nothing is sent until its
    /// WINDOW_UPDATEs bring the window above 0. A window above 2^31−1 is a connection
    /// FLOW_CONTROL_ERROR, whichever stream it happens on (§6.9.2); the window is left as it was.
    pub fn adjust(&mut self, delta: i64) -> Result<(), FlowError> {
        match self.window.checked_add(delta) {
            Some(w) if w <= i64::from(MAX_WINDOW) => {
                self.window = w;
                Ok(())
            }
            _ => Err(FlowError {
                why: "SETTINGS_INITIAL_WINDOW_SIZE takes a stream's send window above 2^31-1",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::DEFAULT_WINDOW;
    use super::*;

    const MAX: i64 = MAX_WINDOW as i64;

    #[test]
    fn take_counts_down_to_zero() {
        let mut w = SendWindow::new(DEFAULT_WINDOW);
        assert_eq!(w.available(), 65_535);
        w.take(65_000);
        assert_eq!(w.available(), 535);
        w.take(535);
        assert_eq!((w.available(), w.window()), (0, 0));
        w.take(0);
        assert_eq!(w.window(), 0);
    }

    #[test]
    fn grow_up_to_exactly_2_31_minus_1_is_allowed() {
        let mut w = SendWindow::new(DEFAULT_WINDOW);
        assert_eq!(w.grow(MAX_WINDOW - 65_535), Ok(()));
        assert_eq!((w.window(), w.available()), (MAX, MAX_WINDOW));
        let mut w = SendWindow::new(0);
        assert_eq!(w.grow(MAX_WINDOW), Ok(()));
        assert_eq!(w.available(), MAX_WINDOW);
    }

    #[test]
    fn grow_past_2_31_minus_1_is_refused_and_changes_nothing() {
        let mut w = SendWindow::new(DEFAULT_WINDOW);
        let e = w.grow(MAX_WINDOW - 65_534).unwrap_err();
        assert_eq!(e.code(), FlowError::CODE);
        assert_eq!(w.window(), 65_535);
        let mut w = SendWindow::new(MAX_WINDOW);
        assert!(w.grow(1).is_err());
        assert!(w.grow(MAX_WINDOW).is_err());
        assert_eq!(w.window(), MAX);
    }

    #[test]
    fn new_clamps_to_the_largest_window() {
        assert_eq!(SendWindow::new(u32::MAX).window(), MAX);
    }

    #[test]
    fn settings_decrease_makes_the_window_negative_until_updates_cover_it() {
        // 60,000 of 65,535 sent, then the peer lowers its initial window to 16,384.
        let mut w = SendWindow::new(DEFAULT_WINDOW);
        w.take(60_000);
        assert_eq!(w.adjust(16_384 - 65_535), Ok(()));
        assert_eq!(w.window(), 5_535 - 49_151);
        assert_eq!(w.available(), 0);
        // An update smaller than the debt leaves nothing to send.
        assert_eq!(w.grow(40_000), Ok(()));
        assert_eq!((w.window(), w.available()), (-3_616, 0));
        assert_eq!(w.grow(3_616), Ok(()));
        assert_eq!(w.available(), 0);
        assert_eq!(w.grow(100), Ok(()));
        assert_eq!(w.available(), 100);
    }

    #[test]
    fn settings_increase_adds_to_a_used_window() {
        let mut w = SendWindow::new(DEFAULT_WINDOW);
        w.take(65_535);
        assert_eq!(w.adjust(1_048_576 - 65_535), Ok(()));
        assert_eq!(w.available(), 1_048_576 - 65_535);
    }

    #[test]
    fn settings_change_past_2_31_minus_1_is_refused_and_changes_nothing() {
        let mut w = SendWindow::new(DEFAULT_WINDOW);
        assert_eq!(w.grow(1_000), Ok(()));
        // Initial window 65,535 -> 2^31-1: this stream had 1,000 more than the initial window.
        let e = w.adjust(MAX - 65_535).unwrap_err();
        assert_eq!(e.code(), FlowError::CODE);
        assert_eq!(w.window(), 66_535);
        // The same change on a stream at exactly the initial window is allowed.
        let mut w = SendWindow::new(DEFAULT_WINDOW);
        assert_eq!(w.adjust(MAX - 65_535), Ok(()));
        assert_eq!(w.window(), MAX);
    }

    #[test]
    fn extreme_deltas_neither_overflow_nor_pass() {
        let mut w = SendWindow::new(MAX_WINDOW);
        assert!(w.adjust(i64::MAX).is_err());
        assert_eq!(w.adjust(i64::MIN + MAX + 1), Ok(()));
        assert_eq!(w.window(), i64::MIN + 2 * MAX + 1);
        assert!(w.adjust(i64::MIN).is_err());
        assert_eq!(w.available(), 0);
    }
}
