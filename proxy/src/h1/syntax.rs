//! The HTTP/1 head grammar, read in one pass: the request line or the status line, then field
//! lines, as offsets into the bytes they came in.
//!
//! Why weir reads heads itself: httparse and then a second walk over its result (classifying
//! each name, finding `Connection`, checking line endings) were a third of a plaintext
//! request's user-space instructions. Here each field is handed over the moment its line ends,
//! bare LFs are noted on the way, and names, values and targets are classified sixteen bytes
//! at a time (`wide`, on x86-64), then eight (word arithmetic), then one.
//!
//! The grammar is httparse's with its default configuration, exactly, so that the refusals of
//! `strict` are what they were: tokens for methods and names, no whitespace before a colon, one
//! space between request-line parts, no obs-fold, values of HTAB, SP, VCHAR and obs-text with
//! trailing whitespace trimmed, a target of visible bytes that is UTF-8, blank lines before
//! the first line skipped, and a head that ends before it could be judged is `Partial`. The
//! tests hold both parsers to the same answer on every head they generate, and the
//! `http1_syntax` fuzz target on any bytes.

use std::ops::Range;

use crate::field::TCHAR;

/// Most fields a head may carry; one more and it is refused (requests) or malformed
/// (responses), as httparse's 128 slots were.
pub const MAX_FIELDS: usize = 128;

/// What a head's bytes came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Syntax<L> {
    Complete(L),
    /// Every byte so far fits; more are needed to know.
    Partial,
    Malformed,
    TooManyFields,
}

/// A request line, with facts about the head it starts.
#[derive(Debug, PartialEq, Eq)]
pub struct RequestLine {
    /// Bytes from the buffer's start (blank lines before the request line included) through
    /// the blank line that ends the head.
    pub len: usize,
    pub method: Range<usize>,
    pub target: Range<usize>,
    pub http11: bool,
    /// Some line ends in LF alone: valid syntax, which `strict` refuses.
    pub bare_lf: bool,
}

/// A status line, with facts about the head it starts.
#[derive(Debug, PartialEq, Eq)]
pub struct StatusLine {
    /// As `RequestLine::len`.
    pub len: usize,
    pub http11: bool,
    pub status: u16,
    /// `0..0` when there is none, or it has obs-text (nothing of it is forwarded then).
    pub reason: Range<usize>,
}

/// Reads a request head; `field(name, value)` gets each field line as it ends.
pub fn request(buf: &[u8], field: impl FnMut(Range<usize>, Range<usize>)) -> Syntax<RequestLine> {
    let mut at = Cursor::new(buf);
    match at.request(field) {
        Ok(line) => Syntax::Complete(line),
        Err(stop) => stop.into(),
    }
}

/// Reads a response head; `field(name, value)` gets each field line as it ends. A bare LF is
/// taken as a line's end here, as httparse does: upstreams are not held to `strict`.
pub fn response(buf: &[u8], field: impl FnMut(Range<usize>, Range<usize>)) -> Syntax<StatusLine> {
    let mut at = Cursor::new(buf);
    match at.response(field) {
        Ok(line) => Syntax::Complete(line),
        Err(stop) => stop.into(),
    }
}

/// Why reading stopped before the head's end.
enum Stop {
    Partial,
    Malformed,
    TooManyFields,
}

impl<L> From<Stop> for Syntax<L> {
    fn from(stop: Stop) -> Self {
        match stop {
            Stop::Partial => Syntax::Partial,
            Stop::Malformed => Syntax::Malformed,
            Stop::TooManyFields => Syntax::TooManyFields,
        }
    }
}

type Step<T> = Result<T, Stop>;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = ONES * 0x80;

/// The bytes of `word` (eight, first in the lowest) below `limit` (≤ 0x80) or equal to DEL, as
/// each one's high bit. Only the lowest is exact — borrows run upward — which is all a scan
/// that stops at the first needs.
#[inline(always)]
fn below_or_del(word: u64, limit: u8) -> u64 {
    let below = word.wrapping_sub(ONES * u64::from(limit)) & !word;
    let del = word ^ (ONES * 0x7f);
    let del = del.wrapping_sub(ONES) & !del;
    (below | del) & HIGHS
}

struct Cursor<'b> {
    buf: &'b [u8],
    at: usize,
    bare_lf: bool,
}

