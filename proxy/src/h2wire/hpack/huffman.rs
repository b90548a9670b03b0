//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B).
//!
//! The code is canonical: codes of one length are consecutive and follow their symbols' order,
//! and each length starts where the shorter ones left off, doubled. So the table below holds
//! only each symbol's code length, as Appendix B lists them, and the codes are derived from it
//! at compile time; the tests check the derivation against codes the Appendix prints and against
//! the Appendix C examples.
//!
//! Decoding runs a 4-bit state machine built at compile time from the same lengths: a state is
//! a node of the code's tree (the bits read since the last symbol), and each of its 16
//! transitions says where 4 more bits lead and which symbol, if any, they complete. No code is
//! shorter than 5 bits, so 4 bits complete at most one symbol.

/// Appendix B's code length of each symbol, 0–255 and EOS (256).
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0–15
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 16–31
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // ' ' – '/'
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // '0' – '?'
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // '@' – 'O'
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 'P' – '_'
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // '`' – 'o'
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 'p' – 127
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 128–143
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 144–159
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 160–175
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 176–191
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 192–207
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 208–223
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 224–239
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 240–255
    30, // EOS
];

const EOS: u16 = 256;

/// Each symbol's code, right-aligned, from its length (see the module comment).
const CODES: [u32; 257] = {
    let mut codes = [0u32; 257];
    let mut next = 0u32;
    let mut len = 1;
    while len <= 30 {
        let mut sym = 0;
        while sym < 257 {
            if LENGTHS[sym] == len {
                codes[sym] = next;
                next += 1;
            }
            sym += 1;
        }
        next <<= 1;
        len += 1;
    }
    codes
};

/// The code's tree: 256 inner nodes (a full binary tree with 257 leaves), the root first. A
/// child below `LEAF` is an inner node; `LEAF | symbol` is a leaf.
const LEAF: u16 = 0x8000;
const TREE: [[u16; 2]; 256] = {
    let mut tree = [[0u16; 2]; 256];
    let mut nodes = 1;
    let mut sym = 0;
    while sym < 257 {
        let len = LENGTHS[sym] as u32;
        let mut node = 0;
        let mut depth = 0;
        while depth < len {
            let bit = ((CODES[sym] >> (len - 1 - depth)) & 1) as usize;
            if depth + 1 == len {
                tree[node][bit] = LEAF | sym as u16;
            } else {
                if tree[node][bit] == 0 {
                    tree[node][bit] = nodes;
                    nodes += 1;
                }
                node = tree[node][bit] as usize;
            }
            depth += 1;
        }
        sym += 1;
    }
    tree
};

/// One transition of the decoding machine.
#[derive(Clone, Copy)]
struct Step {
    /// The node reached.
    next: u8,
    /// The symbol completed, when `flags & EMIT`.
    symbol: u8,
    flags: u8,
}

const EMIT: u8 = 1;
/// The bits spelled EOS, which a string must not contain (§5.2).
const FAIL: u8 = 2;
/// The node reached may end a string: the bits since the last symbol are at most 7 ones, the
/// start of EOS, which is how a string is padded to a whole byte (§5.2).
const ACCEPT: u8 = 4;

const STEPS: [Step; 256 * 16] = {
    // The nodes on the all-ones path within 7 bits of the root, and the root itself.
    let mut padding = [false; 256];
    padding[0] = true;
    let mut node = 0;
    let mut depth = 0;
    while depth < 7 {
        let child = TREE[node][1];
        if child & LEAF != 0 {
            break;
        }
        node = child as usize;
        padding[node] = true;
        depth += 1;
    }

    let mut steps = [Step {
        next: 0,
        symbol: 0,
        flags: 0,
    }; 256 * 16];
    let mut state = 0;
    while state < 256 {
        let mut nibble = 0;
        while nibble < 16 {
            let mut node = state;
            let mut flags = 0;
            let mut symbol = 0;
            let mut bit = 0;
            while bit < 4 {
                let child = TREE[node][(nibble >> (3 - bit)) & 1];
                if child & LEAF != 0 {
                    if child & !LEAF == EOS {
                        flags |= FAIL;
                        break;
                    }
                    symbol = (child & 0xff) as u8;
                    flags |= EMIT;
                    node = 0;
                } else {
                    node = child as usize;
                }
                bit += 1;
            }
            if padding[node] {
                flags |= ACCEPT;
            }
            steps[state * 16 + nibble] = Step {
                next: node as u8,
                symbol,
                flags,
            };
            nibble += 1;
        }
        state += 1;
    }
    steps
};

