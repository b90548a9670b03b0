//! The state machine as §5.1's diagram draws it, for a client's stream and a server's, and
//! every refusal with its code and scope.

use std::fmt::Debug;

use super::super::frame::{ErrorCode, Scope};
use super::*;

use ClosedBy::{EndStream, LocalReset, RemoteReset};
use State::{Closed, HalfClosedLocal, HalfClosedRemote, Idle, Open};

const CONN_PROTOCOL: (Scope, ErrorCode) = (Scope::Connection, ErrorCode::PROTOCOL_ERROR);
const CONN_CLOSED: (Scope, ErrorCode) = (Scope::Connection, ErrorCode::STREAM_CLOSED);
const ID: u32 = 1;
const STREAM_CLOSED: (Scope, ErrorCode) = (Scope::Stream(ID), ErrorCode::STREAM_CLOSED);
const STREAM_PROTOCOL: (Scope, ErrorCode) = (Scope::Stream(ID), ErrorCode::PROTOCOL_ERROR);

fn refused<T: Debug>(result: Result<T, Refused>) -> (Scope, ErrorCode) {
    let e = result.unwrap_err();
    (e.scope, e.code)
}

/// A frame of the exchange, from the side that sends it.
#[derive(Clone, Copy, Debug)]
enum Frame {
    Headers(bool),
    Info,
    Data(bool),
    Reset,
}

fn send(s: &mut Stream, frame: Frame) -> Result<(), Misuse> {
    match frame {
        Frame::Headers(end) => s.send_headers(end),
        Frame::Info => s.send_informational(),
        Frame::Data(end) => s.send_data(end),
        Frame::Reset => s.send_reset(),
    }
}

fn recv(s: &mut Stream, frame: Frame) -> Result<Recv, Refused> {
    match frame {
        Frame::Headers(end) => s.recv_headers(end),
        Frame::Info => s.recv_informational(false),
        Frame::Data(end) => s.recv_data(end),
        Frame::Reset => s.recv_reset(),
    }
}

/// The state each side sees when the other sees `state`.
fn mirror(state: State) -> State {
    match state {
        HalfClosedLocal => HalfClosedRemote,
        HalfClosedRemote => HalfClosedLocal,
        Closed(LocalReset) => Closed(RemoteReset),
        Closed(RemoteReset) => Closed(LocalReset),
        other => other,
    }
}

/// Plays an exchange on a client's stream and the server's copy of it: each step is who sends
/// (true: the client), the frame, and the client's state after it. The server's must mirror it.
fn exchange(steps: &[(bool, Frame, State)]) {
    let mut client = Stream::local(ID);
    let mut server = Stream::remote(ID);
    assert_eq!((client.state(), server.state()), (Idle, Idle));
    for &(from_client, frame, want) in steps {
        let (sender, receiver) = match from_client {
            true => (&mut client, &mut server),
            false => (&mut server, &mut client),
        };
        assert_eq!(send(sender, frame), Ok(()), "sending {frame:?}");
        assert_eq!(
            recv(receiver, frame),
            Ok(Recv::Process),
            "receiving {frame:?}"
        );
        assert_eq!(client.state(), want, "client after {frame:?}");
        assert_eq!(server.state(), mirror(want), "server after {frame:?}");
    }
}

#[test]
fn get_without_bodies() {
    exchange(&[
        (true, Frame::Headers(true), HalfClosedLocal),
        (false, Frame::Headers(true), Closed(EndStream)),
    ]);
}

#[test]
fn get_with_a_response_body() {
    exchange(&[
        (true, Frame::Headers(true), HalfClosedLocal),
        (false, Frame::Headers(false), HalfClosedLocal),
        (false, Frame::Data(false), HalfClosedLocal),
        (false, Frame::Data(true), Closed(EndStream)),
    ]);
}

#[test]
fn post_with_bodies_informational_heads_and_trailers_both_ways() {
    exchange(&[
        (true, Frame::Headers(false), Open),
        (false, Frame::Info, Open),
        (true, Frame::Data(false), Open),
        (true, Frame::Headers(true), HalfClosedLocal),
        (false, Frame::Info, HalfClosedLocal),
        (false, Frame::Headers(false), HalfClosedLocal),
        (false, Frame::Data(false), HalfClosedLocal),
        (false, Frame::Headers(true), Closed(EndStream)),
    ]);
}

#[test]
fn the_server_answers_and_ends_before_the_request_body_ends() {
    exchange(&[
        (true, Frame::Headers(false), Open),
        (false, Frame::Headers(false), Open),
        (false, Frame::Data(true), HalfClosedRemote),
        (true, Frame::Data(false), HalfClosedRemote),
        (true, Frame::Data(true), Closed(EndStream)),
    ]);
}

#[test]
fn an_empty_data_frame_can_end_a_direction() {
    exchange(&[
        (true, Frame::Headers(false), Open),
        (true, Frame::Data(true), HalfClosedLocal),
        (false, Frame::Headers(false), HalfClosedLocal),
        (false, Frame::Data(true), Closed(EndStream)),
    ]);
}