impl<'b> Cursor<'b> {
    fn new(buf: &'b [u8]) -> Self {
        Cursor {
            buf,
            at: 0,
            bare_lf: false,
        }
    }

    fn request(&mut self, field: impl FnMut(Range<usize>, Range<usize>)) -> Step<RequestLine> {
        self.skip_blank_lines()?;
        let method = self.method()?;
        let target = self.target()?;
        let http11 = self.version()?;
        self.line_end()?;
        self.fields(field)?;
        Ok(RequestLine {
            len: self.at,
            method,
            target,
            http11,
            bare_lf: self.bare_lf,
        })
    }

    fn response(&mut self, field: impl FnMut(Range<usize>, Range<usize>)) -> Step<StatusLine> {
        self.skip_blank_lines()?;
        let http11 = self.version()?;
        self.expect(b' ')?;
        let status = self.status()?;
        let reason = self.reason()?;
        self.fields(field)?;
        Ok(StatusLine {
            len: self.at,
            http11,
            status,
            reason,
        })
    }

    #[inline(always)]
    fn next(&mut self) -> Step<u8> {
        let b = *self.buf.get(self.at).ok_or(Stop::Partial)?;
        self.at += 1;
        Ok(b)
    }

    fn expect(&mut self, want: u8) -> Step<()> {
        if self.next()? == want {
            Ok(())
        } else {
            Err(Stop::Malformed)
        }
    }

    /// The rest of a line's end after `b`, its first byte: CR LF, or LF alone (noted).
    #[inline(always)]
    fn end_of_line(&mut self, b: u8) -> Step<()> {
        match b {
            b'\r' => self.expect(b'\n'),
            b'\n' => {
                self.bare_lf = true;
                Ok(())
            }
            _ => Err(Stop::Malformed),
        }
    }

    fn line_end(&mut self) -> Step<()> {
        let b = self.next()?;
        self.end_of_line(b)
    }

    /// Blank lines before the first line are skipped (RFC 9112 §2.2).
    fn skip_blank_lines(&mut self) -> Step<()> {
        loop {
            match self.buf.get(self.at) {
                None => return Err(Stop::Partial),
                Some(&b @ (b'\r' | b'\n')) => {
                    self.at += 1;
                    self.end_of_line(b)?;
                }
                Some(_) => return Ok(()),
            }
        }
    }

    /// A token, then one space.
    fn method(&mut self) -> Step<Range<usize>> {
        let start = self.at;
        if !TCHAR[usize::from(self.next()?)] {
            return Err(Stop::Malformed);
        }
        loop {
            match self.next()? {
                b' ' => return Ok(start..self.at - 1),
                b if TCHAR[usize::from(b)] => {}
                _ => return Err(Stop::Malformed),
            }
        }
    }

    /// Visible bytes (obs-text too, if the whole is UTF-8), then one space.
    fn target(&mut self) -> Step<Range<usize>> {
        let start = self.at;
        self.at = self.scan(start, 0x21);
        let end = self.at;
        self.expect(b' ')?;
        let target = &self.buf[start..end];
        if target.is_empty() || (!target.is_ascii() && std::str::from_utf8(target).is_err()) {
            return Err(Stop::Malformed);
        }
        Ok(start..end)
    }

    /// `HTTP/1.0` or `HTTP/1.1`; whether it is 1.1.
    fn version(&mut self) -> Step<bool> {
        let rest = &self.buf[self.at..];
        match rest.first_chunk::<8>() {
            Some(b"HTTP/1.1") => {}
            Some(b"HTTP/1.0") => {
                self.at += 8;
                return Ok(false);
            }
            Some(_) => return Err(Stop::Malformed),
            None => {
                // Too short to know: partial while it could still become one.
                let seen = rest.len().min(7);
                return Err(if rest[..seen] == b"HTTP/1."[..seen] {
                    Stop::Partial
                } else {
                    Stop::Malformed
                });
            }
        }
        self.at += 8;
        Ok(true)
    }

    /// Three digits.
    fn status(&mut self) -> Step<u16> {
        let mut status = 0;
        for _ in 0..3 {
            let b = self.next()?;
            if !b.is_ascii_digit() {
                return Err(Stop::Malformed);
            }
            status = status * 10 + u16::from(b - b'0');
        }
        Ok(status)
    }

