//! Heads written for the other leg: the received head's bytes, less hop-by-hop fields, plus
//! the forwarding fields. Field names keep the sender's spelling; values are never re-parsed.

use http::StatusCode;

use super::head::{FieldList, RequestHead, ResponseHead};
use crate::field::Kind;
use crate::pipeline::ClientInfo;

/// The upstream's copy of a client's request head (origin-form, HTTP/1.1). X-Forwarded-For is
/// appended to, never believed; X-Forwarded-Proto and -Host state what weir saw.
pub fn request_head(out: &mut Vec<u8>, buf: &[u8], head: &RequestHead, client: &ClientInfo) {
    out.extend_from_slice(&buf[head.method.clone()]);
    out.push(b' ');
    out.extend_from_slice(&buf[head.target.clone()]);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut xff: Option<usize> = None;
    for f in &head.list.fields {
        match f.kind {
            Kind::ForwardedProto | Kind::ForwardedHost => continue,
            Kind::ForwardedFor => {
                // Earlier proxies' entries, joined into the one field written below.
                xff.get_or_insert(0);
                continue;
            }
            _ if head.list.is_hop_by_hop(buf, f) => continue,
            _ => field(out, &buf[f.name.clone()], &buf[f.value.clone()]),
        }
    }
    out.extend_from_slice(b"x-forwarded-for: ");
    if xff.is_some() {
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
    status_line(out, head.status, &buf[head.reason.clone()]);
    fields_except_hop_by_hop(out, buf, &head.list);
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn fields_except_hop_by_hop(out: &mut Vec<u8>, buf: &[u8], list: &FieldList) {
    for f in &list.fields {
        if !list.is_hop_by_hop(buf, f) {
            field(out, &buf[f.name.clone()], &buf[f.value.clone()]);
        }
    }
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
    use crate::h1::head::{Parsed, ParsedResponse};

    fn client() -> ClientInfo {
        ClientInfo::new("10.0.0.9".parse().unwrap(), false)
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
