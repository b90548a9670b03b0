//! The bounds against a hostile client (§10.5), each tripped.

use super::peer::*;
use crate::h2wire::frame::{ErrorCode, Kind};
use crate::h2wire::server::Config;

fn calm(result: Result<Vec<crate::h2wire::server::Event>, crate::h2wire::server::ConnError>) {
    assert_eq!(result.unwrap_err().code, ErrorCode::ENHANCE_YOUR_CALM);
}

#[test]
fn made_you_reset_streams_reset_for_the_clients_errors_are_bounded() {
    let config = Config {
        max_local_resets: 10,
        ..Config::default()
    };
    let (mut conn, mut client) = ready(config);
    // Each stream's DATA beyond its content-length: the server resets it.
    for n in 0..10u32 {
        let id = 1 + 2 * n;
        client.request(id, "POST", &[("content-length", "1")], false);
        client.data(id, b"ab", false);
    }
    assert_eq!(reset_events(&client.send(&mut conn).unwrap()).len(), 10);
    client
        .request(21, "POST", &[("content-length", "1")], false)
        .data(21, b"ab", false);
    calm(client.send(&mut conn));
    let frames = written(&mut conn);
    assert_eq!(goaway(&frames), Some((21, ErrorCode::ENHANCE_YOUR_CALM)));
}

#[test]
fn rapid_reset_is_bounded_by_a_budget_completed_streams_refill() {
    let config = Config {
        reset_budget: 4,
        ..Config::default()
    };
    let (mut conn, mut client) = ready(config);
    let mut id = 1;
    for _ in 0..4 {
        client
            .request(id, "GET", &[], true)
            .rst(id, ErrorCode::CANCEL);
        id += 2;
    }
    client.send(&mut conn).unwrap();
    // A completed response gives one back.
    client
        .request(id, "GET", &[], true)
        .send(&mut conn)
        .unwrap();
    assert!(conn.respond(id, 204, [], true));
    id += 2;
    // A reset after the response is complete costs nothing.
    client
        .request(id, "POST", &[], false)
        .send(&mut conn)
        .unwrap();
    assert!(conn.respond(id, 204, [], true));
    client.rst(id, ErrorCode::CANCEL).send(&mut conn).unwrap();
    id += 2;
    client
        .request(id, "GET", &[], true)
        .rst(id, ErrorCode::CANCEL);
    client.send(&mut conn).unwrap();
    id += 2;
    client
        .request(id, "GET", &[], true)
        .rst(id, ErrorCode::CANCEL);
    calm(client.send(&mut conn));
}

#[test]
fn a_client_that_does_not_read_its_ping_answers_is_stopped() {
    let config = Config {
        max_queued_output: 64 << 10,
        ..Config::default()
    };
    let (mut conn, mut client) = ready(config);
    // 17 octets an answer: 64 KiB of them is 3,855 PINGs.
    for _ in 0..4_000 {
        client.ping([0; 8]);
    }
    calm(client.send(&mut conn));

    // Written as it goes, the same PINGs pass.
    let (mut conn, mut client) = ready(config);
    for _ in 0..4_000 {
        client.ping([0; 8]).send(&mut conn).unwrap();
        conn.output().clear();
    }
}

#[test]
fn a_client_that_does_not_read_its_settings_acknowledgements_is_stopped() {
    let config = Config {
        max_queued_output: 64 << 10,
        ..Config::default()
    };
    let (mut conn, mut client) = ready(config);
    // 9 octets an acknowledgement.
    for _ in 0..8_000 {
        client.settings(&[]);
    }
    calm(client.send(&mut conn));
    let frames = written(&mut conn);
    assert_eq!(goaway(&frames), Some((0, ErrorCode::ENHANCE_YOUR_CALM)));
}

#[test]
fn data_is_queued_only_below_half_the_output_cap() {
    let config = Config {
        max_queued_output: 64 << 10,
        ..Config::default()
    };
    let (mut conn, mut client) = ready(config);
    client.request(1, "GET", &[], true).send(&mut conn).unwrap();
    client
        .window_update(0, 1 << 20)
        .window_update(1, 1 << 20)
        .send(&mut conn)
        .unwrap();
    assert!(conn.respond(1, 200, [], false));
    let sent = conn.send_data(1, &vec![0; 1 << 20], true);
    assert!(sent < 32 << 10 && sent > 30 << 10, "{sent}");
    // PINGs still pass with DATA unwritten.
    client.ping([1; 8]).ping([2; 8]).send(&mut conn).unwrap();
}

#[test]
fn empty_data_and_empty_continuation_floods_are_bounded() {
    let config = Config {
        max_empty_frames: 100,
        ..Config::default()
    };
    let (mut conn, mut client) = ready(config);
    client.request(1, "POST", &[], false);
    for _ in 0..100 {
        client.data(1, b"", false);
    }
    client.send(&mut conn).unwrap();
    calm(client.data(1, b"", false).send(&mut conn));

    let (mut conn, mut client) = ready(config);
    client.frame(Kind::Headers, 0, 1, &[]);
    for _ in 0..101 {
        client.frame(Kind::Continuation, 0, 1, &[]);
    }
    calm(client.send(&mut conn));
}

#[test]
fn a_field_block_past_the_cap_ends_the_connection() {
    let (mut conn, mut client) = ready(Config::default());
    client.frame(Kind::Headers, 0, 1, &[0x40; 16_384]);
    for _ in 0..8 {
        client.frame(Kind::Continuation, 0, 1, &[0x40; 16_384]);
    }
    calm(client.send(&mut conn));
}