    /// After the status: the line's end, or a space, a reason phrase and then the end.
    fn reason(&mut self) -> Step<Range<usize>> {
        let b = self.next()?;
        if b != b' ' {
            self.end_of_line(b)?;
            return Ok(0..0);
        }
        let start = self.at;
        self.at = self.scan(start, 0x20);
        let end = self.at;
        self.line_end()?;
        let reason = &self.buf[start..end];
        Ok(if reason.is_empty() || !reason.is_ascii() {
            0..0
        } else {
            start..end
        })
    }

    /// Field lines through the blank line that ends the head.
    fn fields(&mut self, mut field: impl FnMut(Range<usize>, Range<usize>)) -> Step<()> {
        let buf = self.buf;
        let mut count = 0;
        loop {
            let start = self.at;
            let end = self.name_end(start);
            if end == start {
                // No name: the blank line that ends the head, or no field line at all.
                let b = self.next()?;
                return self.end_of_line(b);
            }
            match buf.get(end) {
                Some(b':') => {}
                Some(_) => return Err(Stop::Malformed),
                None => return Err(Stop::Partial),
            }
            self.at = end + 1;
            let value = self.value()?;
            if count == MAX_FIELDS {
                return Err(Stop::TooManyFields);
            }
            count += 1;
            field(start..end, value);
        }
    }

    /// A value after its colon, through its line's end; without whitespace either side. An
    /// empty one is where its line ends.
    #[inline(always)]
    fn value(&mut self) -> Step<Range<usize>> {
        // Nearly every value follows one space: passed over before the scan.
        let start = self.at + usize::from(self.buf.get(self.at) == Some(&b' '));
        let end = self.scan(start, 0x20);
        self.at = end;
        self.line_end()?;
        // Between `start` and `end` are only HTAB, SP, VCHAR and obs-text: ASCII whitespace
        // there is SP and HTAB, what a value is trimmed of. (All of it whitespace: `end..end`.)
        let raw = &self.buf[start..end];
        let first = start + (raw.len() - raw.trim_ascii_start().len());
        let last = first + self.buf[first..end].trim_ascii_end().len();
        Ok(first..last)
    }

    /// From `from`, the first byte that is no `tchar`; or the end. Eight bytes are looked up
    /// at once, without a branch for each.
    #[inline(always)]
    fn name_end(&self, mut from: usize) -> usize {
        let buf = self.buf;
        #[cfg(target_arch = "x86_64")]
        match super::wide::first_marked(buf, from, super::wide::non_tchar) {
            Ok(end) => return end,
            Err(rest) => from = rest,
        }
        while let Some(word) = buf.get(from..).and_then(<[u8]>::first_chunk::<8>) {
            let mut tokens = 0u32;
            for (i, &b) in word.iter().enumerate() {
                tokens |= u32::from(TCHAR[usize::from(b)]) << i;
            }
            let run = tokens.trailing_ones() as usize;
            from += run;
            if run < 8 {
                return from;
            }
        }
        while buf.get(from).is_some_and(|&b| TCHAR[usize::from(b)]) {
            from += 1;
        }
        from
    }

