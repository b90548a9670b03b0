//! The strict rules in front of hyper's HTTP/1 server. hyper parses leniently (a bare LF ends a
//! line, say), so every byte a client sends to it passes this gate first: each request head is
//! parsed and checked by the same code the passthrough engine uses (`RequestHead::parse`), and
//! its body is framed by the same cursor, to find where the next head starts.
//!
//! A refused head never reaches hyper. In its place hyper reads a sentinel request, carrying a
//! per-process token, that its service answers with the refusal (`refusal_of`); then the gate
//! hands over nothing more. So a refusal is answered in order behind any pipelined requests before it,
//! and the connection closes after it, as in the passthrough engine.
//!
//! After a request that may switch protocols (a real Upgrade, CONNECT) the bytes that follow may
//! be a tunnel's, so they pass unexamined: hyper takes the connection over or reads the next
//! head itself.

use std::io;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, HeaderName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::head::{Parsed, RequestHead};
use super::strict::Refusal;
use crate::framing::BodyCursor;

/// The header of the sentinel request.
pub static REFUSED: HeaderName = HeaderName::from_static("x-weir-refused");

/// Reads for a head that arrives in pieces are given this much room.
const READ_ROOM: usize = 8 * 1024;

/// Random per process, so that no client can send a sentinel of its own.
fn token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        use rand::{Rng, SeedableRng};
        format!("{:016x}", rand::rngs::StdRng::from_os_rng().random::<u64>())
    })
}

/// The refusal a sentinel request stands for; `None` for every real request.
pub fn refusal_of(headers: &HeaderMap) -> Option<Refusal> {
    let value = headers.get(&REFUSED)?.to_str().ok()?;
    let (token, code) = value.split_once('-')?;
    if token != self::token() {
        return None;
    }
    Refusal::from_code(code.parse().ok()?)
}

fn sentinel(refusal: Refusal) -> Bytes {
    Bytes::from(format!(
        "GET / HTTP/1.1\r\nhost: weir.invalid\r\n{}: {}-{}\r\nconnection: close\r\n\r\n",
        REFUSED.as_str(),
        token(),
        refusal.code()
    ))
}

enum State {
    /// The next bytes are a request head.
    Head,
    Body(BodyCursor),
    /// Unexamined from here on (a possible tunnel).
    Open,
    /// A request body broke the chunked rules (RFC 9112 §7.1: a bare LF, CR or LF in a chunk
    /// extension's quoted-string, a malformed size): nothing more goes to hyper, whose own
    /// decoder is more lenient and would read on, and its next read fails — the request is
    /// not forwarded whole, and the connection ends, as in the passthrough engine.
    Broken,
    /// A head was refused: the sentinel is handed over, then nothing more.
    Refused,
}

/// The client's stream as hyper reads it. Writes pass straight through.
pub struct Gate<I> {
    io: I,
    /// Read from the client and not yet handed to hyper: part of a head still arriving, or
    /// what hyper had no room for, or the sentinel.
    held: BytesMut,
    /// How many of `held`'s first bytes are examined and may go to hyper.
    ready: usize,
    state: State,
    head: RequestHead,
    /// Refused, and its sentinel not yet put in `held`.
    refusal: Option<Refusal>,
    max_header_bytes: usize,
    max_headers: usize,
}

impl<I> Gate<I> {
    /// `read`: bytes read from `io` already (a connection handed over by the passthrough
    /// engine), examined again from their first head.
    pub fn new(read: Bytes, io: I, max_header_bytes: usize, max_headers: usize) -> Self {
        Gate {
            io,
            held: BytesMut::from(&read[..]),
            ready: 0,
            state: State::Head,
            head: RequestHead::default(),
            refusal: None,
            max_header_bytes,
            max_headers,
        }
    }