/// A Huffman-coded string that is not one (§5.2): it spells EOS, or its padding is longer than
/// 7 bits or not the start of EOS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// Appends the decoded `src` to `out`.
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), Malformed> {
    // At most 8/5 symbols a byte: no code is shorter than 5 bits.
    out.reserve(src.len() + src.len() / 2 + src.len() / 8 + 1);
    let mut state = 0usize;
    let mut flags = ACCEPT;
    for &byte in src {
        for nibble in [byte >> 4, byte & 0x0f] {
            let step = STEPS[state << 4 | nibble as usize];
            if step.flags & FAIL != 0 {
                return Err(Malformed);
            }
            if step.flags & EMIT != 0 {
                out.push(step.symbol);
            }
            state = step.next as usize;
            flags = step.flags;
        }
    }
    if flags & ACCEPT == 0 {
        return Err(Malformed);
    }
    Ok(())
}

/// The length of `src` Huffman-coded, in bytes.
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| LENGTHS[b as usize] as usize).sum();
    bits.div_ceil(8)
}

/// Appends `src` Huffman-coded to `out`, padded with the start of EOS (ones).
pub fn encode(src: &[u8], out: &mut Vec<u8>) {
    out.reserve(encoded_len(src));
    // Bits not yet written sit at the bottom of `pending`: fewer than 8 between symbols, so a
    // 30-bit code always fits beside them.
    let mut pending: u64 = 0;
    let mut bits = 0u32;
    for &b in src {
        let len = LENGTHS[b as usize] as u32;
        pending = (pending << len) | CODES[b as usize] as u64;
        bits += len;
        while bits >= 8 {
            bits -= 8;
            out.push((pending >> bits) as u8);
        }
        pending &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(((pending << (8 - bits)) as u8) | (0xff >> bits));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derived_codes_are_appendix_b_s() {
        // (symbol, code as Appendix B prints it): the ends of each length and the odd ones out.
        let printed = [
            (0, 0x1ff8),
            (1, 0x7f_ffd8),
            (9, 0xff_ffea),
            (10, 0x3fff_fffc),
            (13, 0x3fff_fffd),
            (22, 0x3fff_fffe),
            (32, 0x14),
            (48, 0x0),
            (116, 0x9),
            (58, 0x5c),
            (38, 0xf8),
            (92, 0x7_fff0),
            (127, 0xfff_fffc),
            (195, 0x7_fff1),
            (199, 0x1ff_ffec),
            (203, 0x7ff_ffde),
            (249, 0xfff_fffe),
            (254, 0x7ff_fff0),
            (255, 0x3ff_ffee),
            (256, 0x3fff_ffff),
        ];
        for (sym, code) in printed {
            assert_eq!(CODES[sym], code, "symbol {sym}");
        }
        // The lengths describe a complete code (Kraft sum exactly 1): EOS, the last and longest
        // code, is all ones.
        let kraft: u64 = LENGTHS.iter().map(|&l| 1u64 << (30 - l)).sum();
        assert_eq!(kraft, 1 << 30);
    }

    #[test]
    fn every_byte_and_every_run_of_bytes_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        for cut in 0..all.len() {
            let src = &all[cut..];
            let mut coded = Vec::new();
            encode(src, &mut coded);
            assert_eq!(coded.len(), encoded_len(src));
            let mut back = Vec::new();
            decode(&coded, &mut back).unwrap();
            assert_eq!(back, src);
        }
    }

    #[test]
    fn appendix_c_strings() {
        let cases: [(&[u8], &[u8]); 4] = [
            (
                b"www.example.com",
                &[
                    0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
                ],
            ),
            (b"no-cache", &[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]),
            (b"302", &[0x64, 0x02]),
            (b"private", &[0xae, 0xc3, 0x77, 0x1a, 0x4b]),
        ];
        for (plain, coded) in cases {
            let mut out = Vec::new();
            encode(plain, &mut out);
            assert_eq!(out, coded);
            let mut back = Vec::new();
            decode(coded, &mut back).unwrap();
            assert_eq!(back, plain);
        }
    }

    #[test]
    fn eos_and_bad_padding_are_refused() {
        let mut out = Vec::new();
        // 30 ones and more spell EOS.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff], &mut out), Err(Malformed));
        // 8 bits of padding: '0' (00000) then 11111111 111 is too long.
        assert_eq!(decode(&[0x07, 0xff], &mut out), Err(Malformed));
        // Padding with a zero in it: 'a' (00011) then 110.
        assert_eq!(decode(&[0b0001_1110], &mut out), Err(Malformed));
        // A symbol cut short by the end of the string: the first 8 of '\0''s 13 bits.
        assert_eq!(decode(&[0xff], &mut out), Err(Malformed));
        // The empty string and exact fits are fine.
        out.clear();
        decode(&[], &mut out).unwrap();
        assert!(out.is_empty());
        decode(&[0x07], &mut out).unwrap(); // '0' and 3 bits of padding
        assert_eq!(out, b"0");
    }
}
