//! The HPACK decoder, the Huffman code and the HTTP/2 message rules. The input is an options
//! byte, then up to four header blocks each behind a length byte, decoded in order by one
//! decoder (the dynamic table carries over); bit 0 of the options picks a 256-byte table, bit 1
//! a 200-byte header list limit. Beyond not crashing: a block that decodes re-encodes (weir's
//! encoder) to a block a fresh decoder reads back as the same fields; a block refused for its
//! list size leaves the decoder usable; its fields, checked as a request, a response and
//! trailers, give a head only when the rules hold (checked again here); and any bytes
//! Huffman-coded decode back to themselves.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_proxy::h2wire::hpack::{huffman, Decoder, Encoder, Error};
use weir_proxy::h2wire::message::{RequestCheck, ResponseCheck, TrailerCheck};

type Fields = Vec<(Vec<u8>, Vec<u8>, bool)>;

fn decode(d: &mut Decoder, block: &[u8], max_list: usize) -> Result<Fields, Error> {
    let mut out = Vec::new();
    d.decode(block, max_list, |f| out.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed)))?;
    Ok(out)
}

/// What every accepted message must hold, whatever its kind.
fn well_formed(fields: &Fields) {
    let mut regular = false;
    for (name, value, _) in fields {
        assert!(!name.is_empty() && !name.iter().any(u8::is_ascii_uppercase));
        assert!(!value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n'));
        let pseudo = name[0] == b':';
        assert!(!(pseudo && regular), "a pseudo-header after a regular field");
        regular |= !pseudo;
        assert!(!matches!(&name[..], b"connection" | b"transfer-encoding" | b"upgrade" | b"keep-alive"));
    }
}

fn check(fields: &Fields, extended_connect: bool) {
    let mut request = RequestCheck::new(extended_connect);
    let mut response = ResponseCheck::new();
    let mut trailers = TrailerCheck::new();
    for (n, v, _) in fields {
        let _ = request.field(n, v);
        let _ = response.field(n, v);
        let _ = trailers.field(n, v);
    }
    if let Ok(head) = request.finish() {
        well_formed(fields);
        assert!(!head.method().is_empty());
        assert_eq!(fields.iter().filter(|(n, _, _)| n == b":method").count(), 1);
        if head.method() != b"CONNECT" {
            assert!(head.path().is_some_and(|p| !p.is_empty()) && head.scheme().is_some());
        }
    }
    if let Ok(head) = response.finish() {
        well_formed(fields);
        assert!((100..=599).contains(&head.status) && head.status != 101);
    }
    if trailers.finish().is_ok() {
        well_formed(fields);
        assert!(fields.iter().all(|(n, _, _)| n[0] != b':'));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, data)) = data.split_first() else { return };
    let mut decoder = Decoder::new(if control & 1 == 0 { 4096 } else { 256 });
    let max_list = if control & 2 == 0 { 1 << 16 } else { 200 };
    let mut encoder = Encoder::new();
    let mut rest = data;
    for _ in 0..4 {
        let Some((&len, tail)) = rest.split_first() else { break };
        let (block, tail) = tail.split_at((len as usize).min(tail.len()));
        rest = tail;
        match decode(&mut decoder, block, max_list) {
            Ok(fields) => {
                check(&fields, control & 4 != 0);
                let mut again = Vec::new();
                encoder.begin(&mut again);
                for (n, v, never) in &fields {
                    encoder.field(n, v, *never, &mut again);
                }
                let back = decode(&mut Decoder::new(4096), &again, usize::MAX).expect("weir's own block");
                assert_eq!(back, fields);
            }
            Err(e) if e.ends_connection() => return,
            Err(_) => {}
        }
    }
    let mut coded = Vec::new();
    huffman::encode(data, &mut coded);
    assert_eq!(coded.len(), huffman::encoded_len(data));
    let mut plain = Vec::new();
    huffman::decode(&coded, &mut plain).expect("weir's own Huffman coding");
    assert_eq!(plain, data);
});
