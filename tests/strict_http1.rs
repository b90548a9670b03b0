//! Strict HTTP/1 in both engines (issue 12): one corpus of request heads — hostile, malformed,
//! unusual and plain, from RFC 9112 §2.2, §3, §6, §7 and §11 — sent to weir with the
//! passthrough engine and to weir with the hyper engine, each in front of an upstream that
//! records every request it receives. Each vector states what must happen (forwarded, or
//! refused with a status and the connection closed); and the two engines must agree on the
//! status, on whether the connection stays, and on what the upstream received.
//! Real sockets on 127.0.0.1.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::weir::Weir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const LIMIT: Duration = Duration::from_secs(5);

/// An upstream that records each request head it receives (and reads its body, by
/// Content-Length or chunked), and answers 200 "ok" keeping the connection.
async fn recording_upstream() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let record = record.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    let Some(end) = read_until(&mut tcp, &mut buf, b"\r\n\r\n").await else {
                        return;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    buf.drain(..end);
                    let lower = head.to_ascii_lowercase();
                    if lower.contains("transfer-encoding: chunked") {
                        let end = loop {
                            if let Some(end) = chunked_end(&buf) {
                                break end;
                            }
                            let mut chunk = [0u8; 4096];
                            match tcp.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(k) => buf.extend_from_slice(&chunk[..k]),
                            }
                        };
                        buf.drain(..end);
                    } else if let Some(n) = lower
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                    {
                        while buf.len() < n {
                            let mut chunk = [0u8; 4096];
                            match tcp.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(k) => buf.extend_from_slice(&chunk[..k]),
                            }
                        }
                        buf.drain(..n);
                    }
                    record.lock().unwrap().push(head);
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                    if tcp.write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

/// Where a chunked body at the start of `buf` ends (after its trailers), once it is all there.
fn chunked_end(buf: &[u8]) -> Option<usize> {
    let line_end = |from: usize| {
        buf[from..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|i| from + i)
    };
    let mut at = 0;
    loop {
        let end = line_end(at)?;
        let size_text = String::from_utf8_lossy(&buf[at..end]);
        let size_hex = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16).ok()?;
        at = end + 2;
        if size == 0 {
            // Trailer lines, then the empty one.
            loop {
                let end = line_end(at)?;
                let empty = end == at;
                at = end + 2;
                if empty {
                    return Some(at);
                }
            }
        }
        at += size + 2;
        if at > buf.len() {
            return None;
        }
    }
}

