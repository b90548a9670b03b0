//! What handling a frame comes to: on a connection error, the error (§5.4.1), not yet sent.

use super::super::common::ConnError;
use super::super::frame::{ErrorCode, FrameError};

/// What handling one frame came to: `Err` is a connection error, not yet sent.
pub type Step = Result<(), ConnError>;

/// A connection error of `code`.
pub fn conn(code: ErrorCode, why: &'static str) -> ConnError {
    ConnError { code, why }
}

/// A frame parser's refusal of connection scope.
pub fn conn_of(e: FrameError) -> ConnError {
    conn(e.code, e.why)
}

/// A bound of §10.5 passed.
pub fn calm(why: &'static str) -> ConnError {
    conn(ErrorCode::ENHANCE_YOUR_CALM, why)
}
