//! The README's first command: `weir demo` aborts the regressed canary with a reason, and
//! `weir demo --healthy` promotes a healthy one — each in under a minute, exit code saying which.

use std::process::Command;
use std::time::{Duration, Instant};

fn demo(args: &[&str]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("demo")
        .args(["--admin", "127.0.0.1:0"])
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text, started.elapsed())
}

#[test]
fn the_demo_aborts_the_regressed_canary_with_the_reason() {
    let (code, out, took) = demo(&[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let last = out
        .lines()
        .rfind(|l| l.starts_with("Degraded after"))
        .unwrap_or_else(|| panic!("{out}"));
    // The reason names a metric, its value and the limit.
    assert!(
        last.contains("metric \"") && last.contains("failureLimit"),
        "{last}"
    );
    // One status line a second, weight, success rate and P99 included.
    let lines = out.lines().filter(|l| l.starts_with('[')).count();
    assert!(lines >= 2, "{out}");
    assert!(out.contains("success") && out.contains("p99"), "{out}");
    // The log stays at warn: no INFO lines between the status lines.
    assert!(!out.contains(" INFO "), "{out}");
}

#[test]
fn the_healthy_demo_is_promoted_without_a_false_abort() {
    let (code, out, took) = demo(&["--healthy"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert!(out.contains("Healthy after"), "{out}");
    // It went through every weight on the way.
    for weight in ["canary    20.0%", "canary    50.0%", "canary    80.0%"] {
        assert!(out.contains(weight), "never at {weight}:\n{out}");
    }
}

#[test]
fn the_two_service_demo_aborts_one_and_promotes_the_other() {
    let (code, out, took) = demo(&["--two"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(took < Duration::from_secs(90), "took {took:?}");
    // Side by side: a status line for each every second, each named.
    assert!(out.lines().any(|l| l.starts_with("shop [")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("cart [")), "{out}");
    let shop = out
        .lines()
        .find(|l| l.starts_with("shop: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(shop.starts_with("shop: Degraded after"), "{shop}");
    let cart = out
        .lines()
        .find(|l| l.starts_with("cart: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(cart.starts_with("cart: Healthy after"), "{cart}");
    assert!(!out.contains(" INFO "), "{out}");
}

/// `weir demo --dark`: the regressed canary is judged on mirrored copies at weight 0 and
/// aborted there — it answered copies, and not one user's request.
#[test]
fn the_dark_demo_aborts_the_regressed_canary_before_any_user_reaches_it() {
    let (code, out, took) = demo(&["--dark"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let last = out
        .lines()
        .rfind(|l| l.starts_with("Degraded after"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        last.contains("shadow-errors") || last.contains("shadow-latency"),
        "{last}"
    );
    // Never given a share of users.
    assert!(!out.contains("canary    20.0%"), "{out}");
    let answered = out
        .lines()
        .find(|l| l.starts_with("The canary answered"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(answered.contains("no user's request"), "{answered}");
    assert!(
        !answered.starts_with("The canary answered 0 mirrored"),
        "{answered}"
    );
}

/// `weir demo --dark --healthy`: the dark step passes, then the weights go on to promotion.
#[test]
fn the_dark_demo_passes_a_healthy_canary_on_to_its_users() {
    let (code, out, took) = demo(&["--dark", "--healthy"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(took < Duration::from_secs(90), "took {took:?}");
    assert!(out.contains("Healthy after"), "{out}");
    assert!(out.contains("canary    20.0%"), "{out}");
}
