//! Answers that complete in the same turn of the runtime, woken by different tasks, go out in
//! one write: the connection holds small output back until the runtime has run every task
//! already ready (`H2Connection::held`).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify};

use super::harness::{client, read_all, start_on, within, Handler};
use crate::forward::body::ResponseBody;
use crate::listen::spec::LimitsSpec;

/// A socket that counts the writes made to it.
struct Counted {
    io: TcpStream,
    writes: Arc<AtomicUsize>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Eight streams, four answered when one gate opens and four when a second task opens the
/// other, later in the same turn: one write carries all eight answers.
#[tokio::test]
async fn answers_completed_by_different_tasks_in_one_turn_go_out_in_one_write() {
    let writes = Arc::new(AtomicUsize::new(0));
    let arrived = Arc::new(AtomicUsize::new(0));
    let (open_a, gate_a) = watch::channel(false);
    let (open_b, gate_b) = watch::channel(false);
    let handler: Handler = {
        let arrived = arrived.clone();
        Arc::new(move |req| {
            let mut gate = if req.uri().path() == "/a" {
                gate_a.clone()
            } else {
                gate_b.clone()
            };
            let arrived = arrived.clone();
            Box::pin(async move {
                arrived.fetch_add(1, Ordering::SeqCst);
                let _ = gate.wait_for(|open| *open).await;
                Response::new(ResponseBody::text("answer"))
            })
        })
    };
    let counted = writes.clone();
    let server = start_on(LimitsSpec::default(), handler, move |io| Counted {
        io,
        writes: counted,
    })
    .await;
    let (mut send, _conn) = client(server.addr, 1 << 20).await;
    let mut answers = Vec::new();
    for path in ["/a", "/b", "/a", "/b", "/a", "/b", "/a", "/b"] {
        let req = Request::get(format!("http://test{path}"))
            .body(())
            .expect("request");
        let (answer, _) = send.send_request(req, true).expect("send");
        answers.push(answer);
    }
    within(10, async {
        while arrived.load(Ordering::SeqCst) < 8 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    // The second gate is opened by a task woken after the connection was.
    let kick = Arc::new(Notify::new());
    let opener = {
        let kick = kick.clone();
        tokio::spawn(async move {
            kick.notified().await;
            let _ = open_b.send(true);
        })
    };
    tokio::task::yield_now().await;
    let before = writes.load(Ordering::SeqCst);
    let _ = open_a.send(true);
    kick.notify_one();
    for answer in answers {
        let resp = within(10, answer).await.expect("an answer");
        let (body, _) = within(10, read_all(resp.into_body())).await.expect("body");
        assert_eq!(body, b"answer");
    }
    opener.await.expect("opener");
    assert_eq!(
        writes.load(Ordering::SeqCst) - before,
        1,
        "the eight answers in one write"
    );
    server.done.abort();
}
