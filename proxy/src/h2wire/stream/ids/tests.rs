use super::*;
use crate::h2wire::frame::Scope;

fn refused(result: Result<(), Refused>) -> (Scope, ErrorCode) {
    let e = result.unwrap_err();
    (e.scope, e.code)
}

const CONN_PROTOCOL: (Scope, ErrorCode) = (Scope::Connection, ErrorCode::PROTOCOL_ERROR);

#[test]
fn a_client_opens_odd_ids_from_1_and_a_server_even_ids_from_2() {
    let mut ids = StreamIds::new(Role::Client);
    let opened: Vec<_> = (0..4).map(|_| ids.open_local()).collect();
    assert_eq!(opened, [Some(1), Some(3), Some(5), Some(7)]);
    let mut ids = StreamIds::new(Role::Server);
    assert_eq!((ids.open_local(), ids.open_local()), (Some(2), Some(4)));
}

#[test]
fn ids_run_out_after_2_31_minus_1_and_stay_out() {
    let mut ids = StreamIds::new(Role::Client);
    ids.next_local = MAX_STREAM_ID - 2;
    assert_eq!(ids.open_local(), Some(MAX_STREAM_ID - 2));
    assert_eq!(ids.open_local(), Some(MAX_STREAM_ID));
    assert_eq!(ids.open_local(), None);
    assert_eq!(ids.open_local(), None);
    let mut ids = StreamIds::new(Role::Server);
    ids.next_local = MAX_STREAM_ID - 1;
    assert_eq!(ids.open_local(), Some(MAX_STREAM_ID - 1));
    assert_eq!(ids.open_local(), None);
}

#[test]
fn a_server_accepts_odd_increasing_ids_and_skipped_ones_are_gone() {
    let mut ids = StreamIds::new(Role::Server);
    assert_eq!(ids.highest_remote(), 0);
    assert_eq!(ids.accept_remote(1), Ok(()));
    assert_eq!(ids.accept_remote(3), Ok(()));
    assert_eq!(ids.accept_remote(9), Ok(()));
    assert_eq!(ids.highest_remote(), 9);
    // 5 and 7 were skipped: implicitly closed, never to be opened (§5.1.1).
    assert_eq!(refused(ids.accept_remote(5)), CONN_PROTOCOL);
    assert_eq!(refused(ids.accept_remote(9)), CONN_PROTOCOL);
    assert_eq!(ids.accept_remote(MAX_STREAM_ID), Ok(()));
    assert_eq!(ids.highest_remote(), MAX_STREAM_ID);
}

#[test]
fn a_server_refuses_even_zero_and_out_of_range_ids() {
    let mut ids = StreamIds::new(Role::Server);
    for id in [0, 2, 4, 0x8000_0001, u32::MAX] {
        assert_eq!(refused(ids.accept_remote(id)), CONN_PROTOCOL, "id {id}");
    }
    assert_eq!(ids.highest_remote(), 0, "a refused id is not taken");
}

#[test]
fn a_client_accepts_no_stream_from_the_server() {
    let mut ids = StreamIds::new(Role::Client);
    for id in [1, 2, 4, 3] {
        assert_eq!(refused(ids.accept_remote(id)), CONN_PROTOCOL, "id {id}");
    }
}

#[test]
fn idle_ids_are_those_never_reached_by_either_side() {
    let mut ids = StreamIds::new(Role::Server);
    assert_eq!(ids.accept_remote(5), Ok(()));
    assert_eq!(ids.open_local(), Some(2));
    assert!(!ids.is_idle(1), "skipped: closed");
    assert!(!ids.is_idle(5));
    assert!(ids.is_idle(7));
    assert!(!ids.is_idle(2));
    assert!(ids.is_idle(4));
    assert!(!ids.is_idle(0));
    assert!(!ids.is_idle(0x8000_0001));
    let mut ids = StreamIds::new(Role::Client);
    assert!(ids.is_idle(1) && ids.is_idle(2));
    assert_eq!(ids.open_local(), Some(1));
    assert!(!ids.is_idle(1) && ids.is_idle(3) && ids.is_idle(2));
}

#[test]
fn after_goaway_streams_above_the_last_were_not_processed() {
    let mut ids = StreamIds::new(Role::Client);
    for _ in 0..4 {
        assert!(ids.open_local().is_some());
    }
    assert!([1, 3, 5, 7].iter().all(|&id| ids.maybe_processed(id)));
    assert_eq!(ids.peer_last(), None);
    ids.going_away(3);
    assert_eq!(ids.peer_last(), Some(3));
    assert_eq!(
        [1, 3, 5, 7].map(|id| ids.maybe_processed(id)),
        [true, true, false, false]
    );
    assert_eq!(ids.open_local(), None, "no new stream after GOAWAY");
    // A later GOAWAY cannot raise the last stream, but can lower it.
    ids.going_away(7);
    assert_eq!(ids.peer_last(), Some(3));
    assert!(!ids.maybe_processed(5));
    ids.going_away(1);
    assert!(!ids.maybe_processed(3));
    assert!(ids.maybe_processed(1));
    // The peer's own streams are not the GOAWAY's to judge.
    assert!(ids.maybe_processed(2));
}

#[test]
fn goaway_with_last_stream_0_means_nothing_was_processed() {
    let mut ids = StreamIds::new(Role::Client);
    assert_eq!(ids.open_local(), Some(1));
    ids.going_away(0);
    assert!(!ids.maybe_processed(1));
}