    /// From `from`, the first byte below `limit` or DEL, except a HTAB when `limit` lets
    /// spaces through (values and reasons take HTAB; targets take neither); or the end.
    #[inline(always)]
    fn scan(&self, mut from: usize, limit: u8) -> usize {
        let buf = self.buf;
        let tabs = limit == 0x20;
        #[cfg(target_arch = "x86_64")]
        match super::wide::first_marked(buf, from, |chunk| super::wide::stops(chunk, limit, tabs)) {
            Ok(stop) => return stop,
            Err(rest) => from = rest,
        }
        while let Some(word) = buf.get(from..).and_then(<[u8]>::first_chunk::<8>) {
            let stops = below_or_del(u64::from_le_bytes(*word), limit);
            if stops == 0 {
                from += 8;
                continue;
            }
            from += (stops.trailing_zeros() / 8) as usize;
            if !(tabs && buf[from] == b'\t') {
                return from;
            }
            from += 1;
        }
        while let Some(&b) = buf.get(from) {
            let stop = b < limit && !(tabs && b == b'\t') || b == 0x7f;
            if stop {
                break;
            }
            from += 1;
        }
        from
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::super::syntax_reference::{httparse_request, httparse_response, request, response};
    use super::*;

    /// Both readers on `head`, whole and at every length short of it.
    fn agree(head: &[u8]) {
        for end in (0..=head.len()).rev() {
            let cut = &head[..end];
            assert_eq!(request(cut), httparse_request(cut), "request {cut:?}");
            assert_eq!(response(cut), httparse_response(cut), "response {cut:?}");
        }
    }

    fn pick<'a>(rng: &mut SmallRng, from: &[&'a [u8]]) -> &'a [u8] {
        from[rng.random_range(0..from.len())]
    }

    /// A head that is nearly always valid, with each of its parts now and then replaced by
    /// one that is not, or unusual.
    fn generated(rng: &mut SmallRng) -> Vec<u8> {
        let mut head = Vec::new();
        let odd = |rng: &mut SmallRng| rng.random_ratio(1, 24);
        let eol = |rng: &mut SmallRng| {
            if rng.random_ratio(1, 40) {
                pick(rng, &[b"\n", b"\r", b"\r\r\n", b"\n\r", b" \r\n"])
            } else {
                &b"\r\n"[..]
            }
        };
        if odd(rng) {
            head.extend_from_slice(pick(rng, &[b"\r\n", b"\n", b"\r\n\r\n", b"\rx"]));
        }
        if rng.random_bool(0.5) {
            let method = if odd(rng) {
                pick(
                    rng,
                    &[
                        b"",
                        b"G T",
                        b"G\x00T",
                        b"M-SEARCH",
                        b"~!#$%&'*+.^_`|",
                        b"P\xc3\xa9",
                    ],
                )
            } else {
                pick(rng, &[b"GET", b"POST", b"HEAD", b"CONNECT", b"OPTIONS"])
            };
            head.extend_from_slice(method);
            head.extend_from_slice(if odd(rng) {
                pick(rng, &[b"  ", b"\t", b""])
            } else {
                b" "
            });
            let target = if odd(rng) {
                pick(
                    rng,
                    &[
                        b"",
                        b"/\xc3\xa9t\xc3\xa9",
                        b"/\xff",
                        b"/\xc3",
                        b"/a\x7fb",
                        b"/a\tb",
                        b"/a b",
                        b"/\"<>\\^`{|}",
                    ],
                )
            } else {
                pick(
                    rng,
                    &[
                        b"/",
                        b"/a/b?c=1&d=2",
                        b"*",
                        b"http://a.example:8080/x",
                        b"a.example:443",
                        b"/0123456789abcdef0123456789abcdef0123456789abcdef/xyz",
                    ],
                )
            };
            head.extend_from_slice(target);
            head.extend_from_slice(if odd(rng) {
                pick(rng, &[b"  ", b""])
            } else {
                b" "
            });
            head.extend_from_slice(version(rng));
        } else {
            head.extend_from_slice(version(rng));
            head.extend_from_slice(if odd(rng) {
                pick(rng, &[b"  ", b"", b"\t"])
            } else {
                b" "
            });
            head.extend_from_slice(if odd(rng) {
                pick(rng, &[b"20", b"2x0", b"1000", b" 200"])
            } else {
                pick(rng, &[b"200", b"101", b"304", b"503"])
            });
            head.extend_from_slice(if odd(rng) {
                pick(
                    rng,
                    &[
                        b"",
                        b" ",
                        b" OK ",
                        b" \xe9t\xe9",
                        b" a\tb",
                        b" a\x7f",
                        b" a\x01",
                    ],
                )
            } else {
                pick(rng, &[b" OK", b" Service Unavailable"])
            });
        }
        head.extend_from_slice(eol(rng));
        let fields = match rng.random_range(0..40) {
            0 => rng.random_range(125..131),
            _ => rng.random_range(0..8),
        };
        for _ in 0..fields {
            let name = if odd(rng) {
                pick(
                    rng,
                    &[
                        b"",
                        b"Bad Name",
                        b"X\x00",
                        b"\xc3\xa9",
                        b" Lead",
                        b"Tail ",
                        b"a\tb",
                    ],
                )
            } else {
                pick(
                    rng,
                    &[
                        b"Host",
                        b"content-length",
                        b"X-Forwarded-For",
                        b"Connection",
                        b"x",
                    ],
                )
            };
            head.extend_from_slice(name);
            head.extend_from_slice(if odd(rng) {
                pick(rng, &[b" :", b"", b"::", b":\t \t"])
            } else {
                pick(rng, &[b": ", b":"])
            });
            let len = rng.random_range(0..40);
            for _ in 0..len {
                // Mostly visible bytes, now and then any at all.
                let b = if rng.random_ratio(1, 300) {
                    rng.random()
                } else {
                    rng.random_range(b' '..=b'~')
                };
                head.push(b);
            }
            if odd(rng) {
                head.extend_from_slice(pick(rng, &[b" ", b"\t", b" \t ", b"\r\n continued"]));
            }
            head.extend_from_slice(eol(rng));
        }
        head.extend_from_slice(eol(rng));
        if rng.random_bool(0.5) {
            head.extend_from_slice(b"body");
        }
        head
    }

    fn version(rng: &mut SmallRng) -> &'static [u8] {
        if rng.random_ratio(1, 8) {
            pick(
                rng,
                &[
                    b"HTTP/1.2",
                    b"HTTP/2.0",
                    b"http/1.1",
                    b"HTTP/1.",
                    b"HTTP/1.1x",
                ],
            )
        } else {
            pick(rng, &[b"HTTP/1.1", b"HTTP/1.0"])
        }
    }

    #[test]
    fn reads_heads_as_httparse_does() {
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        let (mut complete, mut malformed) = (0, 0);
        for _ in 0..4_000 {
            let mut head = generated(&mut rng);
            // A quarter get one byte changed to any value at all.
            if rng.random_ratio(1, 4) && !head.is_empty() {
                let at = rng.random_range(0..head.len());
                head[at] = rng.random();
            }
            agree(&head);
            match (request(&head), response(&head)) {
                (Syntax::Complete(_), _) | (_, Syntax::Complete(_)) => complete += 1,
                (Syntax::Malformed, Syntax::Malformed) => malformed += 1,
                _ => {}
            }
        }
        // The generator reaches both outcomes, each often.
        assert!(
            complete > 1_000 && malformed > 1_000,
            "{complete} {malformed}"
        );
    }

    #[test]
    fn every_byte_in_every_place_of_a_head_is_read_as_httparse_does() {
        // Names, values and a target past sixteen bytes: each is read sixteen at a time too.
        let base = b"GET /a/b/c/d/e/f/g?h HTTP/1.1\r\nHost: a.example\r\nX-Long-Value: 0123456789abcdef \r\n\
Empty:\r\nX-A-Rather-Long-Name: v\r\n\r\n";
        let status = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Value:  v a l u e\t\r\n\r\n";
        for head in [&base[..], &status[..]] {
            for at in 0..head.len() {
                for b in 0..=255u8 {
                    let mut changed = head.to_vec();
                    changed[at] = b;
                    assert_eq!(request(&changed), httparse_request(&changed), "{changed:?}");
                    assert_eq!(
                        response(&changed),
                        httparse_response(&changed),
                        "{changed:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_plain_head_reads_as_expected() {
        let raw = b"\r\nGET /x HTTP/1.1\r\nHost:  a \t\r\nEmpty: \r\n\r\nbody";
        let Syntax::Complete((line, fields)) = request(raw) else {
            panic!("not complete");
        };
        assert_eq!(
            (line.len, line.http11, line.bare_lf),
            (raw.len() - 4, true, false)
        );
        assert_eq!(&raw[line.method], b"GET");
        assert_eq!(&raw[line.target], b"/x");
        let text: Vec<_> = fields
            .iter()
            .map(|(n, v)| (&raw[n.clone()], &raw[v.clone()]))
            .collect();
        assert_eq!(text, [(&b"Host"[..], &b"a"[..]), (b"Empty", b"")]);
        assert_eq!(
            request(b"GET / HTTP/1.1\nHost: a\r\n\r\n"),
            httparse_request(b"GET / HTTP/1.1\nHost: a\r\n\r\n")
        );
        let bare = request(b"GET / HTTP/1.1\nHost: a\r\n\r\n");
        assert!(matches!(bare, Syntax::Complete((line, _)) if line.bare_lf));
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            "X: y\r\n".repeat(MAX_FIELDS + 1)
        );
        assert_eq!(request(many.as_bytes()), Syntax::TooManyFields);
    }
}
