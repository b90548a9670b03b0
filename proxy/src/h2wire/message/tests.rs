//! The checkers fed by the real HPACK decoder, and the reasons they give.

use super::*;
use crate::h2wire::hpack::{Decoder, Encoder};

fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let (mut out, encoder) = (Vec::new(), Encoder::new());
    for (name, value) in fields {
        encoder.field(name.as_bytes(), value.as_bytes(), false, &mut out);
    }
    out
}

/// A gRPC call's head as a client encodes it, decoded and checked field by field.
#[test]
fn the_checker_runs_inside_the_decoder_s_callback() {
    let block = block(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":path", "/pkg.Svc/Method"),
        (":authority", "grpc.example:443"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("grpc-timeout", "1S"),
        ("authorization", "Bearer x"),
    ]);
    let mut decoder = Decoder::new(4096);
    let mut check = RequestCheck::new(false);
    let mut fields = 0;
    let decoded = decoder.decode(&block, 16 << 10, |f| {
        fields += 1;
        assert_eq!(check.field(f.name, f.value), Ok(()));
    });
    assert_eq!(decoded, Ok(()));
    assert_eq!(fields, 8);
    let head = check.finish().expect("a valid gRPC request");
    assert_eq!(head.method(), b"POST");
    assert_eq!(head.path(), Some(&b"/pkg.Svc/Method"[..]));
    assert_eq!(head.authority(), Some(&b"grpc.example:443"[..]));
    assert!(head.te_trailers);
}

/// A refusal mid-block: the decoder goes on to the block's end (the next block still decodes
/// against the same table) and the checker keeps its first refusal.
#[test]
fn a_refusal_mid_block_is_kept_while_the_block_is_decoded_to_its_end() {
    let block = block(&[
        (":method", "GET"),
        (":scheme", "http"),
        ("connection", "close"),
        (":path", "/"),
        ("x-after", "1"),
    ]);
    let mut decoder = Decoder::new(4096);
    let mut check = RequestCheck::new(false);
    let mut refusals = Vec::new();
    let decoded = decoder.decode(&block, 16 << 10, |f| {
        if let Err(refusal) = check.field(f.name, f.value) {
            refusals.push(refusal);
        }
    });
    assert_eq!(decoded, Ok(()));
    let first = Malformed::ConnectionSpecific(ConnectionField::Connection);
    assert_eq!(refusals, vec![first; 3]);
    assert_eq!(check.finish(), Err(first));
}

#[test]
fn response_and_trailers_through_the_decoder() {
    let mut decoder = Decoder::new(4096);
    let mut check = ResponseCheck::new();
    let head = block(&[(":status", "200"), ("content-length", "12")]);
    let decoded = decoder.decode(&head, 16 << 10, |f| {
        assert_eq!(check.field(f.name, f.value), Ok(()));
    });
    assert_eq!(decoded, Ok(()));
    let expected = ResponseHead {
        status: 200,
        content_length: Some(12),
    };
    assert_eq!(check.finish(), Ok(expected));
    let mut trailers = TrailerCheck::new();
    let block = block(&[("grpc-status", "0"), (":status", "200")]);
    let decoded = decoder.decode(&block, 16 << 10, |f| {
        let _ = trailers.field(f.name, f.value);
    });
    assert_eq!(decoded, Ok(()));
    assert_eq!(trailers.finish(), Err(Malformed::PseudoInTrailers));
}

#[test]
fn every_reason_is_its_own() {
    use ConnectionField as C;
    let mut all = vec![
        Malformed::EmptyName,
        Malformed::UppercaseName,
        Malformed::BadNameChar,
        Malformed::BadValueChar,
        Malformed::ValueWhitespace,
        Malformed::TeNotTrailers,
        Malformed::PseudoAfterRegular,
        Malformed::UnknownPseudo,
        Malformed::ResponsePseudoInRequest,
        Malformed::RequestPseudoInResponse,
        Malformed::PseudoInTrailers,
        Malformed::NoMethod,
        Malformed::BadMethod,
        Malformed::NoScheme,
        Malformed::BadScheme,
        Malformed::NoPath,
        Malformed::EmptyPath,
        Malformed::BadPathChar,
        Malformed::PathNotAbsolute,
        Malformed::AsteriskNotOptions,
        Malformed::NoAuthority,
        Malformed::BadAuthority,
        Malformed::Userinfo,
        Malformed::ManyHosts,
        Malformed::BadHost,
        Malformed::HostMismatch,
        Malformed::SchemeInConnect,
        Malformed::PathInConnect,
        Malformed::ProtocolNotEnabled,
        Malformed::ProtocolWithoutConnect,
        Malformed::BadProtocol,
        Malformed::NoStatus,
        Malformed::BadStatus,
        Malformed::SwitchingProtocols,
        Malformed::BadContentLength,
        Malformed::ManyContentLengths,
    ];
    for c in [
        C::Connection,
        C::ProxyConnection,
        C::KeepAlive,
        C::TransferEncoding,
        C::Upgrade,
    ] {
        all.push(Malformed::ConnectionSpecific(c));
    }
    for p in Pseudo::ALL {
        all.push(Malformed::RepeatedPseudo(p));
    }
    let mut reasons: Vec<&str> = all.iter().map(|m| m.reason()).collect();
    assert!(reasons.iter().all(|r| !r.is_empty()));
    reasons.sort_unstable();
    reasons.dedup();
    assert_eq!(reasons.len(), all.len());
    let shown = Malformed::ConnectionSpecific(C::Connection).to_string();
    assert_eq!(shown, "connection-specific field `connection`");
    assert_eq!(
        Malformed::RepeatedPseudo(Pseudo::Path).to_string(),
        "two :path pseudo-headers"
    );
}
