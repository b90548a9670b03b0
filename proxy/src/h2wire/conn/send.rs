//! What the owner tells either side's connection to send: DATA, trailers, resets, window
//! updates, PING and GOAWAY; and the field blocks both sides encode.

use super::super::flow::DEFAULT_WINDOW;
use super::super::frame::{
    write_data, write_goaway, write_headers, write_ping, write_window_update, ErrorCode,
};
use super::super::stream::Half;
use super::role::Role;
use super::Conn;

/// The octets a field counts for in a header list besides its name and value (§6.5.2).
const FIELD_OVERHEAD: usize = 32;

impl<R: Role> Conn<R> {
    /// Queues as much of `data` as the stream's and the connection's send windows allow (and,
    /// on a server, as keeps the output under half of `Config::max_queued_output`), in frames
    /// of at most the peer's SETTINGS_MAX_FRAME_SIZE, and returns how much it took.
    /// END_STREAM goes only if all of `data` was taken (empty `data` with `end_stream` always
    /// goes: an empty frame is not flow-controlled). 0 on a stream that cannot send: closed,
    /// reset, its message not begun or already ended. Wait for `Event::Capacity`, or for the
    /// output to be written, to send the rest.
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
        // `n` is at most a window's allowance, a `u32`.
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

    /// Ends stream `id`'s message with trailers (HEADERS with END_STREAM, §8.1). False on a
    /// stream whose message has no head yet or has ended.
    pub fn send_trailers<'f>(
        &mut self,
        id: u32,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    ) -> bool {
        if self.send_half(id) != Some(Half::Open) {
            return false;
        }
        self.send_headers(id, None, fields, true)
    }

    /// The DATA octets stream `id` may send now: the lower of its window and the connection's
    /// (§6.9), and of the room left in the output for DATA; 0 on a stream that cannot send.
    pub fn send_capacity(&self, id: u32) -> usize {
        let Some(slot) = self.streams.get(&id) else {
            return 0;
        };
        if slot.stream.send_half() != Half::Open {
            return 0;
        }
        let window = slot.send.available().min(self.conn_send.available()) as usize;
        let room = (self.limits.max_queued_output / 2).saturating_sub(self.out.len());
        window.min(room)
    }

    /// Ends stream `id` with RST_STREAM and forgets it; frames the peer sent before it saw
    /// the reset are dropped (§5.1 "closed"). Nothing on a stream already closed.
    pub fn reset(&mut self, id: u32, code: ErrorCode) {
        if let Some(slot) = self.remove(id) {
            self.send_reset(id, slot, code);
        }
    }

    /// The owner consumed (or dropped) `n` octets of `Event::Data` on stream `id`: they go
    /// back to the connection's window and, while the peer's message is still coming, the
    /// stream's, with a WINDOW_UPDATE once half a window is free (`flow::RecvWindow`).
    pub fn release(&mut self, id: u32, n: usize) {
        if self.failed.is_some() {
            return;
        }
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.give_back(n);
        let Some(slot) = self.streams.get_mut(&id) else {
            return;
        };
        // §6.9: no update is needed once the peer ended its side.
        if slot.stream.recv_half() == Half::Ended {
            return;
        }
        if let Some(increment) = slot.recv.release(n) {
            write_window_update(&mut self.out, id, increment);
        }
    }

    /// Queues a PING; its answer comes as `Event::PingAck` with the same `opaque` (§6.7).
    /// Timing the answer is the owner's.
    pub fn ping(&mut self, opaque: [u8; 8]) {
        if self.failed.is_none() {
            write_ping(&mut self.out, opaque, false);
        }
    }

    /// Queues GOAWAY with `code`, its last stream identifier the highest the peer opened that
    /// this side accepted (0 on a client: a server opens none): no stream opens any more;
    /// those up to it go on to their end, later ones are refused (REFUSED_STREAM: not
    /// processed, the client may retry them elsewhere, §6.8). Sent once.
    pub fn go_away(&mut self, code: ErrorCode) {
        if self.failed.is_none() && self.closing.is_none() {
            let last = self.ids.highest_remote();
            self.closing = Some(last);
            write_goaway(&mut self.out, last, code, b"");
        }
    }

    /// Gives `n` received octets back to the connection's window.
    pub(crate) fn give_back(&mut self, n: u32) {
        if let Some(increment) = self.conn_recv.release(n) {
            write_window_update(&mut self.out, 0, increment);
        }
    }

    /// The receive window a new stream starts with: this side's SETTINGS_INITIAL_WINDOW_SIZE,
    /// or until the peer acknowledged it the larger of it and the default, which the peer
    /// may still be counting (§6.9.3).
    pub(crate) fn recv_initial(&self) -> u32 {
        if self.acked {
            self.limits.stream_window
        } else {
            self.limits.stream_window.max(DEFAULT_WINDOW)
        }
    }

    pub(crate) fn send_half(&self, id: u32) -> Option<Half> {
        self.streams.get(&id).map(|slot| slot.stream.send_half())
    }

    /// Queues `:status` (if given) and `fields` as HEADERS on stream `id`, and CONTINUATION
    /// frames past the peer's SETTINGS_MAX_FRAME_SIZE, together (§4.3). False, nothing sent,
    /// if the stream's state refuses them.
    pub(crate) fn send_headers<'f>(
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
        self.encode(status, fields);
        let max_frame_size = self.peer.max_frame_size;
        write_headers(&mut self.out, id, &self.encoded, end_stream, max_frame_size);
        if end_stream {
            self.forget_if_closed(id);
        }
        true
    }

    /// Encodes `:status` (if given) and `fields` as one field block into `encoded`. Returns
    /// the header list's size (§6.5.2) and whether `:method` is HEAD.
    pub(crate) fn encode<'f>(
        &mut self,
        status: Option<[u8; 3]>,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    ) -> (usize, bool) {
        self.encoded.clear();
        self.encoder.begin(&mut self.encoded);
        let (mut size, mut head_request) = (0usize, false);
        if let Some(digits) = status {
            size = b":status".len() + digits.len() + FIELD_OVERHEAD;
            self.encoder
                .field(b":status", &digits, false, &mut self.encoded);
        }
        for (name, value) in fields {
            size = size.saturating_add(name.len() + value.len() + FIELD_OVERHEAD);
            head_request |= name == b":method" && value == b"HEAD";
            self.encoder.field(name, value, false, &mut self.encoded);
        }
        (size, head_request)
    }
}
