//! criterion micro-benchmarks of the HTTP/2 wire format (`weir_proxy::h2wire`): what a
//! frame-level HTTP/2 engine spends per request on header coding, against reading the same
//! request as HTTP/1 text with the passthrough engine's head parser, measured in the same run
//! (the machine is shared and noisy: ratios, not times, are the result).
//! Two more groups set weir's sans-I/O client and server connections (`h2wire::client`,
//! `h2wire::server`) against the h2 crate's, each exchanging the same GETs with the same canned
//! peer over an in-process pipe on one thread.
//! Run: cargo bench --bench h2wire. Results: benches/README.md.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use weir_proxy::h1::head::{Parsed, RequestHead};
use weir_proxy::h2wire::client::{ClientConn, Config, Event};
use weir_proxy::h2wire::frame::{self, flag, Kind};
use weir_proxy::h2wire::hpack::Encoder as HpackEncoder;
use weir_proxy::h2wire::hpack::{huffman, Decoder, Encoder};
use weir_proxy::h2wire::message::RequestCheck;
use weir_proxy::h2wire::server::{self, ServerConn};

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

/// Requests in flight at once, and a batch (one timed iteration).
const WAVE: usize = 10;
const BATCH: usize = 100;

/// A server that costs next to nothing and the same for either client: it reads frame heads
/// only, answers each request (a HEADERS with END_STREAM) with a pre-encoded head (`:status
/// 200`, `content-length: 5`) and "hello", and acknowledges SETTINGS. So the difference
/// between the two clients' times is the clients' own work.
async fn canned_server(mut io: DuplexStream) {
    let head: [u8; 5] = [0x88, 0x0f, 0x0d, 0x01, b'5'];
    let mut out = Vec::new();
    frame::write_settings(&mut out, &[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 100)]);
    let mut buf = Vec::new();
    let mut preface = true;
    loop {
        if !out.is_empty() && io.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
        match io.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut at = 0;
        if preface {
            if buf.len() < frame::PREFACE.len() {
                continue;
            }
            at = frame::PREFACE.len();
            preface = false;
        }
        while let Ok(Some((h, range))) =
            frame::next_frame(&buf[at..], frame::MAX_ALLOWED_FRAME_SIZE)
        {
            match h.kind {
                Kind::Settings if !h.has(flag::ACK) => frame::write_settings_ack(&mut out),
                Kind::Headers if h.has(flag::END_STREAM) => {
                    frame::write_headers(&mut out, h.stream, &head, false, 16_384);
                    frame::write_data(&mut out, h.stream, b"hello", true, 16_384);
                }
                _ => {}
            }
            at += range.end;
        }
        buf.drain(..at);
    }
}

fn pipe(rt: &tokio::runtime::Runtime) -> DuplexStream {
    let (client, server) = tokio::io::duplex(1 << 20);
    rt.spawn(canned_server(server));
    client
}

/// The requests of one batch for the h2 crate, built outside the timing: in weir the pipeline
/// has built them before the pool sends them.
fn requests() -> Vec<http::Request<()>> {
    let uri: http::Uri = "http://bench.local/grpc.testing.BenchmarkService/UnaryCall"
        .parse()
        .expect("a valid URI");
    (0..BATCH)
        .map(|_| {
            let mut req = http::Request::new(());
            *req.uri_mut() = uri.clone();
            req
        })
        .collect()
}

/// `BATCH` GETs in waves of `WAVE` on the h2 crate's client, as the pool sends them today.
async fn h2_crate_batch(
    send: &h2::client::SendRequest<Bytes>,
    reqs: Vec<http::Request<()>>,
) -> usize {
    let mut bytes = 0;
    let mut reqs = reqs.into_iter();
    for _ in 0..BATCH / WAVE {
        let mut answers = Vec::with_capacity(WAVE);
        for req in reqs.by_ref().take(WAVE) {
            let mut sender = send.clone().ready().await.expect("connection up");
            let (answer, _) = sender.send_request(req, true).expect("stream opened");
            answers.push(answer);
        }
        for answer in answers {
            let mut body = answer.await.expect("a response").into_body();
            while let Some(data) = body.data().await {
                let data = data.expect("data");
                bytes += data.len();
                let _ = body.flow_control().release_capacity(data.len());
            }
        }
    }
    bytes
}

/// The same on weir's sans-I/O client connection, driven by the plainest owner loop.
struct Owner {
    conn: ClientConn,
    io: DuplexStream,
    buf: Vec<u8>,
    events: Vec<Event>,
}

impl Owner {
    async fn batch(&mut self) -> usize {
        let fields: [(&[u8], &[u8]); 4] = [
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b":path", b"/grpc.testing.BenchmarkService/UnaryCall"),
            (b":authority", b"bench.local"),
        ];
        let mut bytes = 0;
        for _ in 0..BATCH / WAVE {
            for _ in 0..WAVE {
                self.conn.open(fields, true).expect("stream opened");
            }
            let mut done = 0;
            while done < WAVE {
                let out = self.conn.output();
                if !out.is_empty() {
                    self.io.write_all(out).await.expect("written");
                    out.clear();
                }
                self.buf.reserve(16 << 10);
                if self.io.read_buf(&mut self.buf).await.expect("read") == 0 {
                    panic!("the canned server closed");
                }
                let used = self
                    .conn
                    .receive(&self.buf, &mut self.events)
                    .expect("a valid server");
                for event in self.events.drain(..) {
                    if let Event::Data {
                        id,
                        data,
                        end_stream,
                    } = event
                    {
                        bytes += data.len();
                        self.conn.release(id, data.len());
                        done += usize::from(end_stream);
                    }
                }
                self.buf.drain(..used);
            }
        }
        bytes
    }
}

