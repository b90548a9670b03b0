use super::super::{SendWindow, MAX_WINDOW};
use super::*;

const HALF: u32 = 65_535 / 2;

#[test]
fn receive_up_to_the_window_and_not_one_octet_more() {
    let mut w = RecvWindow::new(DEFAULT_WINDOW);
    assert_eq!(w.receive(0), Ok(()));
    assert_eq!(w.receive(65_000), Ok(()));
    assert_eq!(w.available(), 535);
    let e = w.receive(536).unwrap_err();
    assert_eq!(e.code(), FlowError::CODE);
    assert_eq!(w.available(), 535, "a refused frame is not counted");
    assert_eq!(w.receive(535), Ok(()));
    assert_eq!(w.available(), 0);
    assert!(w.receive(1).is_err());
    assert_eq!(w.receive(0), Ok(()));
}

#[test]
fn a_frame_larger_than_any_window_is_refused() {
    let mut w = RecvWindow::new(MAX_WINDOW);
    assert!(w.receive(MAX_WINDOW + 1).is_err());
    assert!(w.receive(u32::MAX).is_err());
    assert_eq!(w.receive(MAX_WINDOW), Ok(()));
}

#[test]
fn no_update_below_half_the_target() {
    let mut w = RecvWindow::new(DEFAULT_WINDOW);
    assert_eq!(w.receive(65_535), Ok(()));
    assert_eq!(w.release(HALF - 1), None);
    assert_eq!(w.available(), 0, "nothing is announced yet");
}

#[test]
fn one_update_at_half_the_target_with_the_exact_increment() {
    let mut w = RecvWindow::new(DEFAULT_WINDOW);
    assert_eq!(w.receive(40_000), Ok(()));
    assert_eq!(w.release(HALF), Some(HALF));
    assert_eq!(w.available(), 65_535 - 40_000 + HALF);
    // What remains held (40,000 - 32,767) is below half: no second update.
    assert_eq!(w.release(40_000 - HALF), None);
}

#[test]
fn releases_add_up_to_one_update() {
    let mut w = RecvWindow::new(DEFAULT_WINDOW);
    assert_eq!(w.receive(65_535), Ok(()));
    assert_eq!(w.release(10_000), None);
    assert_eq!(w.release(10_000), None);
    assert_eq!(w.release(10_000), None);
    assert_eq!(w.release(5_000), Some(35_000));
    assert_eq!(w.available(), 35_000);
    assert_eq!(w.release(30_535), None);
    assert_eq!(w.release(0), None);
}

#[test]
fn a_release_above_half_is_announced_whole() {
    let mut w = RecvWindow::new(DEFAULT_WINDOW);
    assert_eq!(w.receive(65_535), Ok(()));
    assert_eq!(w.release(65_535), Some(65_535));
    assert_eq!(w.available(), 65_535);
}

#[test]
fn a_window_of_one_announces_every_octet() {
    let mut w = RecvWindow::new(1);
    assert_eq!(w.receive(1), Ok(()));
    assert!(w.receive(1).is_err());
    assert_eq!(w.release(1), Some(1));
    assert_eq!(w.available(), 1);
}

#[test]
fn a_window_of_zero_accepts_nothing_and_announces_nothing() {
    let mut w = RecvWindow::new(0);
    assert!(w.receive(1).is_err());
    assert_eq!(w.receive(0), Ok(()));
    assert_eq!(w.release(0), None);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "releasing")]
fn releasing_more_than_received_is_caught_in_debug_builds() {
    let mut w = RecvWindow::new(DEFAULT_WINDOW);
    assert_eq!(w.receive(10), Ok(()));
    let _ = w.release(11);
}

#[test]
fn raising_the_target_moves_the_window_and_sends_no_update() {
    let mut w = RecvWindow::new(DEFAULT_WINDOW);
    assert_eq!(w.receive(60_000), Ok(()));
    assert_eq!(w.set_target(1_048_576), None);
    assert_eq!(w.target(), 1_048_576);
    assert_eq!(w.available(), 1_048_576 - 60_000);
    // The threshold is now half of the new target.
    assert_eq!(w.release(60_000), None);
}

#[test]
fn lowering_the_target_can_leave_the_window_negative() {
    let mut w = RecvWindow::new(DEFAULT_WINDOW);
    assert_eq!(w.receive(60_000), Ok(()));
    assert_eq!(w.set_target(16_384), None);
    // The peer's window for the stream is 5,535 - 49,151: it may send nothing.
    assert_eq!(w.available(), 0);
    assert!(w.receive(1).is_err());
    // Releasing the 60,000 octets held brings the window back to the new target.
    assert_eq!(w.release(50_000), Some(50_000));
    assert_eq!(w.available(), 50_000 + 5_535 - 49_151);
    assert_eq!(w.release(10_000), Some(10_000));
    assert_eq!(w.available(), 16_384);
}

#[test]
fn lowering_the_target_announces_releases_that_became_due() {
    // 30,000 released and unannounced (below 32,767), nothing held: after the decrease the
    // peer's window is negative and nothing more will arrive to prompt a release.
    let mut w = RecvWindow::new(DEFAULT_WINDOW);
    assert_eq!(w.receive(30_000), Ok(()));
    assert_eq!(w.release(30_000), None);
    assert_eq!(w.set_target(1_000), Some(30_000));
    assert_eq!(w.available(), 1_000);
}

#[test]
fn the_connection_window_is_widened_by_window_update() {
    let (w, update) = RecvWindow::connection(1 << 20);
    assert_eq!(update, Some((1 << 20) - 65_535));
    assert_eq!((w.available(), w.target()), (1 << 20, 1 << 20));
    let (w, update) = RecvWindow::connection(DEFAULT_WINDOW);
    assert_eq!((w.available(), update), (65_535, None));
    // It cannot start below what the peer assumes.
    let (w, update) = RecvWindow::connection(1_000);
    assert_eq!((w.available(), w.target(), update), (65_535, 65_535, None));
    let (w, update) = RecvWindow::connection(u32::MAX);
    assert_eq!(w.available(), MAX_WINDOW);
    assert_eq!(update, Some(MAX_WINDOW - 65_535));
}

/// A peer sending as fast as its window allows, a receiver releasing each frame as it is
/// consumed: the two sides always agree on the window, the peer is never refused, and it is
/// never stalled while this side holds nothing.
#[test]
fn peer_and_receiver_agree_on_the_window_through_a_long_transfer() {
    for (target, frame) in [(65_535, 16_384), (65_535, 1_000), (1_000, 300), (1, 1)] {
        let mut peer = SendWindow::new(target);
        let mut recv = RecvWindow::new(target);
        let mut delivered = 0u64;
        while delivered < 1_000_000 {
            let n = peer.available().min(frame);
            assert!(n > 0, "peer stalled at {delivered} (target {target})");
            peer.take(n);
            assert_eq!(recv.receive(n), Ok(()));
            delivered += u64::from(n);
            if let Some(increment) = recv.release(n) {
                assert_eq!(peer.grow(increment), Ok(()));
            }
            assert_eq!(i64::from(recv.available()), peer.window().max(0));
            assert!(peer.window() <= i64::from(target));
        }
    }
}
