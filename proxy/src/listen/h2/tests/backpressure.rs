//! A client that writes without reading: the connection stops reading it once its unwritten
//! output is large, rather than queue without bound (or end it for not reading), and goes on
//! when the client reads again.

use std::sync::Arc;

use http::Response;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use super::harness::{start, within, Handler};
use crate::forward::body::ResponseBody;
use crate::listen::spec::LimitsSpec;

/// PINGs sent: 8 MiB of frames, their answers far more than the kernel's buffers hold.
const PINGS: usize = 500_000;

#[tokio::test]
async fn a_client_that_does_not_read_is_not_read_until_it_does() {
    let handler: Handler = Arc::new(|_req| Box::pin(async { Response::new(ResponseBody::Empty) }));
    let server = start(LimitsSpec::default(), handler).await;
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("small buffer");
    let stream = socket.connect(server.addr).await.expect("connect");
    let (mut rd, mut wr) = stream.into_split();
    let writer = tokio::spawn(async move {
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        for i in 0..PINGS {
            bytes.extend_from_slice(&[0, 0, 8, 6, 0, 0, 0, 0, 0]);
            bytes.extend_from_slice(&(i as u64).to_be_bytes());
        }
        wr.write_all(&bytes).await.expect("write");
        wr
    });
    // Not read for a while: the server must neither fail nor finish.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!server.done.is_finished(), "the connection is still up");
    assert!(
        !writer.is_finished(),
        "the server stopped reading the client"
    );
    // Then read: every PING is answered, in order, and no GOAWAY comes.
    let mut buf = Vec::new();
    let mut acks = 0;
    within(60, async {
        while acks < PINGS {
            let mut chunk = [0u8; 64 << 10];
            let n = rd.read(&mut chunk).await.expect("read");
            assert!(n > 0, "closed after {acks} answers");
            buf.extend_from_slice(&chunk[..n]);
            let mut at = 0;
            while let Some(head) = buf.get(at..at + 9) {
                let len = usize::from(head[1]) << 8 | usize::from(head[2]);
                let Some(payload) = buf.get(at + 9..at + 9 + len) else {
                    break;
                };
                assert_ne!(head[3], 7, "GOAWAY: {payload:?}");
                if head[3] == 6 {
                    assert_eq!(head[4], 1, "a PING answer");
                    assert_eq!(payload, (acks as u64).to_be_bytes());
                    acks += 1;
                }
                at += 9 + len;
            }
            buf.drain(..at);
        }
    })
    .await;
    within(10, writer).await.expect("all written");
}
