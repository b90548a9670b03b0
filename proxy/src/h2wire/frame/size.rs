//! The frame size limit (RFC 9113 §4.2): no frame may be longer than the receiver's
//! SETTINGS_MAX_FRAME_SIZE.

use super::error::{ErrorCode, FrameError};
use super::head::{Head, Kind};

/// Refuses a frame longer than `max_frame_size` (the receiver's advertised SETTINGS_MAX_FRAME_SIZE)
/// with FRAME_SIZE_ERROR. §4.2: a connection error for a frame that could alter the state of the
/// whole connection — one carrying a field block (HEADERS, PUSH_PROMISE, CONTINUATION: HPACK state
/// is the connection's), SETTINGS, and anything on stream 0; a stream error otherwise. Unknown
/// types on a stream are stream errors like DATA: the caller resets the stream and skips them.
pub fn check_size(head: &Head, max_frame_size: u32) -> Result<(), FrameError> {
    if head.len <= max_frame_size {
        return Ok(());
    }
    let why = "length is above SETTINGS_MAX_FRAME_SIZE";
    let whole_connection = head.stream == 0
        || matches!(
            head.kind,
            Kind::Settings | Kind::Headers | Kind::PushPromise | Kind::Continuation
        );
    Err(if whole_connection {
        FrameError::connection(head, ErrorCode::FRAME_SIZE_ERROR, why)
    } else {
        FrameError::stream(head, ErrorCode::FRAME_SIZE_ERROR, why)
    })
}

#[cfg(test)]
mod tests {
    use super::super::error::Scope;
    use super::super::head::DEFAULT_MAX_FRAME_SIZE;
    use super::*;

    fn scope_of(kind: Kind, stream: u32, len: u32) -> Option<Scope> {
        let head = Head {
            len,
            kind,
            flags: 0,
            stream,
        };
        check_size(&head, DEFAULT_MAX_FRAME_SIZE).err().map(|e| {
            assert_eq!(e.code, ErrorCode::FRAME_SIZE_ERROR);
            e.scope
        })
    }

    #[test]
    fn the_limit_itself_is_allowed() {
        for kind in [
            Kind::Data,
            Kind::Headers,
            Kind::Settings,
            Kind::Unknown(0x20),
        ] {
            assert_eq!(scope_of(kind, 1, DEFAULT_MAX_FRAME_SIZE), None);
            assert_eq!(scope_of(kind, 0, 0), None);
        }
    }

    #[test]
    fn frames_that_change_connection_state_are_connection_errors() {
        let over = DEFAULT_MAX_FRAME_SIZE + 1;
        for kind in [
            Kind::Headers,
            Kind::PushPromise,
            Kind::Continuation,
            Kind::Settings,
        ] {
            assert_eq!(scope_of(kind, 3, over), Some(Scope::Connection), "{kind}");
        }
        for kind in [
            Kind::Ping,
            Kind::GoAway,
            Kind::WindowUpdate,
            Kind::Data,
            Kind::Unknown(0xf0),
        ] {
            assert_eq!(scope_of(kind, 0, over), Some(Scope::Connection), "{kind}");
        }
    }

    #[test]
    fn other_frames_on_a_stream_are_stream_errors() {
        let over = DEFAULT_MAX_FRAME_SIZE + 1;
        for kind in [
            Kind::Data,
            Kind::Priority,
            Kind::RstStream,
            Kind::WindowUpdate,
            Kind::Unknown(0xa),
        ] {
            assert_eq!(scope_of(kind, 5, over), Some(Scope::Stream(5)), "{kind}");
        }
    }
}
