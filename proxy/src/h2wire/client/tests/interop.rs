//! The client against the h2 crate's server over a real socket: fifty requests, as many
//! streams opened as the server allows before any answer is read, bodies both ways past every
//! window, gRPC trailers,
//! SETTINGS_MAX_CONCURRENT_STREAMS, a refused stream, and a GOAWAY that leaves streams
//! unprocessed.

use std::collections::HashMap;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::timeout;

use super::driver::Driver;
use super::h2server::{pattern, serve, MIB};

use crate::h2wire::client::{ClientConn, Event, Fields, OpenError};
use crate::h2wire::frame::{next_frame, ErrorCode, Kind, MAX_ALLOWED_FRAME_SIZE};

/// One request of the fifty, and what came back.
#[derive(Default)]
struct Exchange {
    path: String,
    body: Vec<u8>,
    sent: usize,
    status: Option<u16>,
    fields: Fields,
    content: Vec<u8>,
    trailers: Option<Fields>,
    reset: Option<(ErrorCode, bool)>,
    done: bool,
}

impl Exchange {
    fn new(i: usize) -> Exchange {
        let (path, body) = match i {
            0 => ("/echo".to_string(), pattern(3 * MIB, 7)),
            1 => ("/big".to_string(), Vec::new()),
            3 => ("/refuse".to_string(), Vec::new()),
            _ => match i % 3 {
                0 => (format!("/get?{i}"), Vec::new()),
                1 => ("/echo".to_string(), pattern(i * 997, i as u8)),
                _ => ("/grpc".to_string(), grpc_message(i)),
            },
        };
        Exchange {
            path,
            body,
            ..Exchange::default()
        }
    }

    fn open(&self, conn: &mut ClientConn, i: usize) -> Result<u32, OpenError> {
        let method = if self.body.is_empty() { "GET" } else { "POST" };
        let (tag, length) = (format!("t{i}"), self.body.len().to_string());
        let mut fields: Vec<(&[u8], &[u8])> = vec![
            (b":method", method.as_bytes()),
            (b":scheme", b"http"),
            (b":path", self.path.as_bytes()),
            (b":authority", b"localhost"),
            (b"x-tag", tag.as_bytes()),
        ];
        if !self.body.is_empty() {
            fields.push((b"content-length", length.as_bytes()));
        }
        conn.open(fields, self.body.is_empty())
    }

    fn take(&mut self, conn: &mut ClientConn, event: Event, buf: &[u8]) {
        match event {
            Event::Response {
                status,
                fields,
                end_stream,
                ..
            } => {
                self.status = Some(status);
                self.fields = fields;
                self.done |= end_stream;
            }
            Event::Data {
                id,
                data,
                end_stream,
            } => {
                self.content.extend_from_slice(&buf[data.clone()]);
                conn.release(id, data.len());
                self.done |= end_stream;
            }
            Event::Trailers { fields, .. } => {
                self.trailers = Some(fields);
                self.done = true;
            }
            Event::Reset { code, refused, .. } => {
                self.reset = Some((code, refused));
                self.done = true;
            }
            other => panic!("not a stream's event: {other:?}"),
        }
    }

    /// Every byte and field came back as the server sends them.
    fn check(&self, i: usize) {
        if self.path == "/refuse" {
            assert_eq!(self.reset, Some((ErrorCode::REFUSED_STREAM, true)), "{i}");
            return;
        }
        assert_eq!(self.reset, None, "{i} {}", self.path);
        assert_eq!(self.status, Some(200), "{i}");
        let tag = format!("t{i}");
        assert_eq!(self.fields.get(b"x-tag"), Some(tag.as_bytes()), "{i}");
        let want = match self.path.as_str() {
            "/echo" | "/grpc" => self.body.clone(),
            "/big" => pattern(3 * MIB, 0x5a),
            _ => format!("hello {i}").into_bytes(),
        };
        assert!(self.content == want, "{i} {}: body differs", self.path);
        if self.path == "/grpc" {
            let grpc = &b"application/grpc"[..];
            assert_eq!(self.fields.get(b"content-type"), Some(grpc));
            let trailers = self.trailers.as_ref().expect("trailers");
            assert_eq!(trailers.get(b"grpc-status"), Some(&b"0"[..]));
            assert_eq!(trailers.get(b"grpc-message"), Some(&b"done"[..]));
        } else {
            let length = want.len().to_string();
            assert_eq!(self.fields.get(b"content-length"), Some(length.as_bytes()));
        }
    }
}

/// A gRPC message: not compressed, 4 octets of length, then the message.
fn grpc_message(i: usize) -> Vec<u8> {
    let message = pattern(100 + i, 3);
    let mut framed = vec![0];
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(&message);
    framed
}

