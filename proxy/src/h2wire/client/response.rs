//! A response head received (§8.1, §8.3.2): interim (1xx, consumed) or final, held to §8 and
//! its length to come noted (§8.1.1).

use super::super::conn::Step;
use super::super::frame::ErrorCode;
use super::super::message::{Malformed, ResponseHead};
use super::super::stream::Recv;
use super::events::{Event, Fields};
use super::ClientConn;

impl ClientConn {
    /// A response head, final or interim (1xx, consumed here: weir does not forward them).
    pub(super) fn response_head(
        &mut self,
        id: u32,
        end_stream: bool,
        checked: Result<ResponseHead, Malformed>,
        fields: Fields,
        events: &mut Vec<Event>,
    ) -> Step {
        let Some(slot) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        let interim = matches!(checked, Ok(head) if head.status < 200);
        let moved = match interim {
            true => slot.stream.recv_informational(end_stream),
            false => slot.stream.recv_headers(end_stream),
        };
        match moved {
            Ok(Recv::Process) => {}
            Ok(Recv::Ignore) => return Ok(()),
            Err(refused) => return self.refused(refused, events),
        }
        let head = match checked {
            Ok(head) => head,
            // §8.1.1: a malformed response is a stream error PROTOCOL_ERROR.
            Err(malformed) => {
                return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, malformed.reason(), events)
            }
        };
        if interim {
            return Ok(());
        }
        // §8.1.1: a response with no content by definition (to HEAD, 204, 304; RFC 9110
        // §6.4.1) carries none, whatever its content-length says.
        let no_content = slot.head_request || matches!(head.status, 204 | 304);
        slot.expected = if no_content {
            Some(0)
        } else {
            head.content_length
        };
        if end_stream && !slot.complete() {
            let why = "a response ended before its content-length (§8.1.1)";
            return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, why, events);
        }
        events.push(Event::Response {
            id,
            status: head.status,
            fields,
            end_stream,
        });
        if end_stream {
            self.forget_if_closed(id);
        }
        Ok(())
    }
}
