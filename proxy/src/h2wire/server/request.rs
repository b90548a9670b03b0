//! A decoded field block taken as what it is: a new stream's request (§8.1, §8.3.1), opened
//! or refused, or an open stream's trailers.

use super::super::conn::{Decoded, Pending, Section, Slot, Step};
use super::super::frame::ErrorCode;
use super::super::message::{Malformed, RequestCheck, RequestHead};
use super::super::stream::Stream;
use super::events::{Event, Fields};
use super::ServerConn;

/// The status sent for a request whose header list is above MAX_HEADER_LIST_SIZE (RFC 6585
/// §5: 431 Request Header Fields Too Large).
const TOO_LARGE: u16 = 431;

impl ServerConn {
    /// A decoded field block taken as what it is (`Role::section`).
    pub(super) fn section(
        &mut self,
        block: Pending,
        decoded: Decoded<RequestCheck>,
        events: &mut Vec<Event>,
    ) -> Step {
        let (id, end_stream, stream_error) = (block.stream, block.end_stream, block.stream_error);
        let Decoded {
            section,
            fields,
            too_large,
        } = decoded;
        match section {
            Section::Drop => Ok(()),
            Section::Head(check) => {
                let opened = Opened {
                    id,
                    end_stream,
                    stream_error,
                    too_large,
                };
                self.request(opened, check.finish(), fields, events)
            }
            Section::Trailers(check) => {
                if let Some((code, why)) = stream_error {
                    return self.reset_stream(id, code, why, events);
                }
                if too_large {
                    // The request was handed over already: it cannot be completed.
                    let why = "trailer list above SETTINGS_MAX_HEADER_LIST_SIZE (§10.5.1)";
                    return self.reset_stream(id, ErrorCode::CANCEL, why, events);
                }
                self.trailers(id, end_stream, check.finish(), fields, events)
            }
        }
    }

    /// A new stream's request, opened or refused. Refusals come in order of what the client
    /// could have known: this side's GOAWAY (§6.8), a HEADERS frame error (§5.3.1), a
    /// malformed request (§8.1.1), MAX_CONCURRENT_STREAMS (§5.1.2), then the header list.
    fn request(
        &mut self,
        opened: Opened,
        checked: Result<RequestHead, Malformed>,
        fields: Fields,
        events: &mut Vec<Event>,
    ) -> Step {
        let Opened {
            id,
            end_stream,
            stream_error,
            too_large,
        } = opened;
        let open = !end_stream;
        if self.closing.is_some_and(|last| id > last) {
            // §6.8: above the last stream of this side's GOAWAY: not processed, may be retried.
            let why = "a stream opened after this side's GOAWAY (§6.8)";
            return self.refuse(id, open, ErrorCode::REFUSED_STREAM, why, events);
        }
        if let Some((code, why)) = stream_error {
            return self.refuse(id, open, code, why, events);
        }
        let head = match checked {
            // §8.1.1: a content-length with no content to come is malformed too.
            Ok(head) if end_stream && head.content_length.is_some_and(|n| n > 0) => {
                let why = "a request ended before its content-length (§8.1.1)";
                return self.refuse(id, open, ErrorCode::PROTOCOL_ERROR, why, events);
            }
            Ok(head) => head,
            Err(malformed) => {
                let why = malformed.reason();
                return self.refuse(id, open, ErrorCode::PROTOCOL_ERROR, why, events);
            }
        };
        if let Err(refused) = self.concurrency.open_remote(id) {
            return self.refuse(id, open, refused.code, refused.why, events);
        }
        let mut stream = Stream::remote(id);
        if let Err(refused) = stream.recv_headers(end_stream) {
            // A new remote stream takes its HEADERS; should it not, the stream is refused.
            self.concurrency.close_remote();
            return self.refuse(id, open, refused.code, refused.why, events);
        }
        let mut slot = Slot::new(stream, self.peer.initial_window, self.recv_initial());
        slot.expected = head.content_length;
        self.streams.insert(id, slot);
        if too_large {
            return self.too_large(id, open, events);
        }
        events.push(Event::Request {
            id,
            head,
            fields,
            end_stream,
        });
        Ok(())
    }

    /// A request whose header list is above this side's limit, decoded to its end: answered
    /// 431 rather than only reset, so that the client learns the request will not pass
    /// (a reset alone, REFUSED_STREAM in particular, invites the same request again, §8.7);
    /// then, if the client is still sending, RST_STREAM NO_ERROR asks it to stop (§8.1).
    /// Counted as a reset for the client's error either way.
    fn too_large(&mut self, id: u32, open: bool, events: &mut Vec<Event>) -> Step {
        let why = "request header list above SETTINGS_MAX_HEADER_LIST_SIZE (§10.5.1)";
        self.respond(id, TOO_LARGE, [], true);
        // Not `forget`: a refused stream does not refill the Rapid Reset budget.
        self.remove(id);
        if open {
            return self.refuse(id, true, ErrorCode::NO_ERROR, why, events);
        }
        self.count_local_reset()?;
        let code = ErrorCode::NO_ERROR;
        events.push(Event::Reset {
            id,
            code,
            why: Some(why),
        });
        Ok(())
    }
}

/// A new stream's HEADERS, as far as opening it goes.
struct Opened {
    id: u32,
    end_stream: bool,
    stream_error: Option<(ErrorCode, &'static str)>,
    too_large: bool,
}
