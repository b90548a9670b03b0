//! Where an HTTP/1 body ends: a byte count, a chunked body's terminating zero chunk and
//! trailers, or the upstream closing. Found while its bytes pass through unchanged (`crate::h1`)
//! and while a response is decoded for a client of another protocol (`crate::upstream`).

/// How a message's body is delimited on the wire; the bytes pass through unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Framing {
    #[default]
    Empty,
    Length(u64),
    Chunked,
    /// Until the upstream closes (responses only).
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// The chunked coding is broken.
    BadChunk,
    /// The connection ended before the body did.
    Truncated,
}

/// How much of a body is still to come.
#[derive(Debug)]
pub enum BodyCursor {
    Length(u64),
    Chunked(Chunked),
    Close,
    Done,
}

impl BodyCursor {
    pub fn new(framing: Framing) -> Self {
        match framing {
            Framing::Empty | Framing::Length(0) => BodyCursor::Done,
            Framing::Length(n) => BodyCursor::Length(n),
            Framing::Chunked => BodyCursor::Chunked(Chunked::default()),
            Framing::Close => BodyCursor::Close,
        }
    }

    /// How many of `bytes` (the next bytes on the wire) belong to the body.
    pub fn take(&mut self, bytes: &[u8]) -> Result<usize, BodyError> {
        let taken = match self {
            BodyCursor::Done => 0,
            BodyCursor::Close => bytes.len(),
            BodyCursor::Length(left) => {
                let n = usize::try_from(*left).map_or(bytes.len(), |l| l.min(bytes.len()));
                *left -= n as u64;
                n
            }
            BodyCursor::Chunked(c) => c.scan(bytes)?,
        };
        let done = match self {
            BodyCursor::Length(0) => true,
            BodyCursor::Chunked(c) => c.is_done(),
            _ => false,
        };
        if done {
            *self = BodyCursor::Done;
        }
        Ok(taken)
    }

    /// The sender closed: the end of a close-delimited body, a truncation of any other.
    pub fn end_of_stream(&mut self) -> Result<(), BodyError> {
        match self {
            BodyCursor::Close | BodyCursor::Done => {
                *self = BodyCursor::Done;
                Ok(())
            }
            _ => Err(BodyError::Truncated),
        }
    }

    pub fn is_done(&self) -> bool {
        matches!(self, BodyCursor::Done)
    }
}

/// Part of the bytes a chunked body's scan went over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Chunk data.
    Data(std::ops::Range<usize>),
    /// Bytes of trailer lines, CRLFs included.
    Trailer(std::ops::Range<usize>),
}

/// A scanner for the chunked coding (RFC 9112 §7.1): sizes, data, and trailer lines.
#[derive(Debug, Default)]
pub struct Chunked {
    state: State,
    size: u64,
    digits: u8,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In a size line: hex digits, then maybe an extension, up to CR.
    #[default]
    Size,
    /// Whitespace after the size (RFC 9112 §7.1.1's BWS): only `;` or the end may follow.
    SizeSpace,
    Extension,
    /// Inside an extension value's quoted-string (RFC 9110 §5.6.4).
    Quoted,
    /// After a backslash in a quoted-string: the next byte is taken as it is.
    QuotedPair,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    Trailer,
    TrailerLf,
    FinalLf,
    Done,
}

impl Chunked {
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes bytes up to the end of the body; returns how many belong to it.
    pub fn scan(&mut self, bytes: &[u8]) -> Result<usize, BodyError> {
        self.scan_pieces(bytes, |_| {})
    }

