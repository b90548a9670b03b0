//! Field blocks received: HEADERS and CONTINUATION joined (RFC 9113 §4.3, §6.10), decoded
//! always (HPACK state is the connection's), and held to §8 as a request head or trailers.

use super::super::frame::{parse_continuation, parse_headers, ErrorCode, Head};
use super::super::hpack;
use super::super::message::{RequestCheck, TrailerCheck};
use super::events::{Event, Fields};
use super::receive::{conn, conn_of, Step};
use super::ServerConn;

/// A HEADERS frame without END_HEADERS: its fragment is in `ServerConn::block`, its
/// CONTINUATIONs are to come.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    stream: u32,
    target: Target,
    end_stream: bool,
    stream_error: Option<(ErrorCode, &'static str)>,
}

/// Which stream a field block is for, decided at its HEADERS frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// A new stream: the block is a request's head.
    New,
    /// A stream open: the block is its trailers.
    Open,
    /// A stream this side reset: decoded for HPACK's sake and dropped (§5.1 "closed").
    Drop,
}

/// A block's fields as they are checked.
pub(super) enum Section {
    Request(RequestCheck),
    Trailers(TrailerCheck),
    Drop,
}

/// A block decoded: its fields, their check, and whether the list was too large.
pub(super) struct Decoded {
    pub section: Section,
    pub fields: Fields,
    pub too_large: bool,
}

impl ServerConn {
    pub(super) fn headers(&mut self, head: &Head, payload: &[u8], events: &mut Vec<Event>) -> Step {
        let frame = parse_headers(head, payload).map_err(conn_of)?;
        let id = head.stream;
        if frame.fragment.is_empty() && !frame.end_headers {
            // §10.5: a HEADERS that starts a block with nothing in it.
            self.empty_frame()?;
        }
        let target = self.target(id)?;
        let stream_error = frame.stream_error.map(|e| (e.code, e.why));
        if frame.end_headers {
            return self.field_block(
                id,
                target,
                frame.end_stream,
                stream_error,
                frame.fragment,
                events,
            );
        }
        self.block.clear();
        self.collect(frame.fragment)?;
        self.pending = Some(Pending {
            stream: id,
            target,
            end_stream: frame.end_stream,
            stream_error,
        });
        Ok(())
    }

    /// What a HEADERS frame on stream `id` is for. A new stream's identifier is taken now
    /// (§5.1.1: odd, above every earlier one, else a connection PROTOCOL_ERROR).
    fn target(&mut self, id: u32) -> Result<Target, super::ConnError> {
        if self.streams.contains_key(&id) {
            return Ok(Target::Open);
        }
        if self.ids.is_idle(id) {
            self.ids
                .accept_remote(id)
                .map_err(|r| conn(r.code, r.why))?;
            return Ok(Target::New);
        }
        if self.reset_ids.contains(&id) {
            return Ok(Target::Drop);
        }
        // Not idle, not open, not reset by this side: a stream closed by END_STREAM both ways
        // or by the client's RST_STREAM (§5.1 "closed": STREAM_CLOSED), or one skipped by a
        // higher identifier (§5.1.1: PROTOCOL_ERROR). The two cannot be told apart without
        // remembering every stream; either is a connection error.
        let why = "HEADERS on a closed stream, or a new stream not above every earlier one \
                   (§5.1, §5.1.1)";
        Err(conn(ErrorCode::PROTOCOL_ERROR, why))
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
        let done = self.field_block(
            pending.stream,
            pending.target,
            pending.end_stream,
            pending.stream_error,
            &block,
            events,
        );
        self.block = block;
        done
    }

    /// Adds a fragment to the block being collected, within `Config::max_header_block`.
    fn collect(&mut self, fragment: &[u8]) -> Step {
        if self.block.len().saturating_add(fragment.len()) > self.config.max_header_block {
            let why = "a field block larger than this side collects (§10.5)";
            return Err(conn(ErrorCode::ENHANCE_YOUR_CALM, why));
        }
        self.block.extend_from_slice(fragment);
        Ok(())
    }

    /// A whole field block: decoded to its end whatever it says (§4.3), then taken as a
    /// request or trailers (`request`).
    fn field_block(
        &mut self,
        id: u32,
        target: Target,
        end_stream: bool,
        stream_error: Option<(ErrorCode, &'static str)>,
        block: &[u8],
        events: &mut Vec<Event>,
    ) -> Step {
        let mut section = match target {
            Target::New => Section::Request(RequestCheck::new(self.config.enable_connect_protocol)),
            Target::Open => Section::Trailers(TrailerCheck::new()),
            Target::Drop => Section::Drop,
        };
        let mut fields = Fields::with_capacity(match section {
            Section::Drop => 0,
            _ => block.len(),
        });
        let limit = self.config.max_header_list_size as usize;
        let decoded = self
            .decoder
            .decode(block, limit, |field| match &mut section {
                Section::Request(check) => {
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
        let too_large = match decoded {
            Ok(()) => false,
            // §4.3: the two dynamic tables can no longer be trusted to agree.
            Err(e) if e.ends_connection() => {
                return Err(conn(ErrorCode::COMPRESSION_ERROR, hpack_why(&e)))
            }
            Err(_) => true,
        };
        let decoded = Decoded {
            section,
            fields,
            too_large,
        };
        self.section(id, end_stream, stream_error, decoded, events)
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