/// Reads until `buf` contains `end`; the index just past it.
async fn read_until(tcp: &mut TcpStream, buf: &mut Vec<u8>, end: &[u8]) -> Option<usize> {
    loop {
        if let Some(at) = buf.windows(end.len()).position(|w| w == end) {
            return Some(at + end.len());
        }
        let mut chunk = [0u8; 4096];
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// What a client saw: each response's status in order, and whether the connection closed
/// after the last one.
#[derive(Debug, PartialEq)]
struct Seen {
    statuses: Vec<u16>,
    closed: bool,
}

/// Sends `bytes` on a fresh connection and reads `responses` responses (fewer if it closes).
async fn exchange(addr: SocketAddr, bytes: &[u8], responses: usize) -> Seen {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(bytes).await.unwrap();
    let mut buf = Vec::new();
    let mut statuses = Vec::new();
    while statuses.len() < responses {
        let read = tokio::time::timeout(LIMIT, read_until(&mut tcp, &mut buf, b"\r\n\r\n")).await;
        let Ok(Some(end)) = read else { break };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        statuses.push(head[9..12].parse().unwrap_or(0));
        let length = head
            .to_ascii_lowercase()
            .lines()
            .find_map(|l| {
                l.strip_prefix("content-length:")
                    .map(|v| v.trim().to_string())
            })
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        while buf.len() < length {
            let mut chunk = [0u8; 4096];
            match tokio::time::timeout(LIMIT, tcp.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => break,
            }
        }
        buf.drain(..length.min(buf.len()));
    }
    // Closed: the peer ends the stream soon after its last response.
    let mut rest = [0u8; 256];
    let closed = matches!(
        tokio::time::timeout(Duration::from_millis(500), tcp.read(&mut rest)).await,
        Ok(Ok(0)) | Ok(Err(_))
    );
    Seen { statuses, closed }
}

/// A recorded head as a comparable set: the request line and each field, names lower-cased.
fn normalized(head: &str) -> Vec<String> {
    let mut lines = head.lines();
    let mut out = vec![lines.next().unwrap_or("").to_string()];
    let mut fields: Vec<String> = lines
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(':') {
            Some((n, v)) => format!("{}: {}", n.trim().to_ascii_lowercase(), v.trim()),
            None => l.to_string(),
        })
        .collect();
    fields.sort();
    out.extend(fields);
    out
}

/// What a vector must come to.
enum Expect {
    /// Answered by the upstream (200), the connection kept.
    Forwarded,
    /// Refused with this status, the connection closed, nothing forwarded.
    Refused(u16),
    /// Only that both engines agree (shapes with more than one reasonable answer).
    Agree,
}

struct Vector {
    name: &'static str,
    bytes: &'static [u8],
    expect: Expect,
}

fn corpus() -> Vec<Vector> {
    use Expect::*;
    let v = |name, bytes, expect| Vector {
        name,
        bytes,
        expect,
    };
    vec![
        v("plain GET", b"GET /a?b=1 HTTP/1.1\r\nHost: app\r\n\r\n", Forwarded),
        v("POST with a length", b"POST /p HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\n\r\nhello", Forwarded),
        v("POST chunked", b"POST /p HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", Forwarded),
        v("chunk extension and trailer", b"POST /p HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n", Forwarded),
        v("h2c upgrade (smuggling)", b"GET / HTTP/1.1\r\nHost: app\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n", Forwarded),
        v("HTTP/1.0 without Host", b"GET / HTTP/1.0\r\n\r\n", Agree),
        v("absolute-form agreeing with Host", b"GET http://app/x HTTP/1.1\r\nHost: app\r\n\r\n", Forwarded),
        v("Connection naming a field", b"GET / HTTP/1.1\r\nHost: app\r\nConnection: X-Secret\r\nX-Secret: 1\r\n\r\n", Forwarded),
        v("obs-text in a value", b"GET / HTTP/1.1\r\nHost: app\r\nX-Name: caf\xe9\r\n\r\n", Forwarded),
        v("CL with TE (CL.TE)", b"POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nSMUGGLED", Refused(400)),
        v("TE with CL (TE.CL)", b"POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\nGPOST / HTTP/1.1\r\n\r\n0\r\n\r\n", Refused(400)),
        v("bare LF ending the request line", b"GET / HTTP/1.1\nHost: app\r\n\r\n", Refused(400)),
        v("bare LF ending a field", b"GET / HTTP/1.1\r\nHost: app\nX: 1\r\n\r\n", Refused(400)),
        v("bare LF ending the head", b"GET / HTTP/1.1\r\nHost: app\r\n\n", Refused(400)),
        v("HTTP/1.1 without Host", b"GET / HTTP/1.1\r\nX: 1\r\n\r\n", Refused(400)),
        v("two Host fields", b"GET / HTTP/1.1\r\nHost: app\r\nHost: evil\r\n\r\n", Refused(400)),
        v("Host with userinfo", b"GET / HTTP/1.1\r\nHost: evil@app\r\n\r\n", Refused(400)),
        v("Host with a path", b"GET / HTTP/1.1\r\nHost: app/evil\r\n\r\n", Refused(400)),
        v("absolute-form disagreeing with Host", b"GET http://evil/ HTTP/1.1\r\nHost: app\r\n\r\n", Refused(400)),
        v("absolute-form with userinfo", b"GET http://u@app/ HTTP/1.1\r\nHost: app\r\n\r\n", Refused(400)),
        v("fragment in the target", b"GET /a#b HTTP/1.1\r\nHost: app\r\n\r\n", Refused(400)),
        v("target of no form", b"GET a/b HTTP/1.1\r\nHost: app\r\n\r\n", Refused(400)),
        v("asterisk for GET", b"GET * HTTP/1.1\r\nHost: app\r\n\r\n", Refused(400)),
        v("TE in HTTP/1.0", b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Refused(400)),
        v("chunked twice", b"POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Refused(400)),
        v("chunked, chunked", b"POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", Refused(400)),
        v("chunked not last", b"POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", Refused(400)),
        v("unknown coding only", b"POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: gzip\r\n\r\n", Refused(400)),
        v("a coding before chunked", b"POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", Refused(501)),
        v("TE lookalike", b"POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", Refused(400)),
        v("two equal lengths", b"POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", Refused(400)),
        v("a length list", b"POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 1, 1\r\n\r\nx", Refused(400)),
        v("a signed length", b"POST / HTTP/1.1\r\nHost: app\r\nContent-Length: +1\r\n\r\nx", Refused(400)),
        v("a hex length", b"POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 0x1\r\n\r\nx", Refused(400)),
        v("obs-fold", b"GET / HTTP/1.1\r\nHost: app\r\nX: a\r\n b\r\n\r\n", Refused(400)),
        v("space before the colon", b"GET / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", Refused(400)),
        v("NUL in a value", b"GET / HTTP/1.1\r\nHost: app\r\nX: a\x00b\r\n\r\n", Refused(400)),
        v("a field name with @", b"GET / HTTP/1.1\r\nHost: app\r\nX@Y: 1\r\n\r\n", Refused(400)),
        v("two spaces in the request line", b"GET  / HTTP/1.1\r\nHost: app\r\n\r\n", Refused(400)),
        v("HTTP/1.2", b"GET / HTTP/1.2\r\nHost: app\r\n\r\n", Refused(400)),
        v("HTTP/2.0 in an HTTP/1 head", b"GET / HTTP/2.0\r\nHost: app\r\n\r\n", Refused(400)),
    ]
}

fn config(upstream: SocketAddr, engine: &str) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         limits: {{http1_engine: {engine}}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{upstream}\"]}}\n"
    )
}

struct Engine {
    weir: Weir,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Engine {
    async fn start(engine: &str) -> Engine {
        let (upstream, seen) = recording_upstream().await;
        let weir = Weir::start(&config(upstream, engine));
        Engine { weir, seen }
    }

    /// What the client saw and what the upstream received, for one vector.
    async fn run(&self, bytes: &[u8], responses: usize) -> (Seen, Vec<Vec<String>>) {
        self.seen.lock().unwrap().clear();
        let seen = exchange(self.weir.addr, bytes, responses).await;
        // An upstream's record lands before its answer is written: nothing is still in flight.
        let forwarded = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .map(|h| normalized(h))
            .collect();
        (seen, forwarded)
    }
}

#[tokio::test]
async fn both_engines_refuse_the_same_heads_and_forward_the_same_bytes() {
    let passthrough = Engine::start("passthrough").await;
    let hyper = Engine::start("hyper").await;
    let mut failures = Vec::new();
    for vector in corpus() {
        let (p_seen, p_forwarded) = passthrough.run(vector.bytes, 1).await;
        let (h_seen, h_forwarded) = hyper.run(vector.bytes, 1).await;
        let mut check = |ok: bool, what: String| {
            if !ok {
                failures.push(format!("{}: {what}", vector.name));
            }
        };
        check(
            p_seen == h_seen,
            format!("passthrough saw {p_seen:?}, hyper {h_seen:?}"),
        );
        check(
            p_forwarded == h_forwarded,
            format!("passthrough forwarded {p_forwarded:?}, hyper {h_forwarded:?}"),
        );
        for (engine, seen, forwarded) in [
            ("passthrough", &p_seen, &p_forwarded),
            ("hyper", &h_seen, &h_forwarded),
        ] {
            match vector.expect {
                Expect::Forwarded => {
                    check(
                        seen.statuses == [200] && !seen.closed && forwarded.len() == 1,
                        format!("{engine}: not forwarded: {seen:?} {forwarded:?}"),
                    );
                    let leaked = forwarded.iter().flatten().any(|l| {
                        ["upgrade:", "http2-settings:", "connection:", "x-secret:"]
                            .iter()
                            .any(|hop| l.starts_with(hop))
                    });
                    check(
                        !leaked,
                        format!("{engine}: hop-by-hop forwarded: {forwarded:?}"),
                    );
                }
                Expect::Refused(status) => check(
                    seen.statuses == [status] && seen.closed && forwarded.is_empty(),
                    format!("{engine}: not refused with {status}: {seen:?} {forwarded:?}"),
                ),
                Expect::Agree => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn a_refusal_behind_pipelined_requests_is_answered_in_order_and_nothing_after_it_passes() {
    for engine in ["passthrough", "hyper"] {
        let e = Engine::start(engine).await;
        let bytes = b"GET /one HTTP/1.1\r\nHost: app\r\n\r\n\
GET /two HTTP/1.1\nHost: app\r\n\r\n\
GET /smuggled HTTP/1.1\r\nHost: app\r\n\r\n";
        let (seen, forwarded) = e.run(bytes, 3).await;
        assert_eq!(seen.statuses, [200, 400], "{engine}");
        assert!(seen.closed, "{engine}");
        assert_eq!(forwarded.len(), 1, "{engine}: {forwarded:?}");
        assert!(
            forwarded[0][0].starts_with("GET /one "),
            "{engine}: {forwarded:?}"
        );
    }
}

#[tokio::test]
async fn a_broken_chunk_never_lets_what_follows_through() {
    // The chunk-size line ends in a bare LF: a parser that accepts it would find the smuggled
    // request inside the body.
    for engine in ["passthrough", "hyper"] {
        let e = Engine::start(engine).await;
        let bytes = b"POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n\
2;x\nxx\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: app\r\n\r\n";
        let (seen, forwarded) = e.run(bytes, 2).await;
        assert!(seen.closed, "{engine}: {seen:?}");
        assert!(
            !forwarded.iter().flatten().any(|l| l.contains("smuggled")),
            "{engine}: {forwarded:?}"
        );
        assert!(
            seen.statuses.iter().all(|&s| s != 200),
            "{engine}: {seen:?}"
        );
    }
}

/// RFC 9112 §7.1: a chunked body whose framing two readings would split differently — a bare LF
/// ending a trailer line, CR or LF inside a chunk extension's quoted-string — is never
/// forwarded whole, by either engine: the passthrough engine answers 400 (the body came with
/// the head), and the gate in front of hyper (whose own decoder would read on) ends the
/// connection. Either way the client gets no success and the upstream no complete request.
#[tokio::test]
async fn both_engines_refuse_chunked_bodies_that_two_readings_split_differently() {
    let bodies: [(&str, &[u8]); 3] = [
        (
            "a bare LF ending the trailer section",
            b"POST /t HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: a\r\n\nGET /smuggled HTTP/1.1\r\nHost: app\r\n\r\n",
        ),
        (
            "a bare LF ending a trailer line",
            b"POST /t HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: a\nGET /smuggled HTTP/1.1\r\nHost: app\r\n\r\n\r\n",
        ),
        (
            "CR LF inside a chunk extension's quoted-string",
            b"POST /t HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n3;a=\"x\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: app\r\n\r\n\"\r\nabc\r\n0\r\n\r\n",
        ),
    ];
    for engine in ["passthrough", "hyper"] {
        let e = Engine::start(engine).await;
        for (what, bytes) in bodies {
            let (seen, forwarded) = e.run(bytes, 2).await;
            assert!(
                seen.statuses.iter().all(|s| !(200..300).contains(s)),
                "{engine}, {what}: answered {:?}",
                seen.statuses
            );
            if engine == "passthrough" {
                assert_eq!(seen.statuses, [400], "{engine}, {what}");
            }
            assert!(seen.closed, "{engine}, {what}: the connection ends");
            assert!(
                forwarded.iter().all(|h| !h[0].contains("/smuggled")),
                "{engine}, {what}: a second request was smuggled: {forwarded:?}"
            );
            assert!(
                forwarded.is_empty(),
                "{engine}, {what}: forwarded {forwarded:?}"
            );
        }
    }
}
