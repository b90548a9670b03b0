//! What the owner tells the connection to send: requests (HEADERS and CONTINUATION), DATA,
//! trailers, resets, window updates, PING and GOAWAY.

use super::super::flow::DEFAULT_WINDOW;
use super::super::frame::{
    write_data, write_goaway, write_headers, write_ping, write_rst_stream, write_window_update,
    ErrorCode,
};
use super::super::stream::{Half, Stream};
use super::events::OpenError;
use super::streams::Slot;
use super::ClientConn;

/// The octets a field counts for in a header list besides its name and value (§6.5.2).
const FIELD_OVERHEAD: usize = 32;

impl ClientConn {
    /// Opens a stream with a request's fields (pseudo-headers first, names lower case; not
    /// checked here), as HEADERS and, past the server's SETTINGS_MAX_FRAME_SIZE, CONTINUATION
    /// frames queued together (§4.3). Returns the stream's identifier.
    pub fn open<'f>(
        &mut self,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
        end_stream: bool,
    ) -> Result<u32, OpenError> {
        if let Some(refusal) = self.open_refusal() {
            return Err(refusal);
        }
        let (size, head_request) = self.encode(fields);
        let limit = self.peer.max_header_list_size;
        if size > limit as usize {
            // The block is dropped. If it was the encoder's first, its table size update goes
            // with it: harmless, since this encoder never refers to the dynamic table.
            return Err(OpenError::HeaderListTooLarge { size, limit });
        }
        // `open_refusal` saw identifiers left and room under the server's limit.
        let id = self.ids.open_local().ok_or(OpenError::IdsExhausted)?;
        if !self.concurrency.open_local() {
            return Err(OpenError::AtLimit);
        }
        let mut stream = Stream::local(id);
        let sent = stream.send_headers(end_stream);
        debug_assert!(sent.is_ok(), "a new stream takes its HEADERS");
        write_headers(
            &mut self.out,
            id,
            &self.encoded,
            end_stream,
            self.peer.max_frame_size,
        );
        let slot = Slot::new(
            stream,
            self.peer.initial_window,
            self.recv_initial(),
            head_request,
        );
        self.streams.insert(id, slot);
        Ok(id)
    }

    /// Queues as much of `data` as the stream's and the connection's send windows allow, in
    /// frames of at most the server's SETTINGS_MAX_FRAME_SIZE, and returns how much it took.
    /// END_STREAM goes only if all of `data` was taken (empty `data` with `end_stream` always
    /// goes: an empty frame is not flow-controlled). 0 on a stream that cannot send: closed,
    /// reset, or its request already ended. Wait for `Event::Capacity` to send the rest.
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

    /// Ends a stream's request with trailers (HEADERS with END_STREAM, §8.1). False on a
    /// stream that cannot send.
    pub fn send_trailers<'f>(
        &mut self,
        id: u32,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    ) -> bool {
        if !self.can_send(id) {
            return false;
        }
        self.encode(fields);
        let Some(slot) = self.streams.get_mut(&id) else {
            return false;
        };
        if slot.stream.send_headers(true).is_err() {
            return false;
        }
        let max_frame_size = self.peer.max_frame_size;
        write_headers(&mut self.out, id, &self.encoded, true, max_frame_size);
        self.forget_if_closed(id);
        true
    }

    /// The DATA octets stream `id` may send now: the lower of its window and the connection's
    /// (§6.9), 0 on a stream that cannot send.
    pub fn send_capacity(&self, id: u32) -> usize {
        match self.streams.get(&id) {
            Some(slot) if slot.stream.send_half() == Half::Open => {
                slot.send.available().min(self.conn_send.available()) as usize
            }
            _ => 0,
        }
    }

    /// Ends stream `id` with RST_STREAM and forgets it; frames the server sent before it saw
    /// the reset are dropped (§5.1 "closed"). Nothing on a stream already closed.
    pub fn reset(&mut self, id: u32, code: ErrorCode) {
        if let Some(mut slot) = self.streams.remove(&id) {
            self.concurrency.close_local();
            if slot.stream.send_reset().is_ok() {
                write_rst_stream(&mut self.out, id, code);
            }
        }
    }

    /// The owner consumed (or dropped) `n` octets of `Event::Data` on stream `id`: they go
    /// back to the connection's window and, while the response is still coming, the stream's,
    /// with a WINDOW_UPDATE once half a window is free (`flow::RecvWindow`).
    pub fn release(&mut self, id: u32, n: usize) {
        if self.failed.is_some() {
            return;
        }
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.give_back(n);
        let Some(slot) = self.streams.get_mut(&id) else {
            return;
        };
        // §6.9: no update is needed once the server ended its side.
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

    /// Queues GOAWAY with `code`: no stream opens any more; open ones go on to their end
    /// (§6.8). Its last stream identifier is 0, since a server opens no stream this side
    /// could have processed. Sent once.
    pub fn go_away(&mut self, code: ErrorCode) {
        if self.failed.is_none() && !self.closing {
            self.closing = true;
            write_goaway(&mut self.out, 0, code, b"");
        }
    }

    /// Gives `n` received octets back to the connection's window.
    pub(super) fn give_back(&mut self, n: u32) {
        if let Some(increment) = self.conn_recv.release(n) {
            write_window_update(&mut self.out, 0, increment);
        }
    }

    /// The receive window a new stream starts with: this side's SETTINGS_INITIAL_WINDOW_SIZE,
    /// or until the server acknowledged it the larger of it and the default, which the server
    /// may still be counting (§6.9.3).
    pub(super) fn recv_initial(&self) -> u32 {
        if self.acked {
            self.config.stream_window
        } else {
            self.config.stream_window.max(DEFAULT_WINDOW)
        }
    }

    fn can_send(&self, id: u32) -> bool {
        self.streams
            .get(&id)
            .is_some_and(|slot| slot.stream.send_half() == Half::Open)
    }

    /// Encodes `fields` as one field block into `encoded`. Returns the header list's size
    /// (§6.5.2) and whether `:method` is HEAD.
    fn encode<'f>(
        &mut self,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    ) -> (usize, bool) {
        self.encoded.clear();
        self.encoder.begin(&mut self.encoded);
        let (mut size, mut head_request) = (0usize, false);
        for (name, value) in fields {
            size = size.saturating_add(name.len() + value.len() + FIELD_OVERHEAD);
            head_request |= name == b":method" && value == b"HEAD";
            self.encoder.field(name, value, false, &mut self.encoded);
        }
        (size, head_request)
    }
}
