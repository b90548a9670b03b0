//! Requests that hold the rules and each rule broken.

use super::*;
use crate::h2wire::message::ConnectionField;

fn request(fields: &[(&str, &str)]) -> Result<RequestHead, Malformed> {
    checked(false, fields)
}

fn checked(extended_connect: bool, fields: &[(&str, &str)]) -> Result<RequestHead, Malformed> {
    let mut check = RequestCheck::new(extended_connect);
    for (name, value) in fields {
        // A refusal is kept: `finish` returns it.
        let _ = check.field(name.as_bytes(), value.as_bytes());
    }
    check.finish()
}

const GET: [(&str, &str); 4] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "a.example"),
    (":path", "/index.html?q=1"),
];

/// GET's fields with `field` in place of the one of the same name, or added after them.
fn get_with(field: (&'static str, &'static str)) -> Vec<(&'static str, &'static str)> {
    let mut fields = GET.to_vec();
    match fields.iter_mut().find(|(name, _)| *name == field.0) {
        Some(slot) => *slot = field,
        None => fields.push(field),
    }
    fields
}

fn get_without(name: &str) -> Vec<(&'static str, &'static str)> {
    GET.iter().copied().filter(|(n, _)| *n != name).collect()
}

#[test]
fn a_grpc_call() {
    let head = request(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "grpc.example:8443"),
        (":path", "/pkg.Svc/Method"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("grpc-timeout", "100m"),
        ("grpc-accept-encoding", "identity, gzip"),
    ])
    .expect("a valid gRPC request");
    assert_eq!(head.method(), b"POST");
    assert_eq!(head.scheme(), Some(&b"https"[..]));
    assert_eq!(head.authority(), Some(&b"grpc.example:8443"[..]));
    assert_eq!(head.path(), Some(&b"/pkg.Svc/Method"[..]));
    assert_eq!(head.protocol(), None);
    assert_eq!(head.content_length, None);
    assert!(head.te_trailers);
}

#[test]
fn a_get_with_cookies_and_a_length() {
    let mut fields = GET.to_vec();
    fields.extend([
        ("cookie", "a=1"),
        ("cookie", "b=2"),
        ("content-length", "0"),
        ("user-agent", "curl/8"),
        ("http2-settings", "AAMAAABkAAQAAP__"),
    ]);
    let head = request(&fields).expect("a valid GET");
    assert_eq!(head.method(), b"GET");
    assert_eq!(head.path(), Some(&b"/index.html?q=1"[..]));
    assert_eq!(head.authority(), Some(&b"a.example"[..]));
    assert_eq!(head.content_length, Some(0));
    assert!(!head.te_trailers);
    let options = [(":method", "OPTIONS"), (":scheme", "http"), (":path", "*")];
    assert_eq!(request(&options).map(|h| h.authority().is_none()), Ok(true));
}

#[test]
fn host_stands_for_a_missing_authority_and_must_agree_with_one() {
    let mut fields = get_without(":authority");
    fields.push(("host", "b.example:8080"));
    let head = request(&fields);
    assert_eq!(
        head.map(|h| h.authority().map(<[u8]>::to_vec)),
        Ok(Some(b"b.example:8080".to_vec()))
    );
    let same = get_with(("host", "A.Example"));
    assert_eq!(
        request(&same).map(|h| h.authority().map(<[u8]>::to_vec)),
        Ok(Some(b"a.example".to_vec()))
    );
    assert_eq!(
        request(&get_with(("host", "b.example"))),
        Err(Malformed::HostMismatch)
    );
    let mut two = GET.to_vec();
    two.extend([("host", "a.example"), ("host", "a.example")]);
    assert_eq!(request(&two), Err(Malformed::ManyHosts));
    for bad in ["u@b.example", "b.example/x", ""] {
        let mut fields = get_without(":authority");
        fields.push(("host", bad));
        assert_eq!(request(&fields), Err(Malformed::BadHost), "{bad:?}");
    }
}

#[test]
fn a_connect_names_its_authority_only() {
    let connect = [(":method", "CONNECT"), (":authority", "a.example:443")];
    let head = request(&connect).expect("a valid CONNECT");
    assert_eq!(head.method(), b"CONNECT");
    assert_eq!(head.authority(), Some(&b"a.example:443"[..]));
    assert_eq!((head.scheme(), head.path()), (None, None));
    assert_eq!(request(&connect[..1]), Err(Malformed::NoAuthority));
    let host_only = [(":method", "CONNECT"), ("host", "a.example:443")];
    assert_eq!(request(&host_only), Err(Malformed::NoAuthority));
    let mut scheme = connect.to_vec();
    scheme.push((":scheme", "https"));
    assert_eq!(request(&scheme), Err(Malformed::SchemeInConnect));
    let mut path = connect.to_vec();
    path.push((":path", "/"));
    assert_eq!(request(&path), Err(Malformed::PathInConnect));
}

const WEBSOCKET: [(&str, &str); 5] = [
    (":method", "CONNECT"),
    (":protocol", "websocket"),
    (":scheme", "https"),
    (":authority", "chat.example"),
    (":path", "/chat"),
];

