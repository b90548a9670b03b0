//! DATA received (RFC 9113 §6.1): counted against both receive windows (§6.9) and held to the
//! message's Content-Length (§8.1.1), then handed over without a copy.

use super::super::frame::{flag, parse_data, write_rst_stream, Data, ErrorCode, Head, Scope};
use super::super::stream::{Recv, Refused};
use super::error::{conn, conn_of, Step};
use super::role::{Role, Shared};
use super::streams::Slot;
use super::Conn;

/// What a stream makes of a DATA frame.
enum Verdict {
    Deliver,
    /// Not the stream's any more (closed, or reset by this side): dropped (§5.1 "closed").
    Drop,
    /// The stream's state refuses it (§5.1, §8.1).
    Refused(Refused),
    /// A stream error: its window (§6.9.1) or its length (§8.1.1).
    Reset(ErrorCode, &'static str),
}

impl<R: Role> Conn<R> {
    pub(crate) fn data(
        &mut self,
        head: &Head,
        payload: &[u8],
        at: usize,
        events: &mut Vec<R::Event>,
    ) -> Step {
        let id = head.stream;
        let frame = match parse_data(head, payload) {
            Ok(frame) => frame,
            Err(e) if e.scope == Scope::Connection => return Err(conn_of(e)),
            Err(e) => {
                // The peer counted the whole frame against the connection's window (§6.9).
                self.discard(head.len)?;
                return self.frame_error(e, events);
            }
        };
        if frame.data.is_empty() && !frame.end_stream {
            // §10.5: nothing carried, nothing ended; only a bound tells it from a flood.
            self.empty_frame()?;
        }
        let flow_len = frame.flow_len;
        // §6.9: every DATA frame counts against the connection's window, whatever its stream.
        self.conn_recv
            .receive(flow_len)
            .map_err(|e| conn(ErrorCode::FLOW_CONTROL_ERROR, e.why))?;
        let verdict = match self.streams.get_mut(&id) {
            Some(slot) => accept(slot, &frame, R::LENGTH_MISMATCH),
            None => {
                self.untracked(id, "DATA on an idle stream (§5.1)")?;
                if R::refuses_closed_data(self, id) {
                    // §6.1: DATA on a stream that is not open or half-closed (local) is a
                    // stream error of type STREAM_CLOSED. Counted as this side's resets are:
                    // a flood of them ends the connection.
                    self.give_back(flow_len);
                    R::count_reset(self)?;
                    write_rst_stream(&mut self.out, id, ErrorCode::STREAM_CLOSED);
                    return Ok(());
                }
                Verdict::Drop
            }
        };
        match verdict {
            Verdict::Deliver => {}
            Verdict::Drop => {
                self.give_back(flow_len);
                return Ok(());
            }
            Verdict::Refused(refused) => {
                self.give_back(flow_len);
                return self.refused(refused, events);
            }
            Verdict::Reset(code, why) => {
                self.give_back(flow_len);
                return self.reset_stream(id, code, why, events);
            }
        }
        // The Pad Length octet and the padding are this side's to give back: the owner
        // releases only the data it was handed.
        let padding = (flow_len as usize).saturating_sub(frame.data.len());
        if padding > 0 {
            self.release(id, padding);
        }
        if !frame.data.is_empty() || frame.end_stream {
            let start = at + usize::from(head.has(flag::PADDED));
            let data = start..start + frame.data.len();
            let end_stream = frame.end_stream;
            events.push(
                Shared::Data {
                    id,
                    data,
                    end_stream,
                }
                .into(),
            );
        }
        if frame.end_stream {
            self.forget_if_closed(id);
        }
        Ok(())
    }

    /// A DATA frame dropped whole: counted against the connection's window, which the peer
    /// counted it against (§6.9), and given back at once.
    fn discard(&mut self, n: u32) -> Step {
        self.conn_recv
            .receive(n)
            .map_err(|e| conn(ErrorCode::FLOW_CONTROL_ERROR, e.why))?;
        self.give_back(n);
        Ok(())
    }
}

/// What the stream in `slot` makes of `frame`: its state, then its window, then its length
/// (`mismatch` names the message's).
fn accept(slot: &mut Slot, frame: &Data<'_>, mismatch: &'static str) -> Verdict {
    match slot.stream.recv_data(frame.end_stream) {
        Ok(Recv::Process) => {}
        Ok(Recv::Ignore) => return Verdict::Drop,
        Err(refused) => return Verdict::Refused(refused),
    }
    if let Err(e) = slot.recv.receive(frame.flow_len) {
        // §6.9.1: beyond a stream's window, that stream ends.
        return Verdict::Reset(ErrorCode::FLOW_CONTROL_ERROR, e.why);
    }
    if !slot.count(frame.data.len()) || (frame.end_stream && !slot.complete()) {
        return Verdict::Reset(ErrorCode::PROTOCOL_ERROR, mismatch);
    }
    Verdict::Deliver
}