    /// `scan`, also naming the pieces of `bytes` that are chunk data and trailer lines, in
    /// order: how a body is decoded (for a peer that does not speak HTTP/1) by the same rules
    /// that let it pass through.
    pub fn scan_pieces(
        &mut self,
        bytes: &[u8],
        mut piece: impl FnMut(Piece),
    ) -> Result<usize, BodyError> {
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match self.state {
                State::Size => match b {
                    b'\r' if self.digits > 0 => self.state = State::SizeLf,
                    b';' if self.digits > 0 => self.state = State::Extension,
                    b' ' | b'\t' if self.digits > 0 => self.state = State::SizeSpace,
                    _ => {
                        let digit = (b as char).to_digit(16).ok_or(BodyError::BadChunk)?;
                        self.digits += 1;
                        // 16 hex digits fill a u64; more is an attack or an error.
                        if self.digits > 16 {
                            return Err(BodyError::BadChunk);
                        }
                        self.size = self.size << 4 | u64::from(digit);
                    }
                },
                State::SizeSpace => match b {
                    b' ' | b'\t' => {}
                    b';' => self.state = State::Extension,
                    b'\r' => self.state = State::SizeLf,
                    _ => return Err(BodyError::BadChunk),
                },
                // Passed through, not interpreted: but a line ends in CRLF only, and holds no
                // control character, or parsers after weir could end it elsewhere. A
                // quoted-string holds no CR or LF either (RFC 9110 §5.6.4): a parser that reads
                // quotes would carry the line on past a CRLF inside one, where one that does
                // not ends it there — two requests where the client sent one.
                State::Extension => match b {
                    b'\r' => self.state = State::SizeLf,
                    b'"' => self.state = State::Quoted,
                    b'\t' => {}
                    _ if b.is_ascii_control() => return Err(BodyError::BadChunk),
                    _ => {}
                },
                State::Quoted => match b {
                    b'"' => self.state = State::Extension,
                    b'\\' => self.state = State::QuotedPair,
                    b'\t' => {}
                    _ if b.is_ascii_control() => return Err(BodyError::BadChunk),
                    _ => {}
                },
                State::QuotedPair => match b {
                    b'\t' => self.state = State::Quoted,
                    _ if b.is_ascii_control() => return Err(BodyError::BadChunk),
                    _ => self.state = State::Quoted,
                },
                State::SizeLf => {
                    expect(b, b'\n')?;
                    self.state = if self.size == 0 {
                        State::TrailerStart
                    } else {
                        State::Data
                    };
                }
                State::Data => {
                    let n = usize::try_from(self.size)
                        .map_or(bytes.len() - i, |s| s.min(bytes.len() - i));
                    self.size -= n as u64;
                    piece(Piece::Data(i..i + n));
                    i += n;
                    if self.size == 0 {
                        self.state = State::DataCr;
                    }
                    continue;
                }
                State::DataCr => {
                    expect(b, b'\r')?;
                    self.state = State::DataLf;
                }
                State::DataLf => {
                    expect(b, b'\n')?;
                    self.state = State::Size;
                    self.digits = 0;
                }
                State::TrailerStart => {
                    self.state = match b {
                        b'\r' => State::FinalLf,
                        _ if b.is_ascii_control() => return Err(BodyError::BadChunk),
                        _ => {
                            piece(Piece::Trailer(i..i + 1));
                            State::Trailer
                        }
                    };
                }
                State::Trailer => {
                    match b {
                        b'\r' => self.state = State::TrailerLf,
                        b'\t' => {}
                        _ if b.is_ascii_control() => return Err(BodyError::BadChunk),
                        _ => {}
                    }
                    // A trailer line with its CRLF, as `httparse` reads a field.
                    piece(Piece::Trailer(i..i + 1));
                }
                State::TrailerLf => {
                    expect(b, b'\n')?;
                    piece(Piece::Trailer(i..i + 1));
                    self.state = State::TrailerStart;
                }
                State::FinalLf => {
                    expect(b, b'\n')?;
                    self.state = State::Done;
                    return Ok(i + 1);
                }
                State::Done => return Ok(i),
            }
            i += 1;
        }
        Ok(i)
    }
}

fn expect(got: u8, wanted: u8) -> Result<(), BodyError> {
    if got == wanted {
        Ok(())
    } else {
        Err(BodyError::BadChunk)
    }
}

