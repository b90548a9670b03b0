//! An HTTP/1 response body read off a pooled connection (`RawConn`) and handed on as frames
//! (for an HTTP/2 client, or hyper's HTTP/1 server): a length-delimited body as it comes, a
//! chunked one decoded into its data and trailers, by the same scanner that lets a chunked
//! body pass through the byte engine. When the body ends cleanly the connection goes back to
//! its pool; a body dropped or broken before its end closes it.

use std::future::Future;
use std::io;
use std::ops::Range;
use std::pin::{pin, Pin};
use std::task::{ready, Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue};
use http::HeaderMap;
use http_body::{Frame, SizeHint};

use super::endpoint::RawLease;
use super::raw::RawConn;
use super::received::BoxError;
use crate::buffer;
use crate::framing::{BodyCursor, BodyError, Framing, Piece};

/// Trailer section bytes taken at most; past it the body is malformed.
const MAX_TRAILERS: usize = 16 * 1024;
/// Trailer fields taken at most.
const MAX_TRAILER_FIELDS: usize = 64;

pub struct PooledBody {
    /// None once the body ended (the connection is back in its pool or closed).
    conn: Option<RawConn>,
    /// Counts the exchange as outstanding until the body ends.
    lease: Option<RawLease>,
    /// What is left of the body (the same cursor the byte engine frames bodies with).
    left: BodyCursor,
    /// The upstream keeps the connection open after this response.
    reusable: bool,
    reads: buffer::BodyReads,
    /// Chunk data found by one scan (reused: no allocation per frame).
    pieces: Vec<Range<usize>>,
    trailer_bytes: Vec<u8>,
    trailers: Option<HeaderMap>,
    /// Why the body broke off, told at the next poll (`fail`).
    broken: Option<BoxError>,
}

#[derive(Debug)]
struct Malformed(&'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "upstream response body: {}", self.0)
    }
}

impl std::error::Error for Malformed {}

impl PooledBody {
    /// The body after a response head; `conn.buf` holds what was read past the head.
    /// `reusable`: the upstream's head did not close the connection.
    pub fn new(conn: RawConn, lease: RawLease, framing: Framing, reusable: bool) -> Self {
        let left = BodyCursor::new(framing);
        let mut body = PooledBody {
            conn: Some(conn),
            lease: Some(lease),
            left,
            reusable: reusable && framing != Framing::Close,
            reads: buffer::BodyReads::handed_on(),
            pieces: Vec::new(),
            trailer_bytes: Vec::new(),
            trailers: None,
            broken: None,
        };
        if matches!(body.left, BodyCursor::Done) {
            body.finish();
        }
        body
    }

    /// The body ended: the connection goes back when nothing unasked followed it.
    fn finish(&mut self) {
        self.left = BodyCursor::Done;
        if let (Some(mut conn), Some(lease)) = (self.conn.take(), self.lease.take()) {
            if self.reusable && conn.buf.is_empty() {
                buffer::settle(&mut conn.buf);
                lease.endpoint().give_back_raw(conn, Instant::now());
            }
        }
    }

    /// Broken off: the connection closes, the exchange is over. The error is told at the
    /// next poll, not this one: the server writing the response then flushes what it took of
    /// the body first (hyper's drops its buffered bytes on an error), so the client sees the
    /// body cut short — a head and part of a body, then the connection's end — rather than
    /// nothing at all.
    fn fail(&mut self, err: BoxError) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.left = BodyCursor::Done;
        self.conn = None;
        self.lease = None;
        self.trailers = None;
        self.broken = Some(err);
        Poll::Pending
    }

    /// Reads more of the body into `conn.buf`; `Ok(0)` is the upstream closing.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(conn) = self.conn.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        // A body of known length asks for no more room than it has left.
        let most = match self.left {
            BodyCursor::Length(left) => usize::try_from(left).unwrap_or(usize::MAX),
            _ => usize::MAX,
        };
        // Cancel-safe: a read that is not ready now is simply made again.
        let read = pin!(self.reads.read_at_most(&mut conn.io, &mut conn.buf, most));
        read.poll(cx)
    }

    fn poll_length(
        &mut self,
        cx: &mut Context<'_>,
        left: u64,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let buffered = self.conn.as_ref().map_or(0, |c| c.buf.len());
        if buffered == 0 {
            match ready!(self.poll_read(cx)) {
                Ok(0) => return self.fail(Box::new(Malformed("closed before its end"))),
                Ok(_) => {}
                Err(err) => return self.fail(Box::new(err)),
            }
        }
        let Some(conn) = self.conn.as_mut() else {
            return Poll::Ready(None);
        };
        let n = usize::try_from(left).map_or(conn.buf.len(), |l| l.min(conn.buf.len()));
        let data = conn.buf.split_to(n).freeze();
        let left = left - n as u64;
        if left == 0 {
            self.finish();
        } else {
            self.left = BodyCursor::Length(left);
        }
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn poll_close_delimited(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let buffered = self.conn.as_ref().map_or(0, |c| c.buf.len());
        if buffered == 0 {
            match ready!(self.poll_read(cx)) {
                Ok(0) => {
                    self.finish();
                    return Poll::Ready(None);
                }
                Ok(_) => {}
                Err(err) => return self.fail(Box::new(err)),
            }
        }
        let Some(conn) = self.conn.as_mut() else {
            return Poll::Ready(None);
        };
        let data = conn.buf.split().freeze();
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn poll_chunked(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        loop {
            let BodyCursor::Chunked(chunked) = &mut self.left else {
                return Poll::Ready(None);
            };
            let Some(conn) = self.conn.as_mut() else {
                return Poll::Ready(None);
            };
            if !conn.buf.is_empty() {
                self.pieces.clear();
                let (pieces, trailer_bytes) = (&mut self.pieces, &mut self.trailer_bytes);
                let scanned = chunked.scan_pieces(&conn.buf, |piece| match piece {
                    Piece::Data(range) => pieces.push(range),
                    Piece::Trailer(range) => trailer_bytes.extend_from_slice(&conn.buf[range]),
                });
                let done = chunked.is_done();
                let consumed = match scanned {
                    Ok(n) => n,
                    Err(BodyError::BadChunk) => {
                        return self.fail(Box::new(Malformed("broken chunked coding")))
                    }
                    Err(BodyError::Truncated) => {
                        return self.fail(Box::new(Malformed("closed before its end")))
                    }
                };
                if self.trailer_bytes.len() > MAX_TRAILERS {
                    return self.fail(Box::new(Malformed("trailers too large")));
                }
                let scanned = conn.buf.split_to(consumed).freeze();
                let data = join(&scanned, &self.pieces);
                if done {
                    match parse_trailers(&self.trailer_bytes) {
                        Ok(trailers) => self.trailers = trailers,
                        Err(err) => return self.fail(Box::new(err)),
                    }
                    self.finish();
                }
                if !data.is_empty() {
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                if done {
                    return Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))));
                }
                continue;
            }
            match ready!(self.poll_read(cx)) {
                Ok(0) => return self.fail(Box::new(Malformed("closed before its end"))),
                Ok(_) => {}
                Err(err) => return self.fail(Box::new(err)),
            }
        }
    }
}

