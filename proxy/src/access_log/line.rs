//! One access-log line as bytes, in JSON or logfmt: pure formatting, no I/O. A line is written
//! in three parts as the request goes, because what the first part reads (the client's head,
//! in the byte engine's buffer) is gone by the time the last is known:
//! [`begin`] the request's side, [`answered`] what came back (or why nothing did), [`end`] the
//! bytes and times once the response body is done.
//!
//! Values are escaped so that a line is always one valid JSON object or one logfmt line,
//! whatever bytes a client put in its target or headers (obs-text included): nothing a
//! client sends can end a line or forge a field.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

/// How lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// One JSON object a line (the default: what log pipelines parse without a pattern).
    #[default]
    Json,
    /// `key=value` pairs, quoted where needed (Heroku's and Go's logfmt).
    Logfmt,
}

/// The request's side: known once its head is parsed and matched.
pub struct RequestSide<'a> {
    pub listener: &'a str,
    pub client: SocketAddr,
    /// The identity the client's certificate gave (mutual TLS).
    pub identity: Option<&'a str>,
    /// `HTTP/1.1`, `HTTP/1.0` or `HTTP/2`.
    pub protocol: &'static str,
    pub method: &'a [u8],
    pub authority: Option<&'a [u8]>,
    /// The request target as received; its query is cut unless `query`.
    pub target: &'a [u8],
    pub query: bool,
    /// None: the request matched no route.
    pub route: Option<&'a str>,
    pub traceparent: Option<&'a [u8]>,
    pub request_id: Option<&'a [u8]>,
}

/// What came back, known when the response head arrived or the exchange failed.
pub struct Answer<'a> {
    /// The backend the request ended on (after a fallback, the other one).
    pub backend: Option<&'a str>,
    /// The upstream endpoint's address.
    pub upstream: Option<&'a str>,
    /// None: the client had no response (it went away first).
    pub status: Option<u16>,
    /// Why the upstream gave no (whole) answer: `connect`, `timeout`, `reset`, `route_timeout`,
    /// `client_gone`, …
    pub failure: Option<&'static str>,
    /// From the request's head to the upstream's response head.
    pub first_byte: Option<Duration>,
    /// Sends again after a stale or refused connection, and the connect fallback.
    pub retries: u32,
    /// The request went to another backend than the split chose (a failed connect).
    pub fallback: bool,
}

/// The end: body bytes each way and the whole duration.
pub struct Totals {
    /// Body bytes, as relayed (Envoy's BYTES_RECEIVED / BYTES_SENT): on the HTTP/1 byte engine a
    /// chunked body counts its chunk framing.
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// From the request's head to the response's last byte.
    pub duration: Duration,
    /// A failure found while relaying the response body (the upstream or the client went away
    /// mid-body); None when the answer's own `failure` says it all.
    pub failure: Option<&'static str>,
}

/// A field's name as each format writes it, separator first: made at compile time, so writing
/// a key is one copy of a few bytes.
struct Key {
    json: &'static [u8],
    logfmt: &'static [u8],
}

macro_rules! key {
    ($name:literal) => {
        Key {
            json: concat!(",\"", $name, "\":").as_bytes(),
            logfmt: concat!(" ", $name, "=").as_bytes(),
        }
    };
}

/// Writes the start of a line: time and the request's side.
pub fn begin(out: &mut Vec<u8>, format: Format, now: SystemTime, req: &RequestSide<'_>) {
    let mut w = Writer { out, format };
    // The first key has no separator before it.
    match format {
        Format::Json => w.out.extend_from_slice(b"{\"time\":\""),
        Format::Logfmt => w.out.extend_from_slice(b"time="),
    }
    rfc3339(w.out, now);
    if format == Format::Json {
        w.out.push(b'"');
    }
    w.name(key!("listener"), req.listener);
    w.key(key!("client"));
    w.quote();
    address(w.out, req.client);
    w.quote();
    if let Some(identity) = req.identity {
        // From a verified certificate, but its SAN is the issuer's text: escaped.
        w.str(key!("client_identity"), identity.as_bytes());
    }
    w.name(key!("protocol"), req.protocol);
    w.str(key!("method"), req.method);
    if let Some(authority) = req.authority {
        w.str(key!("authority"), authority);
    }
    let target = if req.query {
        req.target
    } else {
        let end = req
            .target
            .iter()
            .position(|&b| b == b'?')
            .unwrap_or(req.target.len());
        &req.target[..end]
    };
    w.str(key!("path"), target);
    match req.route {
        Some(route) => w.name(key!("route"), route),
        None => w.null(key!("route")),
    }
    if let Some(t) = req.traceparent {
        w.str(key!("traceparent"), t);
    }
    if let Some(id) = req.request_id {
        w.str(key!("request_id"), id);
    }
}

