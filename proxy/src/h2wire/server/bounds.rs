//! The server's bounds against a hostile client (§10.5) that count streams: resets this side
//! sends for the client's errors ("MadeYouReset"), and streams reset by the client before
//! their response (Rapid Reset); and the streams this side reset, remembered.

use super::super::conn::{calm, Shared, Step};
use super::super::frame::{write_rst_stream, ErrorCode};
use super::events::Event;
use super::ServerConn;

/// How many streams reset by this side are remembered (`remember_reset`): five times
/// weir's default MAX_CONCURRENT_STREAMS.
const RESET_MEMORY: usize = 1_024;

impl ServerConn {
    /// RST_STREAM on a stream not tracked (one refused before it was opened) for the
    /// client's error: counted against `Config::max_local_resets`, and remembered while the
    /// client may still send on it.
    pub(super) fn refuse(
        &mut self,
        id: u32,
        client_open: bool,
        code: ErrorCode,
        why: &'static str,
        events: &mut Vec<Event>,
    ) -> Step {
        self.count_local_reset()?;
        write_rst_stream(&mut self.out, id, code);
        if client_open {
            self.remember_reset(id);
        }
        events.push(Shared::Reset { id, code, why }.into());
        Ok(())
    }

    /// One more stream this side refused for the client's error; past
    /// `Config::max_local_resets`, the connection ends. "MadeYouReset": each reset frees a slot
    /// of MAX_CONCURRENT_STREAMS while the work the stream started may go on, so the limit
    /// alone bounds nothing; past the bound the client is not a mistaken one.
    pub(super) fn count_local_reset(&mut self) -> Step {
        let server = &mut self.role;
        server.local_resets = server.local_resets.saturating_add(1);
        if server.local_resets > server.config.max_local_resets {
            return Err(calm(
                "too many streams reset for the client's errors (§10.5)",
            ));
        }
        Ok(())
    }

    /// Remembers a stream this side reset while the client could still send on it, so that
    /// frames crossing the RST_STREAM are dropped, not refused (§5.1 "closed"). The oldest
    /// is forgotten past `RESET_MEMORY`: §5.1 lets an endpoint limit how long it does this.
    pub(super) fn remember_reset(&mut self, id: u32) {
        let reset_ids = &mut self.role.reset_ids;
        if reset_ids.len() >= RESET_MEMORY {
            reset_ids.pop_front();
        }
        reset_ids.push_back(id);
    }

    /// The client reset stream `id` (`complete`: after its response ended). Before its
    /// response is complete, this takes one from the Rapid Reset budget (CVE-2023-44487):
    /// opening and resetting streams in a loop costs this side a request each while
    /// MAX_CONCURRENT_STREAMS counts none of them.
    pub(super) fn client_reset(
        &mut self,
        id: u32,
        code: ErrorCode,
        complete: bool,
        events: &mut Vec<Event>,
    ) -> Step {
        // Not `forget`: a stream reset does not refill the budget.
        self.remove(id);
        if !complete {
            if self.role.reset_budget == 0 {
                return Err(calm("too many streams reset before their response (§10.5)"));
            }
            self.role.reset_budget -= 1;
        }
        events.push(Event::Reset {
            id,
            code,
            why: None,
        });
        Ok(())
    }

    /// A stream closed both ways was forgotten: a response completed gives one back to the
    /// Rapid Reset budget.
    pub(super) fn refill(&mut self, complete: bool) {
        if complete {
            let server = &mut self.role;
            server.reset_budget = (server.reset_budget + 1).min(server.config.reset_budget);
        }
    }
}
