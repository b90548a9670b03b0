//! How a stream on a pool connection ends without its response: what the server said, what
//! this side found, or the connection's end. The pool's decisions read it: a refused stream
//! goes again (`resend`), the rest are counted against the backend.

use std::fmt;

use crate::h2wire::client::ConnError;
use crate::h2wire::frame::ErrorCode;
use crate::stats::UpstreamError;

/// Why a stream gave no (complete) response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// The server did not process it: it reset it with REFUSED_STREAM, or its GOAWAY left the
    /// stream above the last one it processes (RFC 9113 §8.7). It may be sent again, on
    /// another connection, whatever its method.
    Refused,
    /// The server reset the stream with `code`.
    Reset(ErrorCode),
    /// This side reset it: the response broke `why` (§8.1.1, §6.9.1).
    Malformed(&'static str),
    /// This side gave it up: the request's body broke, or its reader went away.
    Cancelled,
    /// The connection ended while the stream was open.
    Connection(ConnEnd),
}

/// Why a pool connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnEnd {
    /// The server broke the protocol: GOAWAY went to it with the error.
    Protocol(ConnError),
    /// The server closed the connection, or reading or writing it failed.
    Closed,
    /// A PING went unanswered for the keep-alive timeout.
    Silent,
}

impl StreamError {
    /// How the backend is charged: a server's reset, a closed or silent connection are
    /// resets (502); a response or connection that broke the protocol is a protocol error
    /// (502 too, counted apart).
    pub fn classify(&self) -> UpstreamError {
        match self {
            StreamError::Malformed(_) | StreamError::Connection(ConnEnd::Protocol(_)) => {
                UpstreamError::Protocol
            }
            StreamError::Refused
            | StreamError::Reset(_)
            | StreamError::Cancelled
            | StreamError::Connection(ConnEnd::Closed | ConnEnd::Silent) => UpstreamError::Reset,
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Refused => f.write_str("the upstream refused the HTTP/2 stream"),
            StreamError::Reset(code) => write!(f, "the upstream reset the HTTP/2 stream: {code}"),
            StreamError::Malformed(why) => write!(f, "the upstream's HTTP/2 response: {why}"),
            StreamError::Cancelled => {
                f.write_str("the HTTP/2 stream to the upstream was cancelled")
            }
            StreamError::Connection(ConnEnd::Protocol(e)) => write!(f, "{e}"),
            StreamError::Connection(ConnEnd::Closed) => {
                f.write_str("the upstream's HTTP/2 connection closed")
            }
            StreamError::Connection(ConnEnd::Silent) => {
                f.write_str("the upstream's HTTP/2 connection did not answer PING")
            }
        }
    }
}

impl std::error::Error for StreamError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_faults_are_counted_apart_from_resets() {
        assert_eq!(
            StreamError::Malformed("x").classify(),
            UpstreamError::Protocol
        );
        let conn = ConnError {
            code: ErrorCode::PROTOCOL_ERROR,
            why: "w",
        };
        assert_eq!(
            StreamError::Connection(ConnEnd::Protocol(conn)).classify(),
            UpstreamError::Protocol
        );
        assert_eq!(
            StreamError::Reset(ErrorCode::INTERNAL_ERROR).classify(),
            UpstreamError::Reset
        );
        assert_eq!(
            StreamError::Connection(ConnEnd::Silent).classify(),
            UpstreamError::Reset
        );
        assert!(StreamError::Reset(ErrorCode::CANCEL)
            .to_string()
            .contains("CANCEL"));
    }
}