/// Writes what came back.
pub fn answered(out: &mut Vec<u8>, format: Format, answer: &Answer<'_>) {
    let mut w = Writer { out, format };
    if let Some(backend) = answer.backend {
        w.name(key!("backend"), backend);
    }
    if let Some(upstream) = answer.upstream {
        w.name(key!("upstream"), upstream);
    }
    match answer.status {
        Some(status) => w.num(key!("status"), status.into()),
        None => w.null(key!("status")),
    }
    if let Some(failure) = answer.failure {
        w.name(key!("failure"), failure);
    }
    if let Some(first) = answer.first_byte {
        w.ms(key!("first_byte_ms"), first);
    }
    w.num(key!("retries"), answer.retries.into());
    if answer.fallback {
        w.key(key!("fallback"));
        w.out.extend_from_slice(b"true");
    }
}

/// Writes the end of the line, newline included.
pub fn end(out: &mut Vec<u8>, format: Format, totals: &Totals) {
    let mut w = Writer { out, format };
    if let Some(failure) = totals.failure {
        w.name(key!("body_failure"), failure);
    }
    w.num(key!("request_bytes"), totals.request_bytes);
    w.num(key!("response_bytes"), totals.response_bytes);
    w.ms(key!("duration_ms"), totals.duration);
    if format == Format::Json {
        out.push(b'}');
    }
    out.push(b'\n');
}

struct Writer<'o> {
    out: &'o mut Vec<u8>,
    format: Format,
}

impl Writer<'_> {
    fn key(&mut self, key: Key) {
        self.out.extend_from_slice(match self.format {
            Format::Json => key.json,
            Format::Logfmt => key.logfmt,
        });
    }

    /// A JSON string's quote (logfmt needs none for the values written between two).
    fn quote(&mut self) {
        if self.format == Format::Json {
            self.out.push(b'"');
        }
    }

    fn str(&mut self, key: Key, value: &[u8]) {
        self.key(key);
        match self.format {
            Format::Json => json_string(self.out, value),
            Format::Logfmt => logfmt_value(self.out, value),
        }
    }

    /// A value weir names itself — a listener, route or backend name (the config's checks and
    /// Kubernetes' object names allow no quote, backslash, space, `=` or control), an address,
    /// a protocol, a failure kind: written without the scan for bytes to escape, which a
    /// client's values need. Checked in debug builds.
    fn name(&mut self, key: Key, value: &str) {
        debug_assert!(
            value
                .bytes()
                .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\' | b'=')),
            "{value:?} needs escaping"
        );
        self.key(key);
        self.quote();
        self.out.extend_from_slice(value.as_bytes());
        self.quote();
    }

    fn null(&mut self, key: Key) {
        match self.format {
            Format::Json => {
                self.key(key);
                self.out.extend_from_slice(b"null");
            }
            // logfmt has no null: an absent key says it.
            Format::Logfmt => {}
        }
    }

    fn num(&mut self, key: Key, value: u64) {
        self.key(key);
        decimal(self.out, value);
    }

    /// Milliseconds with three decimals (microseconds).
    fn ms(&mut self, key: Key, d: Duration) {
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.num(key, micros / 1000);
        let frac = micros % 1000;
        self.out.extend_from_slice(&[
            b'.',
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ]);
    }
}