#[test]
fn reset_by_either_side_from_open_and_from_each_half_closed_state() {
    let opened = (true, Frame::Headers(false), Open);
    exchange(&[opened, (true, Frame::Reset, Closed(LocalReset))]);
    exchange(&[opened, (false, Frame::Reset, Closed(RemoteReset))]);
    let request_ended = (true, Frame::Headers(true), HalfClosedLocal);
    exchange(&[request_ended, (true, Frame::Reset, Closed(LocalReset))]);
    exchange(&[request_ended, (false, Frame::Reset, Closed(RemoteReset))]);
    let response_ended = (false, Frame::Headers(true), HalfClosedRemote);
    exchange(&[
        opened,
        response_ended,
        (true, Frame::Reset, Closed(LocalReset)),
    ]);
    exchange(&[
        opened,
        response_ended,
        (false, Frame::Reset, Closed(RemoteReset)),
    ]);
}

#[test]
fn only_open_and_half_closed_streams_are_active() {
    let active = [
        Idle,
        Open,
        HalfClosedLocal,
        HalfClosedRemote,
        Closed(EndStream),
    ]
    .map(State::is_active);
    assert_eq!(active, [false, true, true, true, false]);
    assert!(!Closed(LocalReset).is_active() && !Closed(RemoteReset).is_active());
}

#[test]
fn idle_stream_refusals_are_connection_protocol_errors() {
    // §5.1 "idle": DATA, RST_STREAM, WINDOW_UPDATE.
    assert_eq!(refused(Stream::remote(ID).recv_data(false)), CONN_PROTOCOL);
    assert_eq!(refused(Stream::remote(ID).recv_data(true)), CONN_PROTOCOL);
    assert_eq!(refused(Stream::remote(ID).recv_reset()), CONN_PROTOCOL);
    assert_eq!(refused(Stream::local(ID).recv_reset()), CONN_PROTOCOL);
    assert_eq!(
        refused(Stream::remote(ID).recv_window_update()),
        CONN_PROTOCOL
    );
    // HEADERS opening a stream only this side may open.
    assert_eq!(
        refused(Stream::local(ID).recv_headers(false)),
        CONN_PROTOCOL
    );
    assert_eq!(
        refused(Stream::local(ID).recv_informational(false)),
        CONN_PROTOCOL
    );
    let mut s = Stream::remote(ID);
    assert!(s.recv_data(false).is_err());
    assert_eq!(s.state(), Idle, "a refused frame moves nothing");
}

#[test]
fn frames_after_the_peers_end_stream_are_stream_closed_errors() {
    // Half-closed (remote): a stream error, and the stream may then be reset.
    for frame in [Frame::Data(false), Frame::Headers(true), Frame::Info] {
        let mut s = Stream::remote(ID);
        assert_eq!(s.recv_headers(true), Ok(Recv::Process));
        assert_eq!(refused(recv(&mut s, frame)), STREAM_CLOSED, "{frame:?}");
        assert_eq!(s.state(), HalfClosedRemote);
        assert_eq!(s.send_reset(), Ok(()));
    }
    // Closed: a connection error (no RST_STREAM may be sent on a closed stream).
    for frame in [Frame::Data(true), Frame::Headers(false)] {
        let mut s = Stream::local(ID);
        assert_eq!(s.send_headers(true), Ok(()));
        assert_eq!(s.recv_headers(true), Ok(Recv::Process));
        assert_eq!(refused(recv(&mut s, frame)), CONN_CLOSED, "{frame:?}");
        // Reset by this side after the peer's END_STREAM: the peer had nothing more to send.
        let mut s = Stream::remote(ID);
        assert_eq!(s.recv_headers(true), Ok(Recv::Process));
        assert_eq!(s.send_reset(), Ok(()));
        assert_eq!(refused(recv(&mut s, frame)), CONN_CLOSED, "{frame:?}");
    }
}

#[test]
fn frames_after_the_peers_reset_are_connection_stream_closed_errors() {
    for frame in [Frame::Data(false), Frame::Headers(true), Frame::Info] {
        let mut s = Stream::local(ID);
        assert_eq!(s.send_headers(false), Ok(()));
        assert_eq!(s.recv_reset(), Ok(Recv::Process));
        assert_eq!(refused(recv(&mut s, frame)), CONN_CLOSED, "{frame:?}");
    }
}

#[test]
fn frames_after_this_sides_reset_are_ignored_not_punished() {
    let mut s = Stream::local(ID);
    assert_eq!(s.send_headers(false), Ok(()));
    assert_eq!(s.send_reset(), Ok(()));
    assert_eq!(s.state(), Closed(LocalReset));
    for frame in [
        Frame::Headers(false),
        Frame::Info,
        Frame::Data(false),
        Frame::Data(true),
        Frame::Headers(true),
        Frame::Reset,
    ] {
        assert_eq!(recv(&mut s, frame), Ok(Recv::Ignore), "{frame:?}");
    }
    assert_eq!(s.recv_window_update(), Ok(Recv::Ignore));
    assert_eq!(s.state(), Closed(LocalReset));
}

