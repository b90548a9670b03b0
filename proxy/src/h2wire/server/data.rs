//! DATA received (RFC 9113 §6.1): counted against both receive windows (§6.9) and held to the
//! request's Content-Length (§8.1.1), then handed over without a copy.

use super::super::frame::{flag, parse_data, Data, ErrorCode, Head, Scope};
use super::super::stream::{Recv, Refused};
use super::events::Event;
use super::receive::{conn, conn_of, Step};
use super::streams::Slot;
use super::ServerConn;

/// What a stream makes of a DATA frame.
enum Verdict {
    Deliver,
    /// Not the stream's any more: dropped (§5.1 "closed").
    Drop,
    Refused(Refused),
    /// A stream error: its window (§6.9.1) or its length (§8.1.1).
    Reset(ErrorCode, &'static str),
}

impl ServerConn {
    pub(super) fn data(
        &mut self,
        head: &Head,
        payload: &[u8],
        at: usize,
        events: &mut Vec<Event>,
    ) -> Step {
        let id = head.stream;
        let frame = match parse_data(head, payload) {
            Ok(frame) => frame,
            Err(e) if e.scope == Scope::Connection => return Err(conn_of(e)),
            Err(e) => {
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
            Some(slot) => accept(slot, &frame),
            None => {
                self.untracked(id, "DATA on an idle stream (§5.1)")?;
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
        let padding = (flow_len as usize).saturating_sub(frame.data.len());
        if padding > 0 {
            self.release(id, padding);
        }
        if !frame.data.is_empty() || frame.end_stream {
            let start = at + usize::from(head.has(flag::PADDED));
            events.push(Event::Data {
                id,
                data: start..start + frame.data.len(),
                end_stream: frame.end_stream,
            });
        }
        if frame.end_stream {
            self.forget_if_closed(id);
        }
        Ok(())
    }

    /// A DATA frame dropped whole: counted against the connection's window and given back.
    fn discard(&mut self, n: u32) -> Step {
        self.conn_recv
            .receive(n)
            .map_err(|e| conn(ErrorCode::FLOW_CONTROL_ERROR, e.why))?;
        self.give_back(n);
        Ok(())
    }
}

/// What the stream in `slot` makes of `frame`: its state, then its window, then its length.
fn accept(slot: &mut Slot, frame: &Data<'_>) -> Verdict {
    match slot.stream.recv_data(frame.end_stream) {
        Ok(Recv::Process) => {}
        Ok(Recv::Ignore) => return Verdict::Drop,
        Err(refused) => return Verdict::Refused(refused),
    }
    if let Err(e) = slot.recv.receive(frame.flow_len) {
        return Verdict::Reset(ErrorCode::FLOW_CONTROL_ERROR, e.why);
    }
    if !slot.count(frame.data.len()) || (frame.end_stream && !slot.complete()) {
        let why = "DATA lengths do not add up to the request's content-length (§8.1.1)";
        return Verdict::Reset(ErrorCode::PROTOCOL_ERROR, why);
    }
    Verdict::Deliver
}