    /// Examines `bytes`, the next on the wire after all examined so far: how many of them may
    /// go to hyper now. After a refusal, `state` is `Refused` and the rest must not go.
    fn scan(&mut self, bytes: &[u8]) -> usize {
        let mut at = 0;
        while at < bytes.len() {
            match &mut self.state {
                State::Open => return bytes.len(),
                State::Refused | State::Broken => return at,
                State::Body(cursor) => match cursor.take(&bytes[at..]) {
                    Ok(n) => {
                        at += n;
                        if cursor.is_done() {
                            self.state = State::Head;
                        } else if n == 0 {
                            return at;
                        }
                    }
                    Err(_) => {
                        self.state = State::Broken;
                        return at;
                    }
                },
                State::Head => match self.head.parse(&bytes[at..], self.max_headers) {
                    Parsed::Complete | Parsed::Hyper => {
                        let method = &bytes[at..][self.head.method.clone()];
                        let tunnel = self.head.upgrade || method == b"CONNECT";
                        at += self.head.len;
                        self.state = if tunnel {
                            State::Open
                        } else {
                            match BodyCursor::new(self.head.framing) {
                                BodyCursor::Done => State::Head,
                                cursor => State::Body(cursor),
                            }
                        };
                    }
                    Parsed::Partial if bytes.len() - at < self.max_header_bytes => return at,
                    Parsed::Partial => return self.refuse(at, Refusal::HeadTooLarge),
                    Parsed::Refused(refusal) => return self.refuse(at, refusal),
                },
            }
        }
        at
    }

    fn refuse(&mut self, at: usize, refusal: Refusal) -> usize {
        tracing::debug!(cause = refusal.cause(), "request refused");
        self.state = State::Refused;
        self.refusal = Some(refusal);
        at
    }