/// Digits only, as RFC 9110 §8.6 has it; no sign, no spaces inside, no overflow.
pub(crate) fn parse_length(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` in pieces of `step` bytes; returns the body's length as found.
    fn body_len(wire: &[u8], step: usize) -> Result<usize, BodyError> {
        let mut c = BodyCursor::new(Framing::Chunked);
        let mut taken = 0;
        for piece in wire.chunks(step) {
            let n = c.take(piece)?;
            taken += n;
            if c.is_done() {
                return Ok(taken);
            }
            assert_eq!(n, piece.len(), "a body that is not done takes every byte");
        }
        Err(BodyError::Truncated)
    }

    #[test]
    fn chunked_bodies_end_where_they_end_however_they_are_split() {
        let body: &[u8] = b"5\r\nhello\r\n1a;name=value\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n";
        let mut wire = body.to_vec();
        wire.extend_from_slice(b"GET /next HTTP/1.1\r\n\r\n");
        for step in 1..=wire.len() {
            assert_eq!(body_len(&wire, step), Ok(body.len()), "step {step}");
        }
    }

    #[test]
    fn trailers_belong_to_the_body() {
        let body: &[u8] = b"3\r\nabc\r\n0\r\ngrpc-status: 0\r\nx-t: 1\r\n\r\n";
        let mut wire = body.to_vec();
        wire.extend_from_slice(b"extra");
        for step in 1..=wire.len() {
            assert_eq!(body_len(&wire, step), Ok(body.len()), "step {step}");
        }
    }

    #[test]
    fn broken_chunks_are_errors() {
        // What stays allowed: whitespace before an extension, extensions passed through.
        assert_eq!(body_len(b"3 ;a=b\r\nabc\r\n0\r\n\r\n", 4), Ok(18));
        assert_eq!(body_len(b"3\t\r\nabc\r\n0\r\n\r\n", 4), Ok(14));
        // A quoted-string value, with a `;` and an escaped quote inside it.
        let quoted = b"3;a=\"x;\\\"y\"\r\nabc\r\n0\r\n\r\n";
        assert_eq!(body_len(quoted, 4), Ok(quoted.len()));
        for bad in [
            &b"x\r\n"[..],
            b"\r\n",
            b"3\r\nabcX",
            b"3\nabc",
            b"11111111111111111\r\n",
            b"0\r\n\rX",
            // Smuggling shapes: a line ended early for one parser and late for another.
            b"3;ext\nabc\r\n",
            b"3 x\r\nabc\r\n",
            b"3;a\x00b\r\nabc\r\n",
            // CR or LF inside an extension's quoted-string, escaped or not.
            b"3;a=\"x\r\ny\"\r\nabc\r\n",
            b"3;a=\"x\ny\"\r\nabc\r\n",
            b"3;a=\"x\\\r\ny\"\r\nabc\r\n",
            b"0\r\nTrailer: a\nX: b\r\n\r\n",
            b"0\r\n\n",
        ] {
            assert_eq!(
                body_len(bad, bad.len()),
                Err(BodyError::BadChunk),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn lengths_take_exactly_their_count() {
        let mut c = BodyCursor::new(Framing::Length(5));
        assert_eq!(c.take(b"abc"), Ok(3));
        assert!(!c.is_done());
        assert_eq!(c.take(b"defgh"), Ok(2));
        assert!(c.is_done());
        assert_eq!(c.take(b"more"), Ok(0));
        let mut short = BodyCursor::new(Framing::Length(5));
        assert_eq!(short.take(b"ab"), Ok(2));
        assert_eq!(short.end_of_stream(), Err(BodyError::Truncated));
    }

    #[test]
    fn a_close_delimited_body_ends_with_the_stream() {
        let mut c = BodyCursor::new(Framing::Close);
        assert_eq!(c.take(b"anything"), Ok(8));
        assert!(!c.is_done());
        assert_eq!(c.end_of_stream(), Ok(()));
        assert!(c.is_done());
        assert!(BodyCursor::new(Framing::Empty).is_done());
    }
}