async fn fifty_exchanges() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(serve(listener, 10));
    let mut driver = Driver::connect(addr).await;
    assert_eq!(driver.settle().await, Some(10));

    let mut exchanges: Vec<Exchange> = (0..50).map(Exchange::new).collect();
    let mut ids: HashMap<u32, usize> = HashMap::new();
    let (mut next, mut most_active, mut turns, mut capacity_events) = (0, 0, 0, 0);
    while exchanges.iter().any(|e| !e.done) {
        turns += 1;
        assert!(turns < 200_000, "no end in sight");
        while next < exchanges.len() && driver.conn.can_open() {
            let id = exchanges[next].open(&mut driver.conn, next).unwrap();
            ids.insert(id, next);
            next += 1;
        }
        let active = driver.conn.active_streams();
        most_active = most_active.max(active);
        if next < exchanges.len() {
            // Requests wait: the server's limit is reached, and it says so.
            assert_eq!(active, 10);
            assert_eq!(driver.conn.open([], true), Err(OpenError::AtLimit));
        }
        for (&id, &i) in &ids {
            let e = &mut exchanges[i];
            if e.sent < e.body.len() {
                e.sent += driver.conn.send_data(id, &e.body[e.sent..], true);
            }
        }
        let alive = driver
            .turn(|conn, event, buf| match event {
                Event::Capacity { .. } => capacity_events += 1,
                Event::PingAck(_) | Event::Settings { .. } => {}
                Event::GoAway { .. } => panic!("unexpected {event:?}"),
                Event::Response { id, .. }
                | Event::Data { id, .. }
                | Event::Trailers { id, .. }
                | Event::Reset { id, .. } => exchanges[ids[&id]].take(conn, event, buf),
            })
            .await;
        assert!(alive, "the server closed the connection");
    }
    assert_eq!(most_active, 10, "the server's limit was reached and held");
    // 3 MiB went up through the server's 65,535-octet windows: its updates let them on.
    assert!(capacity_events > 0);
    for (i, e) in exchanges.iter().enumerate() {
        e.check(i);
    }
    assert_eq!(driver.conn.active_streams(), 0);
    driver.conn.go_away(ErrorCode::NO_ERROR);
    let out = std::mem::take(driver.conn.output());
    driver.io.write_all(&out).await.unwrap();
    drop(driver);
    let served = timeout(Duration::from_secs(5), server).await;
    assert!(matches!(served, Ok(Ok(Ok(())))), "{served:?}");
}

#[tokio::test]
async fn fifty_exchanges_with_the_h2_crate_server() {
    timeout(Duration::from_secs(120), fifty_exchanges())
        .await
        .expect("done within two minutes");
}

/// Whether `buf`, whole frames from its start, holds a GOAWAY.
fn holds_goaway(mut buf: &[u8]) -> bool {
    while let Ok(Some((head, range))) = next_frame(buf, MAX_ALLOWED_FRAME_SIZE) {
        if head.kind == Kind::GoAway {
            return true;
        }
        buf = &buf[range.end..];
    }
    false
}

async fn goaway_race() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, 100));
    let mut driver = Driver::connect(addr).await;
    driver.settle().await;
    let mut warm = Exchange::new(6);
    let id = warm.open(&mut driver.conn, 6).unwrap();
    assert_eq!(id, 1);
    while !warm.done {
        assert!(
            driver
                .turn(|conn, event, buf| match event {
                    Event::Capacity { .. } | Event::Settings { .. } => {}
                    event => warm.take(conn, event, buf),
                })
                .await
        );
    }
    warm.check(6);

    // GOAWAY(3) is on its way when streams 5 and 7 open: the server never saw them.
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", b"GET"),
        (b":scheme", b"http"),
        (b":path", b"/goaway"),
        (b":authority", b"localhost"),
    ];
    assert_eq!(driver.conn.open(fields, true), Ok(3));
    let out = std::mem::take(driver.conn.output());
    driver.io.write_all(&out).await.unwrap();
    for _ in 0..1_000 {
        if holds_goaway(&driver.buf) {
            break;
        }
        driver.buf.reserve(4 << 10);
        let n = driver.io.read_buf(&mut driver.buf).await.unwrap();
        assert!(n > 0, "the connection ended before its GOAWAY");
    }
    assert!(holds_goaway(&driver.buf));
    let late = [Exchange::new(9), Exchange::new(12)];
    let late_ids: Vec<u32> = (late.iter().zip([9, 12]))
        .map(|(e, i)| e.open(&mut driver.conn, i).unwrap())
        .collect();
    assert_eq!(late_ids, [5, 7]);
    // The server may have closed already: what happens to these bytes does not matter.
    let out = std::mem::take(driver.conn.output());
    let _ = driver.io.write_all(&out).await;

    let mut events = Vec::new();
    driver.conn.receive(&driver.buf, &mut events).unwrap();
    let goaway = events.iter().find(|e| matches!(e, Event::GoAway { .. }));
    let want = Event::GoAway {
        last_stream: 3,
        code: ErrorCode::NO_ERROR,
        unprocessed: vec![5, 7],
    };
    assert_eq!(goaway, Some(&want), "{events:?}");
    assert!(!driver.conn.can_open());
    assert_eq!(driver.conn.open(fields, true), Err(OpenError::GoingAway));
    assert!(
        driver.conn.active_streams() <= 1,
        "only stream 3 may be left"
    );
}

#[tokio::test]
async fn a_goaway_leaves_the_streams_above_its_last_unprocessed() {
    timeout(Duration::from_secs(30), goaway_race())
        .await
        .expect("done within 30 s");
}