#[test]
fn an_extended_connect_names_a_whole_target() {
    let head = checked(true, &WEBSOCKET).expect("a valid extended CONNECT");
    assert_eq!(head.protocol(), Some(&b"websocket"[..]));
    assert_eq!(head.path(), Some(&b"/chat"[..]));
    assert_eq!(
        checked(false, &WEBSOCKET),
        Err(Malformed::ProtocolNotEnabled)
    );
    let without = |name: &str| -> Vec<(&str, &str)> {
        WEBSOCKET
            .iter()
            .copied()
            .filter(|(n, _)| *n != name)
            .collect()
    };
    assert_eq!(checked(true, &without(":scheme")), Err(Malformed::NoScheme));
    assert_eq!(checked(true, &without(":path")), Err(Malformed::NoPath));
    assert_eq!(
        checked(true, &without(":authority")),
        Err(Malformed::NoAuthority)
    );
    let mut get = WEBSOCKET;
    get[0] = (":method", "GET");
    assert_eq!(checked(true, &get), Err(Malformed::ProtocolWithoutConnect));
    let mut relative = WEBSOCKET;
    relative[4] = (":path", "chat");
    assert_eq!(checked(true, &relative), Err(Malformed::PathNotAbsolute));
    let mut spaced = WEBSOCKET;
    spaced[1] = (":protocol", "web socket");
    assert_eq!(checked(true, &spaced), Err(Malformed::BadProtocol));
    // Enabled, extended CONNECT changes nothing for a plain CONNECT.
    let plain = [(":method", "CONNECT"), (":authority", "a.example:443")];
    assert!(checked(true, &plain).is_ok());
}

#[test]
fn method_scheme_and_path_are_required_outside_connect() {
    assert_eq!(request(&get_without(":method")), Err(Malformed::NoMethod));
    assert_eq!(request(&get_without(":scheme")), Err(Malformed::NoScheme));
    assert_eq!(request(&get_without(":path")), Err(Malformed::NoPath));
    assert_eq!(request(&get_with((":path", ""))), Err(Malformed::EmptyPath));
    assert_eq!(request(&[]), Err(Malformed::NoMethod));
}

#[test]
fn pseudo_header_values_have_their_syntax() {
    let cases = [
        ((":method", "GE T"), Malformed::BadMethod),
        ((":method", "GET/1"), Malformed::BadMethod),
        ((":scheme", "ht tp"), Malformed::BadScheme),
        ((":path", "/a b"), Malformed::BadPathChar),
        ((":path", "/a#b"), Malformed::BadPathChar),
        ((":path", "index.html"), Malformed::PathNotAbsolute),
        ((":path", "*"), Malformed::AsteriskNotOptions),
        ((":authority", "user@a.example"), Malformed::Userinfo),
        ((":authority", "a.example/x"), Malformed::BadAuthority),
        ((":authority", ""), Malformed::BadAuthority),
    ];
    for (field, refusal) in cases {
        assert_eq!(request(&get_with(field)), Err(refusal), "{field:?}");
    }
    // A scheme other than http(s) has its own path syntax.
    let other = get_with((":scheme", "foo"));
    let other: Vec<_> = other
        .into_iter()
        .map(|f| if f.0 == ":path" { (":path", "bar") } else { f })
        .collect();
    assert!(request(&other).is_ok());
}

#[test]
fn pseudo_headers_are_known_single_and_first() {
    let mut late = get_without(":path");
    late.extend([("accept", "*/*"), (":path", "/")]);
    assert_eq!(request(&late), Err(Malformed::PseudoAfterRegular));
    assert_eq!(
        request(&get_with((":foo", "x"))),
        Err(Malformed::UnknownPseudo)
    );
    let status = get_with((":status", "200"));
    assert_eq!(request(&status), Err(Malformed::ResponsePseudoInRequest));
    for (name, value) in GET {
        let mut twice = GET.to_vec();
        twice.insert(1, (name, value));
        let pseudo = Pseudo::of(name.as_bytes()).expect("a pseudo-header");
        assert_eq!(
            request(&twice),
            Err(Malformed::RepeatedPseudo(pseudo)),
            "{name}"
        );
    }
    let mut twice = WEBSOCKET.to_vec();
    twice.push((":protocol", "websocket"));
    let repeated = Err(Malformed::RepeatedPseudo(Pseudo::Protocol));
    assert_eq!(checked(true, &twice), repeated);
}

#[test]
fn regular_fields_hold_the_common_rules() {
    let cases = [
        (
            ("connection", "close"),
            Malformed::ConnectionSpecific(ConnectionField::Connection),
        ),
        (
            ("upgrade", "h2c"),
            Malformed::ConnectionSpecific(ConnectionField::Upgrade),
        ),
        (("te", "gzip"), Malformed::TeNotTrailers),
        (("Accept", "*/*"), Malformed::UppercaseName),
        (("x-a", "b\r\nc"), Malformed::BadValueChar),
        (("content-length", "1e3"), Malformed::BadContentLength),
        (("content-length", "3, 3"), Malformed::BadContentLength),
    ];
    for (field, refusal) in cases {
        assert_eq!(request(&get_with(field)), Err(refusal), "{field:?}");
    }
    let mut lengths = GET.to_vec();
    lengths.push(("content-length", "7"));
    assert_eq!(request(&lengths).map(|h| h.content_length), Ok(Some(7)));
    lengths.push(("content-length", "7"));
    assert_eq!(request(&lengths), Err(Malformed::ManyContentLengths));
}

#[test]
fn the_first_refusal_is_kept() {
    let mut check = RequestCheck::new(false);
    assert_eq!(check.field(b":method", b"GET"), Ok(()));
    assert_eq!(check.field(b"Bad", b"x"), Err(Malformed::UppercaseName));
    // Valid on its own, but the request is refused already.
    assert_eq!(check.field(b"x-ok", b"x"), Err(Malformed::UppercaseName));
    assert_eq!(check.finish(), Err(Malformed::UppercaseName));
}
