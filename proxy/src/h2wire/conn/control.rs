//! The frames that carry no message: SETTINGS (RFC 9113 §6.5), PING (§6.7), GOAWAY (§6.8),
//! RST_STREAM (§6.4), WINDOW_UPDATE (§6.9) and PRIORITY (§6.3).

use super::super::common::ConnError;
use super::super::flow::DEFAULT_WINDOW;
use super::super::frame::{
    parse_goaway, parse_ping, parse_priority, parse_rst_stream, parse_settings,
    parse_window_update, write_ping, write_settings_ack, write_window_update, ErrorCode, Head,
    Scope, Settings, SettingsFrame,
};
use super::super::stream::{Half, Recv};
use super::error::{conn, conn_of, Step};
use super::role::{Role, Shared};
use super::{Conn, DEFAULT_HEADER_TABLE_SIZE};

impl<R: Role> Conn<R> {
    pub(crate) fn settings(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<R::Event>,
    ) -> Step {
        match parse_settings(head, payload).map_err(conn_of)? {
            SettingsFrame::Ack => {
                self.settings_ack();
                Ok(())
            }
            SettingsFrame::Values(values) => self.apply(values, events),
        }
    }

    /// The peer's SETTINGS, applied and acknowledged (§6.5.3): first those only this side
    /// reads (`Role::settings`), then those both do. HEADER_TABLE_SIZE needs nothing: this
    /// side's encoder keeps no dynamic table (it sets it to 0 in its first block), which any
    /// value allows.
    fn apply(&mut self, values: Settings, events: &mut Vec<R::Event>) -> Step {
        let event = R::settings(self, &values)?;
        let opened = match values.initial_window_size {
            Some(window) => self.initial_window(window)?,
            None => false,
        };
        if let Some(size) = values.max_frame_size {
            self.peer.max_frame_size = size;
        }
        write_settings_ack(&mut self.out);
        self.settled = true;
        events.push(event);
        if opened {
            events.push(Shared::Capacity { id: None }.into());
        }
        Ok(())
    }

    /// A new SETTINGS_INITIAL_WINDOW_SIZE moves every stream's send window by the change,
    /// perhaps below 0 (§6.9.2). One taken above 2^31−1 is a connection FLOW_CONTROL_ERROR.
    /// Returns whether a stream that could send nothing now can.
    fn initial_window(&mut self, window: u32) -> Result<bool, ConnError> {
        let delta = i64::from(window) - i64::from(self.peer.initial_window);
        self.peer.initial_window = window;
        let mut opened = false;
        for slot in self.streams.values_mut() {
            let before = slot.send.available();
            slot.send
                .adjust(delta)
                .map_err(|e| conn(ErrorCode::FLOW_CONTROL_ERROR, e.why))?;
            let sending = slot.stream.send_half() == Half::Open;
            opened |= sending && before == 0 && slot.send.available() > 0;
        }
        Ok(opened)
    }

    /// The peer acknowledged this side's SETTINGS: the values that lower a limit hold from
    /// now on (§6.5.3). Before, the peer may have counted the defaults.
    fn settings_ack(&mut self) {
        if std::mem::replace(&mut self.acked, true) {
            // This side sends SETTINGS once: a second ACK acknowledges nothing.
            return;
        }
        if self.limits.header_table_size < DEFAULT_HEADER_TABLE_SIZE {
            // The peer's next block must start with a size update (RFC 7541 §4.2).
            self.decoder
                .set_limit(self.limits.header_table_size as usize);
        }
        let window = self.limits.stream_window;
        if window < DEFAULT_WINDOW {
            for (&id, slot) in self.streams.iter_mut() {
                if let Some(increment) = slot.recv.set_target(window) {
                    write_window_update(&mut self.out, id, increment);
                }
            }
        }
    }

    pub(crate) fn ping_frame(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<R::Event>,
    ) -> Step {
        let ping = parse_ping(head, payload).map_err(conn_of)?;
        if ping.ack {
            events.push(Shared::PingAck(ping.opaque).into());
        } else {
            // §6.7: answered with the same payload. §6.7 would have it go first; it goes
            // after what is queued, which the owner writes whole each turn. A peer that does
            // not read the answers is bounded by `Limits::max_queued_output`.
            write_ping(&mut self.out, ping.opaque, true);
        }
        Ok(())
    }

    /// The peer opens no more streams (§6.8); what else that means is the side's.
    pub(crate) fn goaway(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<R::Event>,
    ) -> Step {
        let goaway = parse_goaway(head, payload).map_err(conn_of)?;
        self.ids.going_away(goaway.last_stream);
        R::goaway(self, goaway.last_stream, goaway.code, events)
    }

    /// The peer resets a stream; what that costs it is the side's (`Role::peer_reset`).
    pub(crate) fn rst_stream(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<R::Event>,
    ) -> Step {
        let code = parse_rst_stream(head, payload).map_err(conn_of)?;
        let id = head.stream;
        let Some(slot) = self.streams.get_mut(&id) else {
            return self.untracked(id, "RST_STREAM on an idle stream (§6.4)");
        };
        let complete = slot.stream.send_half() == Half::Ended;
        match slot.stream.recv_reset() {
            Ok(Recv::Process) => {}
            Ok(Recv::Ignore) => return Ok(()),
            Err(refused) => return self.refused(refused, events),
        }
        R::peer_reset(self, id, code, complete, events)
    }

    pub(crate) fn window_update(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<R::Event>,
    ) -> Step {
        let increment = match parse_window_update(head, payload) {
            Ok(increment) => increment,
            Err(e) if e.scope == Scope::Connection => return Err(conn_of(e)),
            Err(e) => return self.frame_error(e, events),
        };
        let id = head.stream;
        if id == 0 {
            let before = self.conn_send.available();
            // §6.9.1: the connection's window above 2^31−1 is a connection error.
            self.conn_send
                .grow(increment)
                .map_err(|e| conn(ErrorCode::FLOW_CONTROL_ERROR, e.why))?;
            if before == 0 && self.conn_send.available() > 0 {
                events.push(Shared::Capacity { id: None }.into());
            }
            return Ok(());
        }
        let Some(slot) = self.streams.get_mut(&id) else {
            return self.untracked(id, "WINDOW_UPDATE on an idle stream (§5.1)");
        };
        match slot.stream.recv_window_update() {
            Ok(Recv::Process) => {}
            Ok(Recv::Ignore) => return Ok(()),
            Err(refused) => return self.refused(refused, events),
        }
        let before = slot.send.available();
        if let Err(e) = slot.send.grow(increment) {
            // §6.9.1: a stream's window above 2^31−1 ends that stream.
            return self.reset_stream(id, ErrorCode::FLOW_CONTROL_ERROR, e.why, events);
        }
        // A server's stream not yet answered counts: its response may start with DATA's room.
        let sending = slot.stream.send_half() != Half::Ended;
        if sending && before == 0 && slot.send.available() > 0 {
            events.push(Shared::Capacity { id: Some(id) }.into());
        }
        Ok(())
    }

    /// §5.3.2 deprecates these priorities: the frame is checked and otherwise ignored. On an
    /// idle stream it opens nothing (§5.1).
    pub(crate) fn priority(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<R::Event>,
    ) -> Step {
        match parse_priority(head, payload) {
            Ok(_) => Ok(()),
            Err(e) => self.frame_error(e, events),
        }
    }
}
