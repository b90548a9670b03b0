//! What the unit tests of the frame modules share.

use std::fmt::Debug;

use super::error::{ErrorCode, FrameError, Scope};
use super::head::{Head, Kind};

pub(super) const CONN_PROTOCOL: (Scope, ErrorCode) = (Scope::Connection, ErrorCode::PROTOCOL_ERROR);
pub(super) const CONN_SIZE: (Scope, ErrorCode) = (Scope::Connection, ErrorCode::FRAME_SIZE_ERROR);

/// The head `payload` would come in with.
pub(super) fn head(kind: Kind, flags: u8, stream: u32, payload: &[u8]) -> Head {
    let len = u32::try_from(payload.len()).unwrap();
    Head {
        len,
        kind,
        flags,
        stream,
    }
}

/// The scope and code a parse was refused with; fails the test if it was not refused.
pub(super) fn refusal<T: Debug>(result: Result<T, FrameError>) -> (Scope, ErrorCode) {
    let e = result.unwrap_err();
    (e.scope, e.code)
}
