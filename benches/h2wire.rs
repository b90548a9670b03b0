//! criterion micro-benchmarks of the HTTP/2 wire format (`weir_proxy::h2wire`): what a
//! frame-level HTTP/2 engine spends per request on header coding, against reading the same
//! request as HTTP/1 text with the passthrough engine's head parser, measured in the same run
//! (the machine is shared and noisy: ratios, not times, are the result).
//! Run: cargo bench --bench h2wire. Results: benches/README.md.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use weir_proxy::h1::head::{Parsed, RequestHead};
use weir_proxy::h2wire::hpack::{huffman, Decoder, Encoder};
use weir_proxy::h2wire::message::RequestCheck;

/// A gRPC unary call's request, as a gRPC client sends it (the fields grpc-go sends, in order).
const FIELDS: [(&[u8], &[u8]); 9] = [
    (b":method", b"POST"),
    (b":scheme", b"http"),
    (b":path", b"/grpc.testing.BenchmarkService/UnaryCall"),
    (b":authority", b"127.0.0.1:19100"),
    (b"content-type", b"application/grpc"),
    (b"user-agent", b"grpc-go/1.60.0"),
    (b"te", b"trailers"),
    (b"grpc-timeout", b"999965u"),
    (b"grpc-accept-encoding", b"gzip"),
];

/// The same request as HTTP/1 text.
const HTTP1: &[u8] = b"POST /grpc.testing.BenchmarkService/UnaryCall HTTP/1.1\r\n\
Host: 127.0.0.1:19100\r\nContent-Type: application/grpc\r\nUser-Agent: grpc-go/1.60.0\r\n\
TE: trailers\r\nGrpc-Timeout: 999965u\r\nGrpc-Accept-Encoding: gzip\r\nContent-Length: 5\r\n\r\n";

/// A client's first block on a connection: every field a literal with incremental indexing,
/// Huffman-coded, the name by static index where the table has it (as grpc-go and browsers
/// send). Fields are short, so every length fits one byte.
fn first_block() -> Vec<u8> {
    let statics: [(&[u8], u8); 6] = [
        (b":method", 2),
        (b":scheme", 6),
        (b":path", 4),
        (b":authority", 1),
        (b"content-type", 31),
        (b"user-agent", 58),
    ];
    let mut block = Vec::new();
    for (name, value) in FIELDS {
        match statics.iter().find(|(n, _)| *n == name) {
            Some((_, index)) => block.push(0x40 | index),
            None => {
                block.push(0x40);
                string(name, &mut block);
            }
        }
        string(value, &mut block);
    }
    block
}

fn string(s: &[u8], out: &mut Vec<u8>) {
    let mut coded = Vec::new();
    huffman::encode(s, &mut coded);
    assert!(coded.len() < 127);
    out.push(0x80 | coded.len() as u8);
    out.extend_from_slice(&coded);
}

/// The same request again on that connection: every field indexed from the dynamic table
/// (entries 62–70, newest first, so the first field sent is the oldest).
fn repeat_block() -> Vec<u8> {
    (0..FIELDS.len() as u8)
        .map(|i| 0x80 | (62 + FIELDS.len() as u8 - 1 - i))
        .collect()
}

fn decode_all(decoder: &mut Decoder, block: &[u8]) -> usize {
    let mut bytes = 0;
    decoder
        .decode(block, 16 * 1024, |f| {
            bytes += black_box(f.name).len() + black_box(f.value).len()
        })
        .expect("a valid block");
    bytes
}

fn header_coding(c: &mut Criterion) {
    let first = first_block();
    let repeat = repeat_block();
    // The blocks decode to the request (checked once, outside the timing).
    let mut d = Decoder::new(4096);
    let mut seen = Vec::new();
    d.decode(&first, 16 * 1024, |f| {
        seen.push((f.name.to_vec(), f.value.to_vec()))
    })
    .unwrap();
    d.decode(&repeat, 16 * 1024, |f| {
        seen.push((f.name.to_vec(), f.value.to_vec()))
    })
    .unwrap();
    let want: Vec<_> = FIELDS
        .iter()
        .map(|(n, v)| (n.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(seen[..FIELDS.len()], want[..]);
    assert_eq!(seen[FIELDS.len()..], want[..]);

    c.bench_function("reference: HTTP/1 head parse (same request)", |b| {
        // Reused, as a connection reuses its head; gRPC is a shape the engine leaves to hyper,
        // after parsing and checking it whole.
        let mut head = RequestHead::default();
        b.iter(|| {
            let parsed = head.parse(black_box(HTTP1), 100);
            assert!(matches!(parsed, Parsed::Complete | Parsed::Hyper));
        })
    });
    c.bench_function("hpack decode: first request (Huffman, 9 inserts)", |b| {
        b.iter(|| decode_all(&mut Decoder::new(4096), black_box(&first)))
    });
    c.bench_function("hpack decode: repeat request (9 indexed)", |b| {
        let mut d = Decoder::new(4096);
        decode_all(&mut d, &first);
        b.iter(|| decode_all(&mut d, black_box(&repeat)))
    });
    c.bench_function("hpack decode + message rules: repeat request", |b| {
        // What a frame-level engine does per request in place of h2's header map and checks:
        // decode, hold each field to RFC 9113 §8, keep what routing needs.
        let mut d = Decoder::new(4096);
        decode_all(&mut d, &first);
        b.iter(|| {
            let mut check = RequestCheck::new(false);
            d.decode(black_box(&repeat), 16 * 1024, |f| {
                let _ = check.field(f.name, f.value);
            })
            .expect("a valid block");
            let head = check.finish().expect("a valid request");
            head.path().map_or(0, <[u8]>::len)
        })
    });
    c.bench_function("hpack encode: request (weir's encoder)", |b| {
        let e = Encoder::new();
        let mut out = Vec::with_capacity(256);
        b.iter(|| {
            out.clear();
            for (n, v) in black_box(&FIELDS) {
                e.field(n, v, false, &mut out);
            }
            out.len()
        })
    });
}

criterion_group!(benches, header_coding);
criterion_main!(benches);