/// The data pieces of one scan as one frame: a slice when there is one piece (no copy).
fn join(scanned: &Bytes, pieces: &[Range<usize>]) -> Bytes {
    match pieces {
        [] => Bytes::new(),
        [one] => scanned.slice(one.clone()),
        many => {
            let len = many.iter().map(|r| r.len()).sum();
            let mut joined = BytesMut::with_capacity(len);
            for range in many {
                joined.extend_from_slice(&scanned[range.clone()]);
            }
            joined.freeze()
        }
    }
}

/// The trailer section's lines (each with its CRLF) as fields; None when there were none.
fn parse_trailers(lines: &[u8]) -> Result<Option<HeaderMap>, Malformed> {
    if lines.is_empty() {
        return Ok(None);
    }
    let mut section = Vec::with_capacity(lines.len() + 2);
    section.extend_from_slice(lines);
    section.extend_from_slice(b"\r\n");
    let mut slots = [httparse::EMPTY_HEADER; MAX_TRAILER_FIELDS];
    let fields = match httparse::parse_headers(&section, &mut slots) {
        Ok(httparse::Status::Complete((_, fields))) => fields,
        _ => return Err(Malformed("malformed trailers")),
    };
    let mut trailers = HeaderMap::with_capacity(fields.len());
    for field in fields {
        let name = HeaderName::from_bytes(field.name.as_bytes())
            .map_err(|_| Malformed("malformed trailer name"))?;
        let value = HeaderValue::from_bytes(field.value)
            .map_err(|_| Malformed("malformed trailer value"))?;
        trailers.append(name, value);
    }
    Ok(Some(trailers))
}

impl http_body::Body for PooledBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(err) = this.broken.take() {
            return Poll::Ready(Some(Err(err)));
        }
        let polled = match &this.left {
            BodyCursor::Done => Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t)))),
            BodyCursor::Length(left) => {
                let left = *left;
                this.poll_length(cx, left)
            }
            BodyCursor::Chunked(_) => this.poll_chunked(cx),
            BodyCursor::Close => this.poll_close_delimited(cx),
        };
        if this.broken.is_some() {
            cx.waker().wake_by_ref();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.left, BodyCursor::Done) && self.trailers.is_none() && self.broken.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.left {
            BodyCursor::Length(n) => SizeHint::with_exact(n),
            BodyCursor::Done if self.trailers.is_none() && self.broken.is_none() => {
                SizeHint::with_exact(0)
            }
            _ => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_lines_become_fields() {
        let trailers = parse_trailers(b"grpc-status: 0\r\nX-T:  a b \r\n")
            .unwrap()
            .unwrap();
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(trailers["x-t"], "a b");
        assert!(parse_trailers(b"").unwrap().is_none());
        assert!(parse_trailers(b"bad name: 1\r\n").is_err());
    }

    #[test]
    fn pieces_join_into_one_frame() {
        let scanned = Bytes::from_static(b"3\r\nabc\r\n2\r\nde\r\n");
        assert_eq!(join(&scanned, std::slice::from_ref(&(3..6))), "abc");
        assert_eq!(join(&scanned, &[3..6, 11..13]), "abcde");
        assert!(join(&scanned, &[]).is_empty());
    }
}
