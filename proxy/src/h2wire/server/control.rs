//! The frames that carry no message: SETTINGS (RFC 9113 §6.5), PING (§6.7), GOAWAY (§6.8),
//! RST_STREAM (§6.4), WINDOW_UPDATE (§6.9) and PRIORITY (§6.3).

use super::super::flow::DEFAULT_WINDOW;
use super::super::frame::{
    parse_goaway, parse_ping, parse_priority, parse_rst_stream, parse_settings,
    parse_window_update, write_ping, write_settings_ack, write_window_update, ErrorCode, Head,
    Scope, Settings, SettingsFrame,
};
use super::super::stream::{Half, Recv};
use super::events::{ConnError, Event};
use super::receive::{calm, conn, conn_of, Step};
use super::ServerConn;

impl ServerConn {
    pub(super) fn settings(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<Event>,
    ) -> Step {
        match parse_settings(head, payload).map_err(conn_of)? {
            SettingsFrame::Ack => {
                self.settings_ack();
                Ok(())
            }
            SettingsFrame::Values(values) => self.apply(values, events),
        }
    }

    /// The client's SETTINGS, applied and acknowledged (§6.5.3). ENABLE_PUSH, its
    /// MAX_CONCURRENT_STREAMS and ENABLE_CONNECT_PROTOCOL bind only streams a server opens,
    /// and weir opens none; HEADER_TABLE_SIZE needs nothing, this side's encoder keeping no
    /// dynamic table; MAX_HEADER_LIST_SIZE is advisory (§6.5.2), responses being the owner's.
    fn apply(&mut self, values: Settings, events: &mut Vec<Event>) -> Step {
        let opened = match values.initial_window_size {
            Some(window) => self.initial_window(window)?,
            None => false,
        };
        if let Some(size) = values.max_frame_size {
            self.peer.max_frame_size = size;
        }
        write_settings_ack(&mut self.out);
        self.settled = true;
        events.push(Event::Settings);
        if opened {
            events.push(Event::Capacity { id: None });
        }
        Ok(())
    }

    /// A new SETTINGS_INITIAL_WINDOW_SIZE moves every stream's send window by the change
    /// (§6.9.2); above 2^31−1 a connection FLOW_CONTROL_ERROR.
    fn initial_window(&mut self, window: u32) -> Result<bool, ConnError> {
        let delta = i64::from(window) - i64::from(self.peer.initial_window);
        self.peer.initial_window = window;
        let mut opened = false;
        for slot in self.streams.values_mut() {
            let before = slot.send.available();
            slot.send
                .adjust(delta)
                .map_err(|e| conn(ErrorCode::FLOW_CONTROL_ERROR, e.why))?;
            let sending =
                slot.stream.send_half().has_head() && slot.stream.send_half() != Half::Ended;
            opened |= sending && before == 0 && slot.send.available() > 0;
        }
        Ok(opened)
    }

    /// The client acknowledged this side's SETTINGS: a stream window below the default holds
    /// from now on (§6.5.3, §6.9.3).
    fn settings_ack(&mut self) {
        if std::mem::replace(&mut self.acked, true) {
            return;
        }
        let window = self.config.stream_window;
        if window < DEFAULT_WINDOW {
            for (&id, slot) in self.streams.iter_mut() {
                if let Some(increment) = slot.recv.set_target(window) {
                    write_window_update(&mut self.out, id, increment);
                }
            }
        }
    }

    pub(super) fn ping_frame(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<Event>,
    ) -> Step {
        let ping = parse_ping(head, payload).map_err(conn_of)?;
        if ping.ack {
            events.push(Event::PingAck(ping.opaque));
        } else {
            // §6.7: answered with the same payload; a client that does not read the answers
            // is bounded by `Config::max_queued_output` (`receive`).
            write_ping(&mut self.out, ping.opaque, true);
        }
        Ok(())
    }

    /// The client opens no more streams (§6.8); those open go on.
    pub(super) fn goaway(&mut self, head: &Head, payload: &[u8], events: &mut Vec<Event>) -> Step {
        let goaway = parse_goaway(head, payload).map_err(conn_of)?;
        self.ids.going_away(goaway.last_stream);
        events.push(Event::GoAway {
            last_stream: goaway.last_stream,
            code: goaway.code,
        });
        Ok(())
    }

    /// The client resets a stream. Before its response is complete, this takes one from the
    /// Rapid Reset budget (CVE-2023-44487): opening and resetting streams in a loop costs this
    /// side a request each while MAX_CONCURRENT_STREAMS counts none of them.
    pub(super) fn rst_stream(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<Event>,
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
        if self.streams.remove(&id).is_some() {
            self.concurrency.close_remote();
        }
        if !complete {
            if self.reset_budget == 0 {
                return Err(calm("too many streams reset before their response (§10.5)"));
            }
            self.reset_budget -= 1;
        }
        events.push(Event::Reset {
            id,
            code,
            why: None,
        });
        Ok(())
    }

    pub(super) fn window_update(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<Event>,
    ) -> Step {
        let increment = match parse_window_update(head, payload) {
            Ok(increment) => increment,
            Err(e) if e.scope == Scope::Connection => return Err(conn_of(e)),
            Err(e) => return self.frame_error(e, events),
        };
        let id = head.stream;
        if id == 0 {
            let before = self.conn_send.available();
            self.conn_send
                .grow(increment)
                .map_err(|e| conn(ErrorCode::FLOW_CONTROL_ERROR, e.why))?;
            if before == 0 && self.conn_send.available() > 0 {
                events.push(Event::Capacity { id: None });
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
        let sending = slot.stream.send_half() != Half::Ended;
        if sending && before == 0 && slot.send.available() > 0 {
            events.push(Event::Capacity { id: Some(id) });
        }
        Ok(())
    }

    /// §5.3.2 deprecates these priorities: the frame is checked and otherwise ignored. On an
    /// idle stream it opens nothing (§5.1).
    pub(super) fn priority(
        &mut self,
        head: &Head,
        payload: &[u8],
        events: &mut Vec<Event>,
    ) -> Step {
        match parse_priority(head, payload) {
            Ok(_) => Ok(()),
            Err(e) => self.frame_error(e, events),
        }
    }
}
