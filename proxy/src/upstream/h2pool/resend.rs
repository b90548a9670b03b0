//! A request kept so that it can go again when its stream was refused. RFC 9113 §8.7: a
//! stream reset with REFUSED_STREAM, or above the last stream id of a GOAWAY, was not
//! processed by the server, so any method may be sent again, on another connection.
//!
//! The head is not copied: the exchange hands it back with the refusal (`Failed::Refused`),
//! since encoding it into HPACK only borrowed it. A body that has all come by the time the
//! request first goes (one chunk, no trailers: a gRPC unary call's message) is kept whole, a
//! shared `Bytes` that costs no more memory than the send holds anyway. A body still arriving
//! is a `Replay` (`upstream::body`) that keeps what it has sent, up to `REPLAY_LIMIT`, and
//! shares the client's body with any later copy, so a copy sends the kept bytes and then the
//! rest as the client sends it. A body that outgrew the limit cannot go again (the request
//! fails as it would have without a retry).

use bytes::Bytes;
use http::request::Parts;
use http::Request;
use http_body::Body;

use crate::upstream::body::{Replay, RequestBody};

/// What it takes, besides its head, to send a request once more: a copy of its body from
/// the start; None for a request without a body.
pub struct Resend {
    body: Option<Again>,
}

/// A body to send again.
enum Again {
    /// All of it, known when the request first went (a gRPC unary call's message has come
    /// whole by then): sent again as it is, with no `Replay` to share and lock.
    Whole(Bytes),
    /// A body still arriving: the kept part, then the rest as the client sends it.
    Replay(Replay),
}

impl Resend {
    /// Makes `req`'s body one that can go again, and keeps what it takes to send it again.
    pub fn keep(req: Request<RequestBody>) -> (Request<RequestBody>, Resend) {
        let (parts, body) = req.into_parts();
        let (body, kept) = match body {
            RequestBody::Replay(replay) => {
                let kept = replay.copy().map(Again::Replay);
                (RequestBody::Replay(replay), kept)
            }
            body if body.is_end_stream() => (body, None),
            mut body => match body.take_whole() {
                Some(whole) => (
                    RequestBody::Bytes(Some(whole.clone())),
                    Some(Again::Whole(whole)),
                ),
                None => {
                    let replay = Replay::new(body);
                    let kept = replay.copy().map(Again::Replay);
                    (RequestBody::Replay(replay), kept)
                }
            },
        };
        (Request::from_parts(parts, body), Resend { body: kept })
    }

    /// The request again with `head`, its body from the start; None if the body outgrew what
    /// is kept.
    pub fn again(self, head: Parts) -> Option<Request<RequestBody>> {
        let body = match self.body {
            None => RequestBody::Empty,
            Some(Again::Whole(whole)) => RequestBody::Bytes(Some(whole)),
            Some(Again::Replay(kept)) => RequestBody::Replay(kept.copy()?),
        };
        Some(Request::from_parts(head, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::body::REPLAY_LIMIT;
    use bytes::Bytes;
    use http_body_util::BodyExt;
    use std::pin::Pin;

    fn request(body: RequestBody) -> Request<RequestBody> {
        Request::post("http://up/pkg.Svc/Call")
            .header("content-type", "application/grpc")
            .body(body)
            .unwrap()
    }

    async fn read(req: Request<RequestBody>) -> Vec<u8> {
        req.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    #[tokio::test]
    async fn a_copy_sends_the_same_head_and_body_after_the_first_send_read_some_of_it() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let (first, resend) = Resend::keep(request(RequestBody::Mirror(rx)));
        // The exchange hands the head back with a refusal.
        let (head, mut first) = first.into_parts();
        tx.send(Bytes::from_static(b"hello ")).await.unwrap();
        let frame = std::future::poll_fn(|cx| Pin::new(&mut first).poll_frame(cx)).await;
        assert_eq!(frame.unwrap().unwrap().into_data().unwrap(), "hello ");
        // The stream is refused: the first body is dropped, a copy goes on.
        drop(first);
        let again = resend.again(head).expect("small enough to keep");
        assert_eq!(again.method(), http::Method::POST);
        assert_eq!(again.headers()["content-type"], "application/grpc");
        tx.send(Bytes::from_static(b"world")).await.unwrap();
        drop(tx);
        assert_eq!(read(again).await, b"hello world");
    }

    #[tokio::test]
    async fn a_bodiless_request_goes_again_without_one() {
        let (req, resend) = Resend::keep(request(RequestBody::Empty));
        assert!(matches!(req.body(), RequestBody::Empty));
        let (head, _) = req.into_parts();
        let again = resend.again(head).unwrap();
        assert!(again.body().is_end_stream());
    }

    #[tokio::test]
    async fn a_body_still_arriving_past_the_limit_cannot_go_again() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let (req, resend) = Resend::keep(request(RequestBody::Mirror(rx)));
        assert!(matches!(req.body(), RequestBody::Replay(_)));
        tx.send(Bytes::from(vec![7u8; REPLAY_LIMIT])).await.unwrap();
        tx.send(Bytes::from_static(b"one more")).await.unwrap();
        drop(tx);
        let (head, body) = req.into_parts();
        assert_eq!(read(Request::new(body)).await.len(), REPLAY_LIMIT + 8);
        assert!(resend.again(head).is_none());
    }

    #[tokio::test]
    async fn a_body_known_whole_goes_again_whole_whatever_its_size() {
        let big = Bytes::from(vec![7u8; REPLAY_LIMIT + 1]);
        let (req, resend) = Resend::keep(request(RequestBody::Bytes(Some(big.clone()))));
        assert!(
            matches!(req.body(), RequestBody::Bytes(Some(_))),
            "no Replay"
        );
        let (head, body) = req.into_parts();
        assert_eq!(read(Request::new(body)).await, big);
        let again = resend.again(head).expect("kept whole");
        let (head, body) = again.into_parts();
        let sent = match body {
            RequestBody::Bytes(Some(b)) => b,
            _ => panic!("sent again as the same bytes"),
        };
        assert_eq!(sent.as_ptr(), big.as_ptr(), "shared, not copied");
        assert_eq!(head.method, http::Method::POST);
    }

    #[tokio::test]
    async fn a_copy_of_a_copy_shares_the_same_body() {
        let body = RequestBody::Bytes(Some(Bytes::from_static(b"abc")));
        let (req, resend) = Resend::keep(request(body));
        let (head, body) = req.into_parts();
        assert_eq!(read(Request::new(body)).await, b"abc");
        let (req, resend) = Resend::keep(resend.again(head).unwrap());
        let (head, body) = req.into_parts();
        assert_eq!(read(Request::new(body)).await, b"abc");
        assert_eq!(read(resend.again(head).unwrap()).await, b"abc");
    }
}