/// `value` in decimal, two digits a division.
fn decimal(out: &mut Vec<u8>, value: u64) {
    if value < 10 {
        out.push(b'0' + value as u8);
        return;
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut v = value;
    while v >= 100 {
        let pair = usize::from((v % 100) as u8) * 2;
        v /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = usize::from(v as u8) * 2;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + v as u8;
    }
    out.extend_from_slice(&digits[at..]);
}

/// "00", "01", … "99".
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `a.b.c.d:port` written digit by digit (`Display` goes through the formatting machinery, a
/// tenth of a line's cost); IPv6 through `Display`, as `[addr]:port`.
fn address(out: &mut Vec<u8>, addr: SocketAddr) {
    match addr {
        SocketAddr::V4(v4) => {
            let [a, b, c, d] = v4.ip().octets();
            for (i, octet) in [a, b, c, d].into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                decimal(out, octet.into());
            }
            out.push(b':');
            decimal(out, v4.port().into());
        }
        SocketAddr::V6(v6) => {
            use std::io::Write;
            let _ = write!(out, "{v6}");
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A JSON string of `value`: valid UTF-8 kept (controls, `"` and `\\` escaped); any byte of
/// an invalid sequence written as `\u00XX`, its Latin-1 reading, so the line stays valid JSON.
/// Nearly every value is printable ASCII: found so in one pass and copied whole.
fn json_string(out: &mut Vec<u8>, value: &[u8]) {
    out.push(b'"');
    let plain = value
        .iter()
        .position(|&b| !(b' '..=b'~').contains(&b) || b == b'"' || b == b'\\')
        .unwrap_or(value.len());
    out.extend_from_slice(&value[..plain]);
    let mut rest = &value[plain..];
    while !rest.is_empty() {
        let (valid, bad) = match std::str::from_utf8(rest) {
            Ok(s) => (s.as_bytes(), None),
            Err(e) => {
                let (ok, after) = rest.split_at(e.valid_up_to());
                let n = e.error_len().unwrap_or(after.len());
                (ok, Some(&after[..n]))
            }
        };
        for &b in valid {
            match b {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                0..=0x1f | 0x7f => unicode_escape(out, b),
                _ => out.push(b),
            }
        }
        rest = &rest[valid.len()..];
        if let Some(bad) = bad {
            for &b in bad {
                unicode_escape(out, b);
            }
            rest = &rest[bad.len()..];
        }
    }
    out.push(b'"');
}

fn unicode_escape(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(b"\\u00");
    out.push(HEX[usize::from(b >> 4)]);
    out.push(HEX[usize::from(b & 0xf)]);
}

/// A logfmt value: bare when it is printable ASCII without space, `"` or `=`; else quoted with
/// `"` and `\` escaped and any other byte outside printable ASCII as `\xXX`.
fn logfmt_value(out: &mut Vec<u8>, value: &[u8]) {
    let bare = !value.is_empty()
        && value
            .iter()
            .all(|&b| b.is_ascii_graphic() && b != b'"' && b != b'=' && b != b'\\');
    if bare {
        out.extend_from_slice(value);
        return;
    }
    out.push(b'"');
    for &b in value {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b' '..=b'~' => out.push(b),
            _ => {
                out.extend_from_slice(b"\\x");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
        }
    }
    out.push(b'"');
}

/// `2026-12-07T14:20:01.123Z`: UTC, milliseconds. The date part is kept per thread and made
/// again only when the second changes, so most lines copy it.
fn rfc3339(out: &mut Vec<u8>, now: SystemTime) {
    let since = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let millis = since.subsec_millis();
    SECOND.with(|cached| {
        let mut cached = cached.borrow_mut();
        if cached.0 != secs || cached.1.is_empty() {
            cached.0 = secs;
            cached.1.clear();
            crate::rfc3339::date_time(&mut cached.1, secs);
        }
        out.extend_from_slice(&cached.1);
    });
    out.extend_from_slice(&[
        b'.',
        b'0' + (millis / 100) as u8,
        b'0' + (millis / 10 % 10) as u8,
        b'0' + (millis % 10) as u8,
        b'Z',
    ]);
}

thread_local! {
    static SECOND: std::cell::RefCell<(u64, Vec<u8>)> = const { std::cell::RefCell::new((0, Vec::new())) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(target: &'a [u8], query: bool) -> RequestSide<'a> {
        RequestSide {
            listener: "main",
            client: "10.0.0.9:41000".parse().unwrap(),
            identity: Some("spiffe://prod/ns/web/sa/frontend"),
            protocol: "HTTP/1.1",
            method: b"GET",
            authority: Some(b"shop.example"),
            target,
            query,
            route: Some("shop"),
            traceparent: Some(b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            request_id: None,
        }
    }

    fn answer() -> Answer<'static> {
        Answer {
            backend: Some("canary"),
            upstream: Some("127.0.0.1:9002"),
            status: Some(503),
            failure: None,
            first_byte: Some(Duration::from_micros(1_234)),
            retries: 1,
            fallback: true,
        }
    }

    fn totals() -> Totals {
        Totals {
            request_bytes: 0,
            response_bytes: 512,
            duration: Duration::from_micros(2_005),
            failure: None,
        }
    }

    fn line(format: Format, target: &[u8], query: bool) -> String {
        let mut out = Vec::new();
        // 2026-12-07T14:20:01.123Z
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_653_201_123);
        begin(&mut out, format, now, &request(target, query));
        answered(&mut out, format, &answer());
        end(&mut out, format, &totals());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_json_line_is_one_object_with_every_field() {
        let text = line(Format::Json, b"/cart?token=secret", false);
        assert!(text.ends_with("}\n") && text.matches('\n').count() == 1);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["time"], "2026-12-07T14:20:01.123Z");
        assert_eq!(v["listener"], "main");
        assert_eq!(v["client"], "10.0.0.9:41000");
        assert_eq!(v["client_identity"], "spiffe://prod/ns/web/sa/frontend");
        assert_eq!(v["protocol"], "HTTP/1.1");
        assert_eq!(v["method"], "GET");
        assert_eq!(v["authority"], "shop.example");
        assert_eq!(v["path"], "/cart", "the query is left out unless asked for");
        assert_eq!(v["route"], "shop");
        assert_eq!(v["backend"], "canary");
        assert_eq!(v["upstream"], "127.0.0.1:9002");
        assert_eq!(v["status"], 503);
        assert_eq!(v["first_byte_ms"], 1.234);
        assert_eq!(v["retries"], 1);
        assert_eq!(v["fallback"], true);
        assert_eq!(v["request_bytes"], 0);
        assert_eq!(v["response_bytes"], 512);
        assert_eq!(v["duration_ms"], 2.005);
        assert_eq!(
            v["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert!(v.get("request_id").is_none() && v.get("failure").is_none());
    }

    #[test]
    fn the_query_is_kept_when_asked_for() {
        let v: serde_json::Value =
            serde_json::from_str(&line(Format::Json, b"/cart?a=1", true)).unwrap();
        assert_eq!(v["path"], "/cart?a=1");
    }

    #[test]
    fn hostile_bytes_cannot_break_a_json_line() {
        let target = b"/a\"b\\c\n\x01\xff\xfe\xc3\xa9";
        let text = line(Format::Json, target, true);
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["path"], "/a\"b\\c\n\u{1}\u{ff}\u{fe}é");
    }

    #[test]
    fn a_logfmt_line_quotes_what_needs_it() {
        let text = line(Format::Logfmt, b"/a b=\"c\"\n\xff", true);
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        assert!(text.starts_with("time=2026-12-07T14:20:01.123Z listener=main "));
        assert!(text.contains(r#" path="/a b=\"c\"\x0a\xff" "#), "{text}");
        assert!(text.contains(" status=503 "));
        assert!(text.contains(" duration_ms=2.005\n"));
    }

    #[test]
    fn a_request_without_a_response_says_so() {
        let mut out = Vec::new();
        let mut req = request(b"/", false);
        req.route = None;
        begin(&mut out, Format::Json, SystemTime::now(), &req);
        let mut a = answer();
        a.status = None;
        a.failure = Some("client_gone");
        answered(&mut out, Format::Json, &a);
        end(&mut out, Format::Json, &totals());
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(v["status"].is_null() && v["route"].is_null());
        assert_eq!(v["failure"], "client_gone");
    }

    #[test]
    fn numbers_and_addresses_are_written_in_decimal() {
        for v in [
            0u64,
            7,
            10,
            42,
            99,
            100,
            101,
            999,
            1000,
            65535,
            1_234_567,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            decimal(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
        for a in ["10.0.0.9:41000", "255.255.255.255:0", "[::1]:8080"] {
            let mut out = Vec::new();
            address(&mut out, a.parse().unwrap());
            assert_eq!(String::from_utf8(out).unwrap(), a);
        }
    }
}
