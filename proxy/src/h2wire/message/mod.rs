//! The rules RFC 9113 §8 sets on an HTTP/2 message's fields, checked one field at a time as
//! HPACK hands them over, so that an engine refuses a malformed message without ever building
//! a header map. A malformed request or response is a stream error of type PROTOCOL_ERROR,
//! never forwarded; a server may answer a malformed request (400) before the reset (§8.1.1).
//!
//! ```
//! use weir_proxy::h2wire::hpack::{Decoder, Encoder};
//! use weir_proxy::h2wire::message::RequestCheck;
//!
//! let (mut block, encoder) = (Vec::new(), Encoder::new());
//! for (name, value) in [(":method", "GET"), (":scheme", "https"), (":path", "/"),
//!                       (":authority", "a.example")] {
//!     encoder.field(name.as_bytes(), value.as_bytes(), false, &mut block);
//! }
//! let mut check = RequestCheck::new(false);
//! // A refusal is kept: the block is decoded to its end whatever the fields say (§4.3).
//! Decoder::new(4096).decode(&block, 16 << 10, |f| { let _ = check.field(f.name, f.value); })?;
//! let head = check.finish()?;
//! assert_eq!(head.authority(), Some(&b"a.example"[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Checked here, each refusal a [`Malformed`] naming its rule:
//! - every field (§8.2, §8.2.1): a non-empty name of lower-case token characters; a value
//!   without NUL, CR, LF (or another control character, RFC 9110 §5.5) and without SP or HTAB
//!   first or last; no connection-specific field (§8.2.2: Connection, Proxy-Connection,
//!   Keep-Alive, Transfer-Encoding, Upgrade); TE only as `trailers`; Content-Length one number, digits
//!   only, once in a request and repeated only as the same number in a response (RFC 9110 §8.6,
//!   as weir's HTTP/1 side);
//! - pseudo-headers (§8.3): known ones only, each at most once, all before the regular fields,
//!   the request's in requests and `:status` in responses, none in trailers;
//! - requests (§8.3.1, §8.5, RFC 8441): `:method` a token; `:scheme` and a non-empty `:path`
//!   except in CONNECT; an http(s) `:path` starting with `/`, or `*` for OPTIONS; `:authority`
//!   and Host host and port only, without userinfo; one Host, equal to `:authority` if both
//!   came; CONNECT with `:authority` only; `:protocol` only if extended CONNECT was enabled,
//!   and then only on a CONNECT with `:scheme`, `:path` and `:authority`;
//! - responses (§8.3.2, §8.6): one `:status` of three digits, 100 to 599, not 101.
//!
//! Left to the engine, which keeps the state they need: DATA lengths against Content-Length
//! and END_STREAM (§8.1.1), the order of interim responses, final response and trailers (§8.1),
//! and a trailer section ending its stream.

mod malformed;
mod request;
mod response;
mod rules;
mod target;
mod trailer;

pub use malformed::{ConnectionField, Malformed, Pseudo};
pub use request::{RequestCheck, RequestHead, HEAD_ROOM};
pub use response::{ResponseCheck, ResponseHead};
pub use rules::is_connection_specific;
pub use trailer::TrailerCheck;

#[cfg(test)]
mod tests;
