//! httparse, read into `syntax`'s answer: what weir's own head reader is held to, by its tests
//! and by the `http1_syntax` fuzz target (both built with httparse; the proxy itself does not
//! read heads with it).

use std::ops::Range;

use super::syntax::{RequestLine, StatusLine, Syntax, MAX_FIELDS};

/// A head's answer with its fields (name and value ranges), as both readers give it.
pub type Answer<L> = Syntax<(L, Vec<(Range<usize>, Range<usize>)>)>;

/// weir's reader, its fields collected.
pub fn request(buf: &[u8]) -> Answer<RequestLine> {
    let mut fields = Vec::new();
    with_fields(
        super::syntax::request(buf, |n, v| fields.push((n, v))),
        fields,
    )
}

/// weir's reader, its fields collected.
pub fn response(buf: &[u8]) -> Answer<StatusLine> {
    let mut fields = Vec::new();
    with_fields(
        super::syntax::response(buf, |n, v| fields.push((n, v))),
        fields,
    )
}

fn with_fields<L>(syntax: Syntax<L>, fields: Vec<(Range<usize>, Range<usize>)>) -> Answer<L> {
    match syntax {
        Syntax::Complete(line) => Syntax::Complete((line, fields)),
        Syntax::Partial => Syntax::Partial,
        Syntax::Malformed => Syntax::Malformed,
        Syntax::TooManyFields => Syntax::TooManyFields,
    }
}

/// httparse's answer to a request head, with default configuration and 128 slots.
pub fn httparse_request(buf: &[u8]) -> Answer<RequestLine> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut req = httparse::Request::new(&mut slots);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Syntax::Partial,
        Err(e) => return error(e),
    };
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Syntax::Malformed;
    };
    let head = &buf[..len];
    let bare_lf = head
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || head[i - 1] != b'\r'));
    let line = RequestLine {
        len,
        method: offset(buf, method.as_bytes()),
        target: offset(buf, target.as_bytes()),
        http11: version == 1,
        bare_lf,
    };
    Syntax::Complete((line, fields(buf, req.headers)))
}

/// httparse's answer to a response head, with default configuration and 128 slots.
pub fn httparse_response(buf: &[u8]) -> Answer<StatusLine> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut resp = httparse::Response::new(&mut slots);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Syntax::Partial,
        Err(e) => return error(e),
    };
    let (Some(version), Some(status)) = (resp.version, resp.code) else {
        return Syntax::Malformed;
    };
    // An empty reason, or one with obs-text, is "" — not always a slice of the buffer.
    let reason = resp.reason.unwrap_or("").as_bytes();
    let line = StatusLine {
        len,
        http11: version == 1,
        status,
        reason: if reason.is_empty() {
            0..0
        } else {
            offset(buf, reason)
        },
    };
    Syntax::Complete((line, fields(buf, resp.headers)))
}

fn error<L>(e: httparse::Error) -> Syntax<L> {
    match e {
        httparse::Error::TooManyHeaders => Syntax::TooManyFields,
        _ => Syntax::Malformed,
    }
}

fn fields(buf: &[u8], headers: &[httparse::Header<'_>]) -> Vec<(Range<usize>, Range<usize>)> {
    headers
        .iter()
        .map(|h| (offset(buf, h.name.as_bytes()), offset(buf, h.value)))
        .collect()
}

fn offset(buf: &[u8], part: &[u8]) -> Range<usize> {
    let start = (part.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
    start..start + part.len()
}
