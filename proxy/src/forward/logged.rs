//! The access-log line of a request through the hyper engine (`crate::pipeline::logging`): its
//! body bytes are counted as they pass (`RequestBody::Counted`), and a response from upstream
//! carries the line to its body's end (`UpstreamBody`), where the bytes sent and the whole
//! duration are known.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use http::{StatusCode, Version};

use crate::access_log::Pending;
use crate::pipeline::{logging, ConnState, Counts, Exchange, Failure, Proxy};

/// A line begun for a request: what is needed to finish it wherever its exchange ends.
pub(super) struct Logging {
    pending: Pending,
    /// Counts the request body as the upstream takes it; None for a request without one.
    pub(super) request_bytes: Option<Arc<AtomicU64>>,
}

impl Logging {
    pub(super) fn new(pending: Pending, has_body: bool) -> Self {
        Logging {
            pending,
            request_bytes: has_body.then(|| Arc::new(AtomicU64::new(0))),
        }
    }

    fn tally(&self) -> Counts {
        Counts {
            request_bytes: self
                .request_bytes
                .as_ref()
                .map_or(0, |c| c.load(Ordering::Relaxed)),
            ..Counts::default()
        }
    }

    /// Answered by weir itself (no route, a redirect, no weight, a refused request) with
    /// `status` and a body of `bytes`.
    pub(super) fn local(self, proxy: &Proxy, status: StatusCode, bytes: u64) {
        let mut tally = self.tally();
        tally.status = Some(status.as_u16());
        tally.response_bytes = bytes;
        logging::finish(proxy, Some(self.pending), None, &tally);
    }

    /// The upstream gave no answer: the client was told `status` with a body of `bytes` (or
    /// nothing, when it had gone).
    pub(super) fn failed(
        self,
        proxy: &Proxy,
        exchange: &Exchange<'_>,
        failure: Failure,
        (status, bytes): (StatusCode, u64),
    ) {
        let mut tally = self.tally();
        tally.failure = Some(failure);
        if failure != Failure::ClientGone {
            tally.status = Some(status.as_u16());
            tally.response_bytes = bytes;
        }
        logging::finish(proxy, Some(self.pending), Some(exchange), &tally);
    }

    /// The upstream's response head, with `status`, came at `at`: the line waits for the body's
    /// end (None: it is not written, being sampled out and no failure).
    pub(super) fn answered(
        self,
        exchange: &Exchange<'_>,
        status: u16,
        at: Instant,
        state: ConnState,
    ) -> Option<Box<Logged>> {
        let tally = Counts {
            status: Some(status),
            answered: Some(at),
            ..Counts::default()
        };
        let pending = logging::answered(self.pending, Some(exchange), &tally)?;
        Some(Box::new(Logged {
            pending,
            state,
            request_bytes: self.request_bytes,
            response_bytes: 0,
        }))
    }
}

/// A line waiting for its response body's end.
pub struct Logged {
    pending: Pending,
    /// The connection's proxy (its access log) and client: held by reference count, as the
    /// body outlives the request's handler.
    state: ConnState,
    request_bytes: Option<Arc<AtomicU64>>,
    pub(super) response_bytes: u64,
}

impl Logged {
    /// The body ended (`failure`: cut short by the upstream or the client).
    pub(super) fn end(self, failure: Option<&'static str>) {
        let tally = Counts {
            request_bytes: self
                .request_bytes
                .as_ref()
                .map_or(0, |c| c.load(Ordering::Relaxed)),
            response_bytes: self.response_bytes,
            body_failure: failure,
            ..Counts::default()
        };
        logging::end(&self.state.0, self.pending, &tally);
    }
}

/// The protocol as the access log names it.
pub(super) fn protocol(version: Version) -> &'static str {
    match version {
        Version::HTTP_2 => "HTTP/2",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    }
}
