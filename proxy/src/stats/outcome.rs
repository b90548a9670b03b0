//! What one attempt against a backend ended as, and what counts as failure.

use std::time::{Duration, Instant};

/// Which side of a route a request went to. The label value in metrics is `as_str()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Stable,
    Canary,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Stable => "stable",
            Role::Canary => "canary",
        }
    }

    pub fn other(self) -> Role {
        match self {
            Role::Stable => Role::Canary,
            Role::Canary => Role::Stable,
        }
    }
}

/// A role is the name of its backend in a rollout's route.
impl AsRef<str> for Role {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// Why an attempt got no usable response from the upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UpstreamError {
    /// TCP connect refused, unreachable, or DNS failed.
    Connect,
    /// Connect timeout, response-header timeout or the route's request timeout.
    Timeout,
    /// The connection closed or reset before a response arrived.
    Reset,
    /// TLS handshake to the upstream failed.
    Tls,
    /// The upstream spoke malformed HTTP.
    Protocol,
    /// Every HTTP/2 connection of the upstream was at its stream limit, no more could open,
    /// and the request's wait for a stream ended (the queue was full, or its deadline passed).
    StreamLimit,
}

impl UpstreamError {
    pub const ALL: [UpstreamError; 6] = [
        UpstreamError::Connect,
        UpstreamError::Timeout,
        UpstreamError::Reset,
        UpstreamError::Tls,
        UpstreamError::Protocol,
        UpstreamError::StreamLimit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamError::Connect => "connect",
            UpstreamError::Timeout => "timeout",
            UpstreamError::Reset => "reset",
            UpstreamError::Tls => "tls",
            UpstreamError::Protocol => "protocol",
            UpstreamError::StreamLimit => "stream_limit",
        }
    }

    /// The status weir answers when this error ends a request.
    pub fn status(self) -> u16 {
        match self {
            UpstreamError::Timeout => 504,
            UpstreamError::Connect | UpstreamError::StreamLimit => 503,
            UpstreamError::Reset | UpstreamError::Tls | UpstreamError::Protocol => 502,
        }
    }
}

/// One attempt's result: recorded into metrics and the live windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The upstream's status, or for an error the status weir answers for it.
    pub status: u16,
    /// Set when no response came from the upstream.
    pub error: Option<UpstreamError>,
    /// A gRPC status of the server-fault kind was seen (headers or trailers).
    pub grpc_fault: bool,
    /// From sending the request upstream to the response headers (or to the error).
    pub latency: Duration,
    /// When it ended, if the caller read the clock anyway (it does, for `latency`): the live
    /// window files it under that second instead of reading the clock again.
    pub ended: Option<Instant>,
}

impl Outcome {
    pub fn response(status: u16, latency: Duration) -> Self {
        Outcome {
            status,
            error: None,
            grpc_fault: false,
            latency,
            ended: None,
        }
    }

    /// The outcome of an attempt that began at `started` and ended at `now`.
    pub fn response_between(status: u16, started: Instant, now: Instant) -> Self {
        Outcome {
            ended: Some(now),
            ..Outcome::response(status, now.saturating_duration_since(started))
        }
    }

    pub fn error(error: UpstreamError, latency: Duration) -> Self {
        Outcome {
            status: error.status(),
            error: Some(error),
            grpc_fault: false,
            latency,
            ended: None,
        }
    }

    /// 5xx, upstream errors and server-fault gRPC statuses are failures; 4xx are the client's.
    pub fn is_failure(&self) -> bool {
        self.status >= 500 || self.error.is_some() || self.grpc_fault
    }
}

/// gRPC codes that mean the server (not the caller) is at fault:
/// UNKNOWN 2, DEADLINE_EXCEEDED 4, UNIMPLEMENTED 12, INTERNAL 13, UNAVAILABLE 14, DATA_LOSS 15.
pub fn grpc_status_is_fault(code: &[u8]) -> bool {
    matches!(code, b"2" | b"4" | b"12" | b"13" | b"14" | b"15")
}

/// The field a gRPC call's status is in (a trailer, or a trailers-only answer's head).
pub static GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");

/// A gRPC answer whose status is still to come, in its trailers: a gRPC content type and no
/// status in the head.
pub fn grpc_status_in_trailers(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
        && !headers.contains_key(&GRPC_STATUS)
}

/// A gRPC server-fault status in a field section: a trailers-only answer's head, or trailers.
pub fn grpc_fault_in(headers: &http::HeaderMap) -> bool {
    headers
        .get(&GRPC_STATUS)
        .is_some_and(|code| grpc_status_is_fault(code.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_hundreds_are_not_failures() {
        let ms = Duration::from_millis(1);
        assert!(!Outcome::response(404, ms).is_failure());
        assert!(!Outcome::response(499, ms).is_failure());
        assert!(Outcome::response(500, ms).is_failure());
        assert!(Outcome::error(UpstreamError::Connect, ms).is_failure());
        let mut grpc = Outcome::response(200, ms);
        grpc.grpc_fault = true;
        assert!(grpc.is_failure());
    }

    #[test]
    fn grpc_fault_codes() {
        for c in ["2", "4", "12", "13", "14", "15"] {
            assert!(grpc_status_is_fault(c.as_bytes()), "{c}");
        }
        for c in ["0", "1", "3", "5", "7", "8", "16", "140"] {
            assert!(!grpc_status_is_fault(c.as_bytes()), "{c}");
        }
    }
}
