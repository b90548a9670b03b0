//! Heads written for the other leg: the received head's bytes, less hop-by-hop fields, plus
//! the forwarding fields. Field names keep the sender's spelling; values are never re-parsed.

use http::header::HeaderName;
use http::StatusCode;

use super::head::{RequestHead, ResponseHead};
use crate::field::{Field, Kind};
use crate::pipeline::ClientInfo;

/// The upstream's copy of a client's request head (origin-form, HTTP/1.1). X-Forwarded-For is
/// appended to, never believed; X-Forwarded-Proto and -Host state what weir saw.
pub fn request_head(out: &mut Vec<u8>, buf: &[u8], head: &RequestHead, client: &ClientInfo) {
    request_head_keeping(out, buf, head, client, |_| true);
}

/// A mirror's copy of a bodiless request's head: the upstream's (`request_head`), with
/// `mark: 1` in place of any field of that name the client sent.
pub fn mirror_head(
    out: &mut Vec<u8>,
    buf: &[u8],
    head: &RequestHead,
    client: &ClientInfo,
    mark: &HeaderName,
) {
    let mark = mark.as_str().as_bytes();
    request_head_keeping(out, buf, head, client, |f| {
        !buf[f.name.clone()].eq_ignore_ascii_case(mark)
    });
    // Before the blank line that ends the head.
    out.truncate(out.len() - 2);
    field(out, mark, b"1");
    out.extend_from_slice(b"\r\n");
}

/// `request_head`, leaving out the fields `keep` refuses.
#[inline(always)]
fn request_head_keeping(
    out: &mut Vec<u8>,
    buf: &[u8],
    head: &RequestHead,
    client: &ClientInfo,
    keep: impl Fn(&Field) -> bool,
) {
    // The request line as it came, if it reads as written here (one space each side of the
    // target, HTTP/1.1, CRLF: what this engine takes): then it starts the fields' first copy.
    let line = head.method.start..head.target.end + 11;
    let as_written = head.target.start == head.method.end + 1
        && buf.get(head.method.end) == Some(&b' ')
        && buf.get(head.target.end..line.end) == Some(b" HTTP/1.1\r\n");
    let first = if as_written {
        line
    } else {
        out.extend_from_slice(&buf[head.method.clone()]);
        out.push(b' ');
        out.extend_from_slice(&buf[head.target.clone()]);
        out.extend_from_slice(b" HTTP/1.1\r\n");
        0..0
    };
    let mut xff = false;
    kept_fields(out, buf, first, &head.list.fields, |f| match f.kind {
        Kind::ForwardedProto | Kind::ForwardedHost => false,
        Kind::ForwardedFor => {
            // Earlier proxies' entries, joined into the one field written below.
            xff = true;
            false
        }
        _ => !head.list.is_hop_by_hop(buf, f) && keep(f),
    });
    out.extend_from_slice(b"x-forwarded-for: ");
    if xff {
        for f in head
            .list
            .fields
            .iter()
            .filter(|f| f.kind == Kind::ForwardedFor)
        {
            out.extend_from_slice(&buf[f.value.clone()]);
            out.extend_from_slice(b", ");
        }
    }
    out.extend_from_slice(client.ip_header.as_bytes());
    out.extend_from_slice(if client.tls {
        b"\r\nx-forwarded-proto: https\r\n"
    } else {
        b"\r\nx-forwarded-proto: http\r\n"
    });
    if let Some(host) = head.host.clone() {
        field(out, b"x-forwarded-host", &buf[host]);
    }
    out.extend_from_slice(b"\r\n");
}