    /// After a refusal: the first `keep` held bytes still go, then the sentinel, then nothing.
    fn hold_sentinel(&mut self, keep: usize) -> bool {
        let Some(refusal) = self.refusal.take() else {
            return false;
        };
        self.held.truncate(keep);
        self.held.extend_from_slice(&sentinel(refusal));
        self.ready = self.held.len();
        true
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Gate<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.ready > 0 {
                let n = this.ready.min(out.remaining());
                out.put_slice(&this.held[..n]);
                this.held.advance(n);
                this.ready -= n;
                return Poll::Ready(Ok(()));
            }
            if matches!(this.state, State::Broken) {
                tracing::debug!("request refused: malformed chunked body");
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "malformed chunked body",
                )));
            }
            if matches!(this.state, State::Refused) {
                // Nothing more, ever: hyper answers the sentinel and closes (it says
                // `connection: close`). Not an end of stream, which would make hyper drop the
                // sentinel unanswered.
                return Poll::Pending;
            }
            if this.held.is_empty() {
                // The common case: read straight into hyper's buffer and examine the bytes
                // there; keep back only what cannot go yet.
                let before = out.filled().len();
                ready!(Pin::new(&mut this.io).poll_read(cx, out))?;
                let got = out.filled().len() - before;
                if got == 0 {
                    return Poll::Ready(Ok(())); // the client closed
                }
                let ok = this.scan(&out.filled()[before..]);
                if !this.hold_sentinel(0) && ok < got {
                    this.held.extend_from_slice(&out.filled()[before + ok..]);
                }
                out.set_filled(before + ok);
                if ok > 0 {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            // Part of a head is held: examine it with whatever arrives next.
            let held = std::mem::take(&mut this.held);
            let ok = this.scan(&held);
            this.held = held;
            if this.hold_sentinel(ok) || ok > 0 {
                this.ready = this.ready.max(ok);
                continue;
            }
            let old = this.held.len();
            this.held.resize(old + READ_ROOM, 0);
            let mut room = ReadBuf::new(&mut this.held[old..]);
            let polled = Pin::new(&mut this.io).poll_read(cx, &mut room);
            let n = room.filled().len();
            this.held.truncate(old + n);
            ready!(polled)?;
            if n == 0 {
                // The client closed mid-head: it goes to hyper as it is, which reports it.
                this.state = State::Open;
                this.ready = this.held.len();
            }
        }
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Gate<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Everything hyper would read from a gate over `input`: until the end of the stream, or
    /// until the gate has nothing more to give (after a refusal it never ends the stream).
    async fn through(input: &[u8]) -> Vec<u8> {
        let mut gate = Gate::new(Bytes::new(), input, 8192, 100);
        let mut out = Vec::new();
        loop {
            let mut chunk = [0u8; 256];
            let wait = std::time::Duration::from_millis(200);
            match tokio::time::timeout(wait, gate.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => out.extend_from_slice(&chunk[..n]),
                _ => return out,
            }
        }
    }

    #[tokio::test]
    async fn good_requests_pass_unchanged_bodies_and_all() {
        let input = b"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello\
GET /b HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
GET /c HTTP/1.1\r\nHost: a\r\n\r\n";
        assert_eq!(through(input).await, input.to_vec());
    }

    #[tokio::test]
    async fn a_refused_head_is_replaced_by_the_sentinel_and_nothing_after_it_passes() {
        let good = b"GET /ok HTTP/1.1\r\nHost: a\r\n\r\n";
        let mut input = good.to_vec();
        // Bare LF, then a request smuggled behind it.
        input.extend_from_slice(
            b"GET /bad HTTP/1.1\nHost: a\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
        );
        let out = through(&input).await;
        assert!(out.starts_with(good));
        let rest = String::from_utf8_lossy(&out[good.len()..]).into_owned();
        assert!(
            !rest.contains("smuggled") && !rest.contains("/bad"),
            "{rest}"
        );
        let mut head = [httparse::EMPTY_HEADER; 8];
        let mut req = httparse::Request::new(&mut head);
        assert!(req.parse(rest.as_bytes()).is_ok_and(|s| s.is_complete()));
        let mut headers = HeaderMap::new();
        for h in req.headers.iter() {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(h.name.as_bytes()),
                http::HeaderValue::from_bytes(h.value),
            ) {
                headers.append(name, value);
            }
        }
        assert_eq!(refusal_of(&headers), Some(Refusal::BareLf));
    }

    #[tokio::test]
    async fn a_body_that_looks_like_a_bad_head_is_only_a_body() {
        // The body holds a bare LF and a "request": framing says it is data.
        let input = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 14\r\n\r\nGET /x\nHost:\n\
GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        assert_eq!(through(input).await, input.to_vec());
    }

    #[tokio::test]
    async fn heads_arriving_in_pieces_pass_whole_and_bad_ones_still_refuse() {
        let good = b"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc\
GET /b HTTP/1.1\r\nHost: a\r\n\r\n";
        let bad = b"GET /c HTTP/1.1\r\nHost: a\nX: 1\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n";
        let (mut client, server) = tokio::io::duplex(64);
        let mut gate = Gate::new(Bytes::new(), server, 8192, 100);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for piece in good.chunks(5).chain(bad.chunks(5)) {
                client.write_all(piece).await.unwrap_or_default();
                tokio::task::yield_now().await;
            }
            client
        });
        let mut out = Vec::new();
        loop {
            // A small buffer, as hyper's may be at times.
            let mut chunk = [0u8; 7];
            let wait = std::time::Duration::from_millis(200);
            match tokio::time::timeout(wait, gate.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => out.extend_from_slice(&chunk[..n]),
                _ => break,
            }
        }
        let _client = writer.await;
        assert!(out.starts_with(good), "{}", String::from_utf8_lossy(&out));
        let rest = String::from_utf8_lossy(&out[good.len()..]).into_owned();
        assert!(
            rest.starts_with("GET / HTTP/1.1\r\nhost: weir.invalid"),
            "{rest}"
        );
        assert!(
            !rest.contains("smuggled") && !rest.contains("/c "),
            "{rest}"
        );
    }

    #[test]
    fn a_forged_sentinel_is_no_refusal() {
        let mut headers = HeaderMap::new();
        headers.insert(
            &REFUSED,
            http::HeaderValue::from_static("0000000000000000-1"),
        );
        assert_eq!(refusal_of(&headers), None);
    }
}
