//! Flow-control windows (RFC 9113 §5.2, §6.9): what this side may still send ([`SendWindow`])
//! and what the peer may still send to it, with when to say so ([`RecvWindow`]). Plain
//! arithmetic, no I/O: the connection keeps one window of each kind for itself and one of each
//! for every stream, and sends or obeys the WINDOW_UPDATE frames these say.
//!
//! Only DATA is flow-controlled, counted whole: data, Pad Length octet and padding (§6.1, the
//! `flow_len` of `frame::Data`). A DATA frame counts against both its stream's window and the
//! connection's (§6.9), so a sender may send `min(stream, connection)` and takes from both.
//!
//! Windows are kept as `i64`: a send window may go negative after the peer lowers
//! SETTINGS_INITIAL_WINDOW_SIZE (§6.9.2), and no sum of `u32` amounts met here can overflow
//! one. The largest window is 2^31−1 ([`MAX_WINDOW`], §6.9.1).

mod recv;
mod send;

use std::fmt;

use super::frame::ErrorCode;

pub use recv::RecvWindow;
pub use send::SendWindow;

/// The largest a flow-control window may be (§6.9.1): 2^31−1.
pub const MAX_WINDOW: u32 = 0x7fff_ffff;

/// The initial window of the connection and, until SETTINGS_INITIAL_WINDOW_SIZE says otherwise,
/// of every stream (§6.5.2, §6.9.2).
pub const DEFAULT_WINDOW: u32 = 65_535;

/// A flow-control rule broken: always a FLOW_CONTROL_ERROR (§6.9). Whether it ends a stream or
/// the connection depends on the window, which only the caller knows: each method says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowError {
    /// The rule broken, phrased to follow "flow control: ".
    pub why: &'static str,
}

impl FlowError {
    /// The code to send in RST_STREAM or GOAWAY.
    pub const CODE: ErrorCode = ErrorCode::FLOW_CONTROL_ERROR;

    pub fn code(&self) -> ErrorCode {
        FlowError::CODE
    }
}

impl fmt::Display for FlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "flow control: {} ({})", self.why, FlowError::CODE)
    }
}

impl std::error::Error for FlowError {}

/// `n` as a window, clamped to [`MAX_WINDOW`]: the windows this module is given come from
/// SETTINGS values the frame parser already bounds (§6.5.2) or from this side's own choice.
fn clamp(n: u32) -> i64 {
    i64::from(n.min(MAX_WINDOW))
}

/// What a window allows now: 0 when it is negative, never above [`MAX_WINDOW`].
fn allowance(window: i64) -> u32 {
    u32::try_from(window.clamp(0, i64::from(MAX_WINDOW))).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_error_is_a_flow_control_error_and_says_why() {
        let e = FlowError {
            why: "window above 2^31-1",
        };
        assert_eq!(e.code(), ErrorCode::FLOW_CONTROL_ERROR);
        assert_eq!(
            e.to_string(),
            "flow control: window above 2^31-1 (FLOW_CONTROL_ERROR)"
        );
    }

    #[test]
    fn allowance_is_zero_below_zero_and_capped_above() {
        assert_eq!(allowance(-1), 0);
        assert_eq!(allowance(i64::MIN), 0);
        assert_eq!(allowance(0), 0);
        assert_eq!(allowance(7), 7);
        assert_eq!(allowance(i64::from(MAX_WINDOW)), MAX_WINDOW);
        assert_eq!(allowance(i64::MAX), MAX_WINDOW);
        assert_eq!(clamp(u32::MAX), i64::from(MAX_WINDOW));
        assert_eq!(clamp(5), 5);
    }
}
