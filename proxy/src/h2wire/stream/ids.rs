//! Stream identifiers (RFC 9113 §5.1.1) for one connection, and what a GOAWAY says about them
//! (§6.8).

use super::super::frame::ErrorCode;
use super::error::Refused;

/// The largest stream identifier: 31 bits (§5.1.1).
pub const MAX_STREAM_ID: u32 = 0x7fff_ffff;

/// Which end of the connection this side is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

/// The stream identifiers of one connection, seen from one side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamIds {
    role: Role,
    /// The next identifier this side opens: odd for a client, even for a server (§5.1.1).
    /// Above [`MAX_STREAM_ID`] once they are used up.
    next_local: u32,
    /// The highest identifier the peer opened, 0 for none: what this side's GOAWAY reports.
    highest_remote: u32,
    /// The last stream identifier of the peer's GOAWAY, the lowest if it sent several.
    peer_last: Option<u32>,
}

impl StreamIds {
    pub fn new(role: Role) -> StreamIds {
        StreamIds {
            role,
            next_local: match role {
                Role::Client => 1,
                Role::Server => 2,
            },
            highest_remote: 0,
            peer_last: None,
        }
    }

    /// The identifier of the next stream this side opens, which must be its next HEADERS'
    /// (§5.1.1: identifiers are opened in increasing order). `None` once they are used up —
    /// the connection must then be replaced (§5.1.1: identifiers cannot be reused) — or once
    /// the peer sent GOAWAY (§6.8: no new streams after it).
    pub fn open_local(&mut self) -> Option<u32> {
        if self.next_local > MAX_STREAM_ID || self.peer_last.is_some() {
            return None;
        }
        let id = self.next_local;
        self.next_local = id.saturating_add(2);
        Some(id)
    }

    /// Takes `id` as a stream the peer opens with the HEADERS just received on it. The peer's
    /// identifiers must have its parity and increase (§5.1.1: anything else is a connection
    /// PROTOCOL_ERROR); skipped identifiers are closed for good. A server opens streams only
    /// by PUSH_PROMISE, which weir refuses, so a client accepts none: HEADERS on an idle stream
    /// the server would initiate is a connection PROTOCOL_ERROR (§5.1 "idle").
    pub fn accept_remote(&mut self, id: u32) -> Result<(), Refused> {
        let why = match self.role {
            Role::Client => "HEADERS opening a stream from the server (§5.1)",
            Role::Server if id.is_multiple_of(2) => {
                "a client opening an even-numbered stream (§5.1.1)"
            }
            Role::Server if id > MAX_STREAM_ID => "a stream identifier above 2^31-1 (§5.1.1)",
            Role::Server if id <= self.highest_remote => {
                "a new stream identifier not above every earlier one (§5.1.1)"
            }
            Role::Server => {
                self.highest_remote = id;
                return Ok(());
            }
        };
        Err(Refused::connection(ErrorCode::PROTOCOL_ERROR, why))
    }

    /// The highest identifier the peer has opened (0 for none): the last stream identifier for
    /// this side's GOAWAY (§6.8).
    pub fn highest_remote(&self) -> u32 {
        self.highest_remote
    }

    /// Whether `id` is in the "idle" state (§5.1): never opened, and not implicitly closed by a
    /// higher identifier of the same side (§5.1.1). For a frame on a stream the engine does not
    /// know: idle means the §5.1 "idle" rules apply, otherwise the stream is closed.
    pub fn is_idle(&self, id: u32) -> bool {
        if id == 0 || id > MAX_STREAM_ID {
            return false;
        }
        if self.is_local(id) {
            id >= self.next_local
        } else {
            id > self.highest_remote
        }
    }

    /// The peer sent GOAWAY with `last_stream`. No stream may be opened after it (§6.8); a
    /// later GOAWAY may lower the last stream but not raise it, so the lowest is kept.
    pub fn going_away(&mut self, last_stream: u32) {
        self.peer_last = Some(self.peer_last.map_or(last_stream, |l| l.min(last_stream)));
    }

    /// The last stream identifier of the peer's GOAWAY (the lowest, if it sent several), or
    /// None if it sent none.
    pub fn peer_last(&self) -> Option<u32> {
        self.peer_last
    }

    /// Whether the peer may have processed stream `id`, one this side opened. False only after
    /// the peer's GOAWAY, for identifiers above its last stream: those it did not and will not
    /// process, and their requests may be retried on another connection (§6.8, §8.7). Always
    /// true for the peer's own streams.
    pub fn maybe_processed(&self, id: u32) -> bool {
        match self.peer_last {
            Some(last) if self.is_local(id) => id <= last,
            _ => true,
        }
    }

    /// Whether `id` has this side's parity.
    fn is_local(&self, id: u32) -> bool {
        let odd = !id.is_multiple_of(2);
        odd == (self.role == Role::Client)
    }
}

#[cfg(test)]
mod tests;
