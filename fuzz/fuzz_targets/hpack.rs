//! The HPACK decoder and Huffman code. The input is an options byte, then up to four header
//! blocks each behind a length byte, decoded in order by one decoder (the dynamic table carries
//! over); bit 0 of the options picks a 256-byte table, bit 1 a 200-byte header list limit. Beyond not crashing: a block that decodes re-encodes (weir's encoder)
//! to a block a fresh decoder reads back as the same fields; a block refused for its list size
//! leaves the decoder usable; and any bytes Huffman-coded decode back to themselves.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_proxy::h2wire::hpack::{huffman, Decoder, Encoder, Error};

type Fields = Vec<(Vec<u8>, Vec<u8>, bool)>;

fn decode(d: &mut Decoder, block: &[u8], max_list: usize) -> Result<Fields, Error> {
    let mut out = Vec::new();
    d.decode(block, max_list, |f| out.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed)))?;
    Ok(out)
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
