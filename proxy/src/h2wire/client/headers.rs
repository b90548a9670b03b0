//! Field blocks received: HEADERS and CONTINUATION joined (RFC 9113 §4.3, §6.10), decoded
//! always (HPACK state is the connection's), and held to §8 as a response head or trailers.

use super::super::frame::{parse_continuation, parse_headers, ErrorCode, Head};
use super::super::hpack;
use super::super::message::{Malformed, ResponseCheck, ResponseHead, TrailerCheck};
use super::super::stream::Recv;
use super::events::{Event, Fields};
use super::receive::{conn, conn_of, Step};
use super::ClientConn;

/// A HEADERS frame without END_HEADERS: its fragment is in `ClientConn::block`, its
/// CONTINUATIONs are to come.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    stream: u32,
    end_stream: bool,
    /// A stream error the HEADERS frame carried (§5.3.1), for once the block is decoded.
    stream_error: Option<(ErrorCode, &'static str)>,
}

/// What a decoded block is for.
enum Section {
    Head(ResponseCheck),
    Trailers(TrailerCheck),
    /// A stream no longer tracked: decoded for HPACK's sake and dropped (§5.1 "closed").
    Drop,
}

impl ClientConn {
    pub(super) fn headers(&mut self, head: &Head, payload: &[u8], events: &mut Vec<Event>) -> Step {
        let frame = parse_headers(head, payload).map_err(conn_of)?;
        let id = head.stream;
        if !self.streams.contains_key(&id) {
            // §5.1 "idle": a server opens streams only by PUSH_PROMISE, which this side
            // refuses, and cannot open one of this side's. A closed one's block is still
            // decoded below (§4.3).
            self.untracked(id, "HEADERS on a stream this side has not opened (§5.1)")?;
        }
        let stream_error = frame.stream_error.map(|e| (e.code, e.why));
        if frame.end_headers {
            // The usual case, one frame: decoded where it lies, not copied.
            return self.field_block(id, frame.end_stream, stream_error, frame.fragment, events);
        }
        self.block.clear();
        self.collect(frame.fragment)?;
        self.pending = Some(Pending {
            stream: id,
            end_stream: frame.end_stream,
            stream_error,
        });
        Ok(())
    }

    pub(super) fn continuation(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<Event>,
    ) -> Step {
        let frame = parse_continuation(head, payload).map_err(conn_of)?;
        let Some(pending) = self.pending else {
            let why = "CONTINUATION without a HEADERS frame before it (§6.10)";
            return Err(conn(ErrorCode::PROTOCOL_ERROR, why));
        };
        if pending.stream != head.stream {
            let why = "CONTINUATION on another stream than its HEADERS (§6.10)";
            return Err(conn(ErrorCode::PROTOCOL_ERROR, why));
        }
        self.collect(frame.fragment)?;
        if !frame.end_headers {
            return Ok(());
        }
        self.pending = None;
        let block = std::mem::take(&mut self.block);
        let done = self.field_block(
            pending.stream,
            pending.end_stream,
            pending.stream_error,
            &block,
            events,
        );
        // The buffer is kept for the next block.
        self.block = block;
        done
    }

    /// Adds a fragment to the block being collected, within `Config::max_header_block`.
    fn collect(&mut self, fragment: &[u8]) -> Step {
        if self.block.len().saturating_add(fragment.len()) > self.config.max_header_block {
            // §10.5: a block this side will not hold; it cannot be skipped either (§4.3).
            let why = "a field block larger than this side collects (§10.5)";
            return Err(conn(ErrorCode::ENHANCE_YOUR_CALM, why));
        }
        self.block.extend_from_slice(fragment);
        Ok(())
    }

    /// A whole field block on stream `id`: decoded, then taken as the response's head, an
    /// interim head, or its trailers.
    fn field_block(
        &mut self,
        id: u32,
        end_stream: bool,
        stream_error: Option<(ErrorCode, &'static str)>,
        block: &[u8],
        events: &mut Vec<Event>,
    ) -> Step {
        let mut section = match self.streams.get(&id) {
            None => Section::Drop,
            Some(slot) if slot.stream.recv_half().has_head() => {
                Section::Trailers(TrailerCheck::new())
            }
            Some(_) => Section::Head(ResponseCheck::new()),
        };
        let mut fields = Fields::with_capacity(match section {
            Section::Drop => 0,
            _ => block.len(),
        });
        let limit = self.config.max_header_list_size as usize;
        // Refusals are latched by the checks and read at `finish`: the block is decoded to
        // its end whatever the fields say (§4.3).
        let decoded = self
            .decoder
            .decode(block, limit, |field| match &mut section {
                Section::Head(check) => {
                    let _ = check.field(field.name, field.value);
                    if !field.name.starts_with(b":") {
                        fields.push(field);
                    }
                }
                Section::Trailers(check) => {
                    let _ = check.field(field.name, field.value);
                    fields.push(field);
                }
                Section::Drop => {}
            });
        match decoded {
            Ok(()) => {}
            // §4.3: the two dynamic tables can no longer be trusted to agree.
            Err(e) if e.ends_connection() => {
                return Err(conn(ErrorCode::COMPRESSION_ERROR, hpack_why(&e)))
            }
            // Above this side's SETTINGS_MAX_HEADER_LIST_SIZE, decoded to its end: a client
            // may discard a response it cannot process (§10.5.1).
            Err(_) => {
                let why = "response header list above SETTINGS_MAX_HEADER_LIST_SIZE (§10.5.1)";
                return self.stream_error(id, ErrorCode::CANCEL, why, events);
            }
        }
        if let Some((code, why)) = stream_error {
            // Nothing for a stream no longer tracked (`stream_error`).
            return self.stream_error(id, code, why, events);
        }
        match section {
            Section::Head(check) => self.head(id, end_stream, check.finish(), fields, events),
            Section::Trailers(check) => {
                self.trailers(id, end_stream, check.finish(), fields, events)
            }
            Section::Drop => Ok(()),
        }
    }

    /// A response head, final or interim (1xx, consumed here: weir does not forward them).
    fn head(
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

    /// A response's trailers, which must end the stream (§8.1).
    fn trailers(
        &mut self,
        id: u32,
        end_stream: bool,
        checked: Result<(), Malformed>,
        fields: Fields,
        events: &mut Vec<Event>,
    ) -> Step {
        let Some(slot) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        match slot.stream.recv_headers(end_stream) {
            Ok(Recv::Process) => {}
            Ok(Recv::Ignore) => return Ok(()),
            Err(refused) => return self.refused(refused, events),
        }
        let complete = slot.complete();
        if let Err(malformed) = checked {
            return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, malformed.reason(), events);
        }
        if !complete {
            let why = "DATA lengths do not add up to the response's content-length (§8.1.1)";
            return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, why, events);
        }
        events.push(Event::Trailers { id, fields });
        self.forget_if_closed(id);
        Ok(())
    }
}

/// The rule an HPACK error names.
fn hpack_why(e: &hpack::Error) -> &'static str {
    match e {
        hpack::Error::Truncated(_) => "a field block ends inside a representation (RFC 7541)",
        hpack::Error::Compression(why) => why,
        hpack::Error::ListTooLarge { .. } => "a header list above the limit",
    }
}