#[test]
fn reset_and_window_update_crossing_end_stream_are_ignored() {
    let mut s = Stream::remote(ID);
    assert_eq!(s.recv_headers(true), Ok(Recv::Process));
    assert_eq!(
        s.recv_window_update(),
        Ok(Recv::Process),
        "this side still sends"
    );
    assert_eq!(s.send_headers(true), Ok(()));
    assert_eq!(s.state(), Closed(EndStream));
    assert_eq!(s.recv_window_update(), Ok(Recv::Ignore));
    assert_eq!(s.recv_reset(), Ok(Recv::Ignore));
    assert_eq!(s.state(), Closed(EndStream));
    let mut s = Stream::local(ID);
    assert_eq!(s.send_headers(false), Ok(()));
    assert_eq!(s.recv_reset(), Ok(Recv::Process));
    assert_eq!(s.recv_reset(), Ok(Recv::Ignore));
    assert_eq!(s.state(), Closed(RemoteReset));
}

#[test]
fn malformed_message_order_is_a_stream_protocol_error() {
    // Trailers without END_STREAM (§8.1), on a request and on a response.
    let mut s = Stream::remote(ID);
    assert_eq!(s.recv_headers(false), Ok(Recv::Process));
    assert_eq!(refused(s.recv_headers(false)), STREAM_PROTOCOL);
    assert_eq!((s.state(), s.recv_half()), (Open, Half::Open));
    assert_eq!(s.send_reset(), Ok(()));
    let mut s = Stream::local(ID);
    assert_eq!(s.send_headers(true), Ok(()));
    assert_eq!(s.recv_headers(false), Ok(Recv::Process));
    assert_eq!(s.recv_data(false), Ok(Recv::Process));
    assert_eq!(refused(s.recv_headers(false)), STREAM_PROTOCOL);
    // DATA before the response head, before or after an informational one.
    let mut s = Stream::local(ID);
    assert_eq!(s.send_headers(true), Ok(()));
    assert_eq!(refused(s.recv_data(false)), STREAM_PROTOCOL);
    assert_eq!(s.recv_informational(false), Ok(Recv::Process));
    assert_eq!(refused(s.recv_data(true)), STREAM_PROTOCOL);
    assert_eq!(s.recv_half(), Half::Interim);
    // An informational head after the final one.
    assert_eq!(s.recv_headers(false), Ok(Recv::Process));
    assert_eq!(refused(s.recv_informational(false)), STREAM_PROTOCOL);
    assert_eq!(s.recv_half(), Half::Open);
}

#[test]
fn an_informational_head_with_end_stream_ends_the_direction_and_the_message() {
    let mut s = Stream::local(ID);
    assert_eq!(s.send_headers(false), Ok(()));
    assert_eq!(refused(s.recv_informational(true)), STREAM_PROTOCOL);
    assert_eq!(s.state(), HalfClosedRemote);
    assert_eq!(s.send_reset(), Ok(()));
    // Even as the frame that opens a stream: the stream is open, so it can be reset.
    let mut s = Stream::remote(ID);
    assert_eq!(refused(s.recv_informational(true)), STREAM_PROTOCOL);
    assert_eq!(s.state(), HalfClosedRemote);
    assert_eq!(s.send_reset(), Ok(()));
}

#[test]
fn sending_what_the_state_forbids_is_misuse_and_changes_nothing() {
    // Nothing before the head; a server cannot speak first.
    let mut s = Stream::local(ID);
    assert!(s.send_data(false).is_err());
    assert!(s.send_reset().is_err(), "RST_STREAM on idle (§6.4)");
    let mut s = Stream::remote(ID);
    assert!(s.send_headers(false).is_err());
    assert!(s.send_informational().is_err());
    assert_eq!(s.state(), Idle);
    // Trailers must end the stream; nothing after END_STREAM.
    let mut s = Stream::local(ID);
    assert_eq!(s.send_headers(false), Ok(()));
    assert!(s.send_headers(false).is_err());
    assert!(s.send_informational().is_err());
    assert_eq!(s.send_data(true), Ok(()));
    for frame in [Frame::Data(false), Frame::Headers(true), Frame::Info] {
        assert!(send(&mut s, frame).is_err(), "{frame:?}");
    }
    assert_eq!(s.state(), HalfClosedLocal);
    // Nothing on a reset stream, not even another reset; no reset on a closed stream.
    assert_eq!(s.send_reset(), Ok(()));
    for frame in [Frame::Data(true), Frame::Headers(true), Frame::Reset] {
        assert!(send(&mut s, frame).is_err(), "{frame:?}");
    }
    let mut s = Stream::local(ID);
    assert_eq!(s.send_headers(true), Ok(()));
    assert_eq!(s.recv_headers(true), Ok(Recv::Process));
    assert!(s.send_reset().is_err());
    assert_eq!(s.state(), Closed(EndStream));
}

#[test]
fn a_stream_knows_its_id_and_puts_it_in_stream_errors() {
    let mut s = Stream::remote(7);
    assert_eq!(s.id(), 7);
    assert_eq!(s.recv_headers(true), Ok(Recv::Process));
    let e = s.recv_data(false).unwrap_err();
    assert_eq!(e.scope, Scope::Stream(7));
}
