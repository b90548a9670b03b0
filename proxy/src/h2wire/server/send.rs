//! What the owner tells the connection to send: responses (HEADERS and CONTINUATION), DATA,
//! trailers, resets, window updates, PING and GOAWAY.

use super::super::flow::DEFAULT_WINDOW;
use super::super::frame::{
    write_data, write_goaway, write_headers, write_ping, write_rst_stream, write_window_update,
    ErrorCode,
};
use super::super::stream::Half;
use super::ServerConn;

impl ServerConn {
    /// Answers stream `id` with a final response head: `:status` then `fields` (regular
    /// fields, names lower case; not checked here), as HEADERS and, past the client's
    /// SETTINGS_MAX_FRAME_SIZE, CONTINUATION frames queued together (§4.3). False, nothing
    /// sent, on a stream not open or already answered, or a status outside 200..=999 (1xx
    /// heads are not sent: weir does not forward them).
    pub fn respond<'f>(
        &mut self,
        id: u32,
        status: u16,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
        end_stream: bool,
    ) -> bool {
        let Some(slot) = self.streams.get(&id) else {
            return false;
        };
        if slot.stream.send_half() != Half::Idle || !(200..=999).contains(&status) {
            return false;
        }
        let digits = [
            b'0' + (status / 100) as u8,
            b'0' + (status / 10 % 10) as u8,
            b'0' + (status % 10) as u8,
        ];
        self.headers_out(id, Some(digits), fields, end_stream)
    }

    /// Ends stream `id`'s response with trailers (HEADERS with END_STREAM, §8.1). False on a
    /// stream whose response has no head yet or has ended.
    pub fn send_trailers<'f>(
        &mut self,
        id: u32,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    ) -> bool {
        if self.send_half(id) != Some(Half::Open) {
            return false;
        }
        self.headers_out(id, None, fields, true)
    }

    /// Queues as much of `data` as the stream's and the connection's send windows allow, and
    /// as keeps the output under half of `Config::max_queued_output`; returns how much it
    /// took. END_STREAM goes only if all of `data` was taken. 0 on a stream that cannot send.
    /// Wait for `Event::Capacity`, or for the output to be written, to send the rest.
    pub fn send_data(&mut self, id: u32, data: &[u8], end_stream: bool) -> usize {
        let room = self.send_capacity(id);
        let Some(slot) = self.streams.get_mut(&id) else {
            return 0;
        };
        let n = data.len().min(room);
        let end = end_stream && n == data.len();
        if (n == 0 && !end) || slot.stream.send_data(end).is_err() {
            return 0;
        }
        let counted = u32::try_from(n).unwrap_or(u32::MAX);
        slot.send.take(counted);
        self.conn_send.take(counted);
        let chunk = data.get(..n).unwrap_or_default();
        write_data(&mut self.out, id, chunk, end, self.peer.max_frame_size);
        if end {
            self.forget_if_closed(id);
        }
        n
    }

    /// The DATA octets stream `id` may send now: the lower of its window and the connection's
    /// (§6.9), and of the room left in the output for DATA; 0 on a stream that cannot send.
    pub fn send_capacity(&self, id: u32) -> usize {
        if self.send_half(id) != Some(Half::Open) {
            return 0;
        }
        let Some(slot) = self.streams.get(&id) else {
            return 0;
        };
        let window = slot.send.available().min(self.conn_send.available()) as usize;
        let room = (self.config.max_queued_output / 2).saturating_sub(self.out.len());
        window.min(room)
    }

    /// Ends stream `id` with RST_STREAM and forgets it; frames the client sent before it saw
    /// the reset are dropped (§5.1 "closed"). Nothing on a stream already closed.
    pub fn reset(&mut self, id: u32, code: ErrorCode) {
        if let Some(mut slot) = self.streams.remove(&id) {
            self.concurrency.close_remote();
            let client_open = slot.stream.recv_half() != Half::Ended;
            if slot.stream.send_reset().is_ok() {
                write_rst_stream(&mut self.out, id, code);
                if client_open {
                    self.remember_reset(id);
                }
            }
        }
    }

    /// The owner consumed (or dropped) `n` octets of `Event::Data` on stream `id`: they go
    /// back to the connection's window and, while the request is still coming, the stream's.
    pub fn release(&mut self, id: u32, n: usize) {
        if self.failed.is_some() {
            return;
        }
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.give_back(n);
        let Some(slot) = self.streams.get_mut(&id) else {
            return;
        };
        if slot.stream.recv_half() == Half::Ended {
            return;
        }
        if let Some(increment) = slot.recv.release(n) {
            write_window_update(&mut self.out, id, increment);
        }
    }

    /// Queues a PING; its answer comes as `Event::PingAck` with the same `opaque` (§6.7).
    pub fn ping(&mut self, opaque: [u8; 8]) {
        if self.failed.is_none() {
            write_ping(&mut self.out, opaque, false);
        }
    }

    /// Queues GOAWAY with `code`, its last stream identifier the highest this side accepted:
    /// streams up to it go on to their end, later ones are refused (REFUSED_STREAM: not
    /// processed, the client may retry them elsewhere, §6.8). Sent once; close once
    /// [`is_done`](Self::is_done).
    pub fn go_away(&mut self, code: ErrorCode) {
        if self.failed.is_none() && self.closing.is_none() {
            let last = self.ids.highest_remote();
            self.closing = Some(last);
            write_goaway(&mut self.out, last, code, b"");
        }
    }

    /// Gives `n` received octets back to the connection's window.
    pub(super) fn give_back(&mut self, n: u32) {
        if let Some(increment) = self.conn_recv.release(n) {
            write_window_update(&mut self.out, 0, increment);
        }
    }

    /// The receive window a new stream starts with: this side's SETTINGS_INITIAL_WINDOW_SIZE,
    /// or until the client acknowledged it the larger of it and the default (§6.9.3).
    pub(super) fn recv_initial(&self) -> u32 {
        if self.acked {
            self.config.stream_window
        } else {
            self.config.stream_window.max(DEFAULT_WINDOW)
        }
    }

    fn send_half(&self, id: u32) -> Option<Half> {
        self.streams.get(&id).map(|slot| slot.stream.send_half())
    }

    /// Encodes `:status` (if given) and `fields` as one field block and queues it as HEADERS
    /// on stream `id`.
    fn headers_out<'f>(
        &mut self,
        id: u32,
        status: Option<[u8; 3]>,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
        end_stream: bool,
    ) -> bool {
        let Some(slot) = self.streams.get_mut(&id) else {
            return false;
        };
        if slot.stream.send_headers(end_stream).is_err() {
            return false;
        }
        self.encoded.clear();
        self.encoder.begin(&mut self.encoded);
        if let Some(digits) = status {
            self.encoder
                .field(b":status", &digits, false, &mut self.encoded);
        }
        for (name, value) in fields {
            self.encoder.field(name, value, false, &mut self.encoded);
        }
        let max_frame_size = self.peer.max_frame_size;
        write_headers(&mut self.out, id, &self.encoded, end_stream, max_frame_size);
        if end_stream {
            self.forget_if_closed(id);
        }
        true
    }
}
