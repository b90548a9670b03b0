//! A response's head, as the owner sends it (HEADERS and CONTINUATION); the rest of what the
//! owner sends is both sides' (`conn::send`).

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
        self.send_headers(id, Some(digits), fields, end_stream)
    }
}