fn client_connection(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    c.bench_function(
        "client: h2 crate, 100 GETs in waves of 10 (canned server)",
        |b| {
            let send = rt.block_on(async {
                let (send, conn) = h2::client::handshake(pipe(&rt)).await.expect("handshake");
                tokio::spawn(conn);
                send
            });
            assert_eq!(rt.block_on(h2_crate_batch(&send, requests())), BATCH * 5);
            b.iter_batched(
                requests,
                |reqs| rt.block_on(h2_crate_batch(&send, reqs)),
                BatchSize::SmallInput,
            )
        },
    );
    c.bench_function(
        "client: h2wire, 100 GETs in waves of 10 (canned server)",
        |b| {
            let mut owner = Owner {
                conn: ClientConn::new(Config::default()),
                io: pipe(&rt),
                buf: Vec::new(),
                events: Vec::new(),
            };
            assert_eq!(rt.block_on(owner.batch()), BATCH * 5);
            b.iter(|| rt.block_on(owner.batch()))
        },
    );
}

/// A client that costs next to nothing and the same for either server: it writes pre-encoded
/// requests (one HEADERS frame each, END_STREAM) in waves and reads frame heads only, counting
/// the streams that ended. So the difference between the two servers' times is their own work.
struct CannedClient {
    io: DuplexStream,
    block: Vec<u8>,
    next_id: u32,
    buf: Vec<u8>,
}

impl CannedClient {
    async fn connect(mut io: DuplexStream) -> CannedClient {
        let mut hello = frame::PREFACE.to_vec();
        frame::write_settings(&mut hello, &[]);
        io.write_all(&hello).await.expect("written");
        let e = HpackEncoder::new();
        let mut block = Vec::new();
        for (n, v) in [
            (&b":method"[..], &b"GET"[..]),
            (b":scheme", b"http"),
            (b":path", b"/grpc.testing.BenchmarkService/UnaryCall"),
            (b":authority", b"bench.local"),
        ] {
            e.field(n, v, false, &mut block);
        }
        CannedClient {
            io,
            block,
            next_id: 1,
            buf: Vec::new(),
        }
    }

    async fn batch(&mut self) -> usize {
        let mut ended = 0;
        for _ in 0..BATCH / WAVE {
            let mut out = Vec::new();
            for _ in 0..WAVE {
                frame::write_headers(&mut out, self.next_id, &self.block, true, 16_384);
                self.next_id += 2;
            }
            // The servers' DATA counts against the connection's window, which only this
            // client can reopen (each stream's own window is far from spent by 5 bytes):
            // without this the servers would stop sending after 65,535 bytes.
            frame::write_window_update(&mut out, 0, (WAVE * 5) as u32);
            self.io.write_all(&out).await.expect("written");
            let mut done = 0;
            while done < WAVE {
                if self.io.read_buf(&mut self.buf).await.expect("read") == 0 {
                    panic!("the server closed");
                }
                let mut at = 0;
                while let Ok(Some((h, range))) =
                    frame::next_frame(&self.buf[at..], frame::MAX_ALLOWED_FRAME_SIZE)
                {
                    if h.stream != 0
                        && h.has(flag::END_STREAM)
                        && matches!(h.kind, Kind::Data | Kind::Headers)
                    {
                        done += 1;
                    }
                    at += range.end;
                }
                self.buf.drain(..at);
            }
            ended += done;
        }
        ended
    }
}

/// The h2 crate's server answering each request in its accept loop (no task per stream, as
/// `listen/h2/` polls streams in place): a head and "hello".
async fn h2_crate_server(io: DuplexStream) {
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    while let Some(Ok((_req, mut respond))) = conn.accept().await {
        let resp = http::Response::builder()
            .header("content-length", "5")
            .body(())
            .expect("a valid response");
        if let Ok(mut send) = respond.send_response(resp, false) {
            let _ = send.send_data(Bytes::from_static(b"hello"), true);
        }
    }
}

/// The same on weir's sans-I/O server connection, with the plainest owner loop.
async fn h2wire_server(mut io: DuplexStream) {
    let mut conn = ServerConn::new(server::Config::default());
    let mut buf = Vec::new();
    let mut events = Vec::new();
    loop {
        let out = conn.output();
        if !out.is_empty() {
            if io.write_all(out).await.is_err() {
                return;
            }
            out.clear();
        }
        buf.reserve(16 << 10);
        match io.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Ok(used) = conn.receive(&buf, &mut events) else {
            return;
        };
        for event in events.drain(..) {
            if let server::Event::Request { id, .. } = event {
                conn.respond(id, 200, [(&b"content-length"[..], &b"5"[..])], false);
                conn.send_data(id, b"hello", true);
            }
        }
        buf.drain(..used);
    }
}

fn server_connection(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    c.bench_function(
        "server: h2 crate, 100 GETs in waves of 10 (canned client)",
        |b| {
            let mut client = rt.block_on(async {
                let (client, server) = tokio::io::duplex(1 << 20);
                tokio::spawn(h2_crate_server(server));
                CannedClient::connect(client).await
            });
            assert_eq!(rt.block_on(client.batch()), BATCH);
            b.iter(|| rt.block_on(client.batch()))
        },
    );
    c.bench_function(
        "server: h2wire, 100 GETs in waves of 10 (canned client)",
        |b| {
            let mut client = rt.block_on(async {
                let (client, server) = tokio::io::duplex(1 << 20);
                tokio::spawn(h2wire_server(server));
                CannedClient::connect(client).await
            });
            assert_eq!(rt.block_on(client.batch()), BATCH);
            b.iter(|| rt.block_on(client.batch()))
        },
    );
}

criterion_group!(benches, header_coding, client_connection, server_connection);
criterion_main!(benches);