/// The client's copy of an upstream's response head. The body's framing fields stay: the
/// body's bytes pass through as they came.
pub fn response_head(out: &mut Vec<u8>, buf: &[u8], head: &ResponseHead, close: bool) {
    let first = match status_line_as_written(buf, head) {
        Some(line) => line,
        None => {
            status_line(out, head.status, &buf[head.reason.clone()]);
            0..0
        }
    };
    kept_fields(out, buf, first, &head.list.fields, |f| {
        !head.list.is_hop_by_hop(buf, f)
    });
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// The status line as it came, if it reads as `status_line` writes it: `HTTP/1.1`, the
/// status, one space, a reason (one weir keeps) and CRLF.
fn status_line_as_written(buf: &[u8], head: &ResponseHead) -> Option<std::ops::Range<usize>> {
    if head.reason.is_empty() {
        return None;
    }
    let start = head.reason.start.checked_sub(b"HTTP/1.1 200 ".len())?;
    let end = head.reason.end + 2;
    let as_written = buf.get(start..start + 9) == Some(b"HTTP/1.1 ")
        && buf.get(start + 12) == Some(&b' ')
        && buf.get(head.reason.end..end) == Some(b"\r\n");
    as_written.then_some(start..end)
}

/// The fields `keep` keeps, in order, each as `field` writes it, after `first` (the head's
/// first line, when it came as it is written; else empty and already written). A line that came
/// exactly so — `name: value` and CRLF, as most do — is copied as it came, and a run of such
/// lines, one after another in `buf`, in one copy: writing both heads field by field, four
/// copies a field, was about 11 % of a plaintext request's user-space instructions. A line of
/// any other shape (more or other whitespace, a bare LF in a response) is written anew, so the
/// output is the same either way.
fn kept_fields(
    out: &mut Vec<u8>,
    buf: &[u8],
    first: std::ops::Range<usize>,
    fields: &[Field],
    mut keep: impl FnMut(&Field) -> bool,
) {
    // Lines found as `field` would write them, not copied yet.
    let mut run = first;
    for f in fields {
        if !keep(f) {
            continue;
        }
        let line_end = f.value.end + 2;
        let as_written = buf.get(f.name.end..f.value.start) == Some(b": ")
            && buf.get(f.value.end..line_end) == Some(b"\r\n");
        if as_written && !run.is_empty() && run.end == f.name.start {
            run.end = line_end;
            continue;
        }
        out.extend_from_slice(&buf[run]);
        if as_written {
            run = f.name.start..line_end;
        } else {
            run = 0..0;
            field(out, &buf[f.name.clone()], &buf[f.value.clone()]);
        }
    }
    out.extend_from_slice(&buf[run]);
}

/// A response weir writes itself: short plain text naming the cause, as `local_response`.
pub fn local_response(out: &mut Vec<u8>, status: StatusCode, cause: &str, close: bool) {
    let body_len = "weir: \n".len() + cause.len();
    status_line(
        out,
        status.as_u16(),
        status.canonical_reason().unwrap_or("").as_bytes(),
    );
    out.extend_from_slice(b"content-type: text/plain; charset=utf-8\r\ncontent-length: ");
    out.extend_from_slice(body_len.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\nweir: ");
    out.extend_from_slice(cause.as_bytes());
    out.push(b'\n');
}

fn status_line(out: &mut Vec<u8>, status: u16, reason: &[u8]) {
    out.extend_from_slice(b"HTTP/1.1 ");
    let digits = [
        b'0' + (status / 100 % 10) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ];
    out.extend_from_slice(&digits);
    out.push(b' ');
    out.extend_from_slice(reason);
    out.extend_from_slice(b"\r\n");
}

/// One field line. (Inline: called for every field of every head; its copies are the work.)
#[inline]
pub(super) fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h1::head::{FieldList, Parsed, ParsedResponse};

    fn client() -> ClientInfo {
        ClientInfo::new("10.0.0.9:40000".parse().unwrap(), false, "test".into())
    }

    fn forwarded(raw: &[u8]) -> String {
        let mut head = RequestHead::default();
        assert!(matches!(head.parse(raw, 100), Parsed::Complete));
        let mut out = Vec::new();
        request_head(&mut out, raw, &head, &client());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_upstream_gets_the_head_less_hop_by_hop_plus_forwarding_fields() {
        let out = forwarded(
            b"POST /a?b=1 HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive, x-secret\r\n\
              X-Secret: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nX-Forwarded-For: 1.2.3.4\r\n\
              X-Forwarded-Proto: https\r\nX-Forwarded-Host: evil\r\nContent-Length: 3\r\n\
              X-Kept: yes\r\n\r\nabc",
        );
        assert_eq!(
            out,
            "POST /a?b=1 HTTP/1.1\r\nHost: example.com\r\nContent-Length: 3\r\nX-Kept: yes\r\n\
             x-forwarded-for: 1.2.3.4, 10.0.0.9\r\nx-forwarded-proto: http\r\n\
             x-forwarded-host: example.com\r\n\r\n"
        );
    }

    #[test]
    fn chunked_framing_passes_through() {
        let out = forwarded(b"PUT / HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\n\r\n");
        assert!(out.contains("transfer-encoding: chunked\r\n"), "{out}");
        assert!(out.starts_with("PUT / HTTP/1.1\r\n"), "{out}");
    }

    #[test]
    fn the_client_gets_the_response_less_hop_by_hop() {
        let raw: &[u8] = b"HTTP/1.1 201 Created\r\nConnection: close, x-hop\r\nx-hop: 1\r\n\
              Content-Length: 2\r\nServer: up\r\n\r\nok";
        let mut head = ResponseHead::default();
        assert!(matches!(head.parse(raw, false), ParsedResponse::Complete));
        assert!(head.close);
        let mut out = Vec::new();
        response_head(&mut out, raw, &head, false);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nServer: up\r\n\r\n"
        );
    }

    /// Lines copied as they came and lines written anew give the bytes that writing every
    /// field anew would: whitespace, empty values, bare LFs and dropped fields between kept
    /// ones change nothing.
    #[test]
    fn copied_lines_are_what_writing_each_field_would_give() {
        let requests: [&[u8]; 5] = [
            b"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-B: 2\r\n\r\n",
            b"\r\n\r\nGET /x?y HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost:\ta\r\nX-A: 1 \r\nX-B:  2\r\nX-C:\r\nX-D: \r\nX-E: 5\r\n\r\n",
            b"GET / HTTP/1.1\r\nX-A: 1\r\nConnection: x-b\r\nX-B: 2\r\nHost: a\r\n\
              X-Forwarded-For: 9.9.9.9\r\nX-C: 3\r\nTE: trailers\r\n\r\n",
            b"GET / HTTP/1.1\r\nhost: a\r\n\r\n",
        ];
        for raw in requests {
            let mut head = RequestHead::default();
            assert!(matches!(head.parse(raw, 100), Parsed::Complete));
            let mut copied = Vec::new();
            request_head(&mut copied, raw, &head, &client());
            // Up to the forwarding fields written after the kept ones (an X-Forwarded-For
            // received is never among the kept).
            let copied = String::from_utf8_lossy(&copied).into_owned();
            let fields_end = copied.find("x-forwarded-for: ").unwrap_or(copied.len());
            let mut each = Vec::new();
            each.extend_from_slice(&raw[head.method.clone()]);
            each.push(b' ');
            each.extend_from_slice(&raw[head.target.clone()]);
            each.extend_from_slice(b" HTTP/1.1\r\n");
            let forwarding = |f: &Field| {
                matches!(
                    f.kind,
                    Kind::ForwardedFor | Kind::ForwardedProto | Kind::ForwardedHost
                )
            };
            each.extend_from_slice(each_written(raw, &head.list, forwarding).as_bytes());
            assert_eq!(
                &copied[..fields_end],
                String::from_utf8_lossy(&each),
                "{}",
                String::from_utf8_lossy(raw)
            );
        }
        let responses: [&[u8]; 9] = [
            b"HTTP/1.1 200 OK\r\nServer: up\r\nDate: now\r\nContent-Length: 0\r\n\
              Connection: keep-alive\r\nX-Backend: stable\r\n\r\n",
            b"HTTP/1.1 200 OK\nServer: up\nContent-Length: 0\r\nX-A: 1\n\n",
            b"HTTP/1.1 200 OK\r\nServer: up\nContent-Length: 0\r\nX-A:\t1\r\n\r\n",
            b"\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 \xe9t\xe9\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 O K \r\nConnection: x-a\r\nX-A: 1\r\nX-B: 2\r\n\r\n",
        ];
        for raw in responses {
            let mut head = ResponseHead::default();
            assert!(matches!(head.parse(raw, false), ParsedResponse::Complete));
            let mut copied = Vec::new();
            response_head(&mut copied, raw, &head, false);
            let mut each = Vec::new();
            status_line(&mut each, head.status, &raw[head.reason.clone()]);
            each.extend_from_slice(each_written(raw, &head.list, |_| false).as_bytes());
            each.extend_from_slice(b"\r\n");
            let copied = String::from_utf8_lossy(&copied).into_owned();
            assert_eq!(copied, String::from_utf8_lossy(&each), "{raw:?}");
            assert!(!copied.replace("\r\n", "").contains('\n'), "{copied:?}");
        }
    }

    /// Every field but the hop-by-hop ones and those `replaced`, each written anew.
    fn each_written(raw: &[u8], list: &FieldList, replaced: impl Fn(&Field) -> bool) -> String {
        let mut out = Vec::new();
        let kept = |f: &&Field| !list.is_hop_by_hop(raw, f) && !replaced(f);
        for f in list.fields.iter().filter(kept) {
            field(&mut out, &raw[f.name.clone()], &raw[f.value.clone()]);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn local_responses_are_complete_messages() {
        let mut out = Vec::new();
        local_response(&mut out, StatusCode::BAD_GATEWAY, "no", true);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain; charset=utf-8\r\n\
             content-length: 9\r\nconnection: close\r\n\r\nweir: no\n"
        );
    }
}
