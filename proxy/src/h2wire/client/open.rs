//! Opening a stream: a request's HEADERS (and CONTINUATIONs), within the server's limits.

use super::super::conn::Slot;
use super::super::frame::write_headers;
use super::super::stream::Stream;
use super::events::OpenError;
use super::ClientConn;

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
        let (size, head_request) = self.encode(None, fields);
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
        let mut slot = Slot::new(stream, self.peer.initial_window, self.recv_initial());
        slot.head_request = head_request;
        self.streams.insert(id, slot);
        Ok(id)
    }
}
