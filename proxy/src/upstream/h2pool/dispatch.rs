//! What the connection's events do to its streams: the pure half of the driver. A response
//! head, DATA and trailers are kept for the stream's reader and wake it; resets and GOAWAY
//! fail the streams they name; SETTINGS and GOAWAY also go to the pool (`Signals`).

use bytes::Bytes;

use super::error::StreamError;
use super::link::{Head, Inner};
use super::signals::Signals;
use crate::h2link::chunk;
use crate::h2wire::client::Event;

/// What the driver itself must act on.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Seen {
    Nothing,
    /// The answer to a PING.
    PingAck,
}

/// Applies one event. `frames` are the bytes the event's `Data` range indexes.
pub(super) fn deliver(inner: &mut Inner, event: Event, frames: &Bytes, signals: &Signals) -> Seen {
    match event {
        Event::Settings {
            max_concurrent_streams,
        } => signals.settings(max_concurrent_streams),
        Event::Response {
            id,
            status,
            fields,
            end_stream,
        } => {
            if let Some(state) = inner.streams.get_mut(&id) {
                state.head = Some(Head {
                    status,
                    fields,
                    end_stream,
                });
                state.end |= end_stream;
                state.wake_reader();
            }
        }
        Event::Data {
            id,
            data,
            end_stream,
        } => {
            let len = data.len();
            match inner.streams.get_mut(&id) {
                Some(state) if state.reading => {
                    if len > 0 {
                        let first = state.chunks.is_unbegun();
                        let chunk = chunk(&mut inner.conn, frames, data, first);
                        state.chunks.push_back(chunk);
                        state.buffered += len;
                    }
                    state.end |= end_stream;
                    state.wake_reader();
                }
                // No one will read it: its window goes back at once.
                _ => inner.conn.release(id, len),
            }
        }
        Event::Trailers { id, fields } => {
            if let Some(state) = inner.streams.get_mut(&id) {
                state.trailers = Some(fields);
                state.end = true;
                state.wake_reader();
            }
        }
        Event::Reset {
            id,
            code,
            refused,
            why,
        } => {
            if let Some(state) = inner.streams.get_mut(&id) {
                let error = match why {
                    Some(why) => StreamError::Malformed(why),
                    None if refused => StreamError::Refused,
                    None => StreamError::Reset(code),
                };
                state.fail(error);
            }
        }
        Event::GoAway {
            last_stream,
            code,
            unprocessed,
        } => {
            signals.go_away(last_stream, code, !unprocessed.is_empty());
            // Above the last stream the server processes: not processed, and never will be.
            for id in unprocessed {
                if let Some(state) = inner.streams.get_mut(&id) {
                    state.fail(StreamError::Refused);
                }
            }
        }
        Event::PingAck(_) => return Seen::PingAck,
        Event::Capacity { id: Some(id) } => {
            if let Some(state) = inner.streams.get_mut(&id) {
                state.wake_sender();
            }
        }
        Event::Capacity { id: None } => {
            for state in inner.streams.values_mut() {
                state.wake_sender();
            }
        }
    }
    Seen::Nothing
}
