//! Field blocks received: HEADERS and CONTINUATION joined (RFC 9113 §4.3, §6.10) and decoded
//! always (HPACK state is the connection's), for the side to take as a head or trailers
//! (`Role::section`); and trailers, alike on both sides.

use super::super::common::Fields;
use super::super::frame::{parse_continuation, parse_headers, ErrorCode, Head};
use super::super::hpack;
use super::super::message::{Malformed, TrailerCheck};
use super::super::stream::Recv;
use super::block::{Decoded, HeadCheck, Pending, Section, Target};
use super::error::{conn, conn_of, Step};
use super::role::{Role, Shared};
use super::Conn;

impl<R: Role> Conn<R> {
    pub(crate) fn headers(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<R::Event>,
    ) -> Step {
        let frame = parse_headers(head, payload).map_err(conn_of)?;
        let id = head.stream;
        if frame.fragment.is_empty() && !frame.end_headers {
            // §10.5: a HEADERS that starts a block with nothing in it.
            self.empty_frame()?;
        }
        let block = Pending {
            stream: id,
            target: R::target(self, id)?,
            end_stream: frame.end_stream,
            stream_error: frame.stream_error.map(|e| (e.code, e.why)),
        };
        if frame.end_headers {
            // The usual case, one frame: decoded where it lies, not copied.
            return self.field_block(block, frame.fragment, events);
        }
        self.block.clear();
        self.collect(frame.fragment)?;
        self.pending = Some(block);
        Ok(())
    }

    pub(crate) fn continuation(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<R::Event>,
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
        if frame.fragment.is_empty() && !frame.end_headers {
            // §10.5: the CONTINUATION flood that adds no octet, which `collect` cannot see.
            self.empty_frame()?;
        }
        self.collect(frame.fragment)?;
        if !frame.end_headers {
            return Ok(());
        }
        self.pending = None;
        let block = std::mem::take(&mut self.block);
        let done = self.field_block(pending, &block, events);
        // The buffer is kept for the next block.
        self.block = block;
        done
    }

    /// Adds a fragment to the block being collected, within `Limits::max_header_block`.
    fn collect(&mut self, fragment: &[u8]) -> Step {
        if self.block.len().saturating_add(fragment.len()) > self.limits.max_header_block {
            // §10.5: a block this side will not hold; it cannot be skipped either (§4.3).
            let why = "a field block larger than this side collects (§10.5)";
            return Err(conn(ErrorCode::ENHANCE_YOUR_CALM, why));
        }
        self.block.extend_from_slice(fragment);
        Ok(())
    }

    /// A whole field block: decoded to its end whatever it says (§4.3), then handed to the
    /// side (`Role::section`).
    fn field_block(&mut self, info: Pending, block: &[u8], events: &mut Vec<R::Event>) -> Step {
        let mut section = match info.target {
            Target::Head => Section::Head(R::head_check(self)),
            Target::Trailers => Section::Trailers(TrailerCheck::new()),
            Target::Drop => Section::Drop,
        };
        let mut fields = match info.target {
            Target::Drop => Fields::default(),
            target => Fields::in_arena(&mut self.arena, self.sizes.room(target, block.len())),
        };
        let limit = self.limits.max_header_list_size as usize;
        // Refusals are latched by the checks and read at `finish`: the block is decoded to
        // its end whatever the fields say (§4.3).
        let decoded = self
            .decoder
            .decode(block, limit, |field| match &mut section {
                Section::Head(check) => {
                    check.check(field);
                    if !field.name.starts_with(b":") {
                        fields.push(field);
                    }
                }
                Section::Trailers(check) => {
                    let _ = check.decoded(field);
                    fields.push(field);
                }
                Section::Drop => {}
            });
        let too_large = match decoded {
            Ok(()) => false,
            // §4.3: the two dynamic tables can no longer be trusted to agree.
            Err(e) if e.ends_connection() => {
                return Err(conn(ErrorCode::COMPRESSION_ERROR, hpack_why(&e)))
            }
            Err(_) => true,
        };
        self.sizes.remember(info.target, fields.size());
        if info.target != Target::Drop {
            self.arena = fields.rest_of_arena();
        }
        let decoded = Decoded {
            section,
            fields,
            too_large,
        };
        R::section(self, info, decoded, events)
    }

    /// A message's trailers, which must end the peer's side of the stream (§8.1).
    pub(crate) fn trailers(
        &mut self,
        id: u32,
        end_stream: bool,
        checked: Result<(), Malformed>,
        fields: Fields,
        events: &mut Vec<R::Event>,
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
            return self.reset_stream(id, ErrorCode::PROTOCOL_ERROR, malformed.reason(), events);
        }
        if !complete {
            return self.reset_stream(id, ErrorCode::PROTOCOL_ERROR, R::LENGTH_MISMATCH, events);
        }
        events.push(Shared::Trailers { id, fields }.into());
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
