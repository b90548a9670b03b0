//! The judge on scripted traffic: 10 observations a second, as the provider looks.

use super::*;

/// splitmix64: deterministic noise for scripted traffic.
struct Noise(u64);

impl Noise {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (x ^ (x >> 31)) as f64 / u64::MAX as f64
    }

    fn events(&mut self, requests: u64, rate: f64) -> u64 {
        (0..requests).filter(|_| self.unit() < rate).count() as u64
    }
}

/// Runs `seconds` of traffic (canary and stable requests per second, event rate per second)
/// and returns the verdict it moved to and the second it came in.
fn run(
    judge: &mut Judge,
    noise: &mut Noise,
    seconds: u64,
    per_second: (u64, u64),
    rates: impl Fn(u64) -> (f64, f64),
) -> (Verdict, f64) {
    let start = judge.verdict();
    for tick in 0..seconds * 10 {
        let (c_rate, s_rate) = rates(tick / 10);
        let c = per_second.0 / 10;
        let s = per_second.1 / 10;
        let canary = Count {
            requests: c,
            events: noise.events(c, c_rate),
        };
        let stable = Count {
            requests: s,
            events: noise.events(s, s_rate),
        };
        let verdict = judge.observe(canary, stable);
        if verdict != start {
            return (verdict, (tick + 1) as f64 / 10.0);
        }
    }
    (start, seconds as f64)
}

#[test]
fn a_total_outage_fails_within_a_second() {
    let mut judge = Judge::new(Tolerance::default());
    let mut noise = Noise(1);
    let (verdict, at) = run(&mut judge, &mut noise, 30, (200, 800), |_| (1.0, 0.001));
    assert_eq!(verdict, Verdict::Failed);
    assert!(at <= 1.0, "{at}");
    assert_eq!(judge.progress().toward_failed, 1.0);
}

#[test]
fn a_regression_after_a_healthy_stretch_is_caught() {
    let mut judge = Judge::new(Tolerance::default());
    let mut noise = Noise(2);
    let (verdict, at) = run(&mut judge, &mut noise, 200, (200, 800), |s| {
        (if s < 60 { 0.001 } else { 0.02 }, 0.001)
    });
    assert_eq!(verdict, Verdict::Failed, "at {at}");
    assert!(at > 60.0 && at < 70.0, "{at}");
}

#[test]
fn a_burst_shared_by_both_does_not_fail_the_canary() {
    for seed in 0..20 {
        let mut judge = Judge::new(Tolerance::default());
        let mut noise = Noise(seed);
        // 3 s of 30 % errors on both sides every 20 s, 0.1 % otherwise.
        let (verdict, at) = run(&mut judge, &mut noise, 120, (200, 800), |s| {
            let r = if s % 20 < 3 { 0.3 } else { 0.001 };
            (r, r)
        });
        assert_ne!(verdict, Verdict::Failed, "seed {seed} at {at}");
    }
}

#[test]
fn a_canary_within_the_tolerance_is_not_failed() {
    // 1.3 × the stable's 1 %: worse, but within max_ratio 1.5.
    for seed in 0..10 {
        let mut judge = Judge::new(Tolerance::default());
        let mut noise = Noise(100 + seed);
        let (verdict, at) = run(&mut judge, &mut noise, 300, (200, 800), |_| (0.013, 0.01));
        assert_ne!(verdict, Verdict::Failed, "seed {seed} at {at}");
    }
}

#[test]
fn a_healthy_canary_reaches_successful() {
    let mut judge = Judge::new(Tolerance::default());
    let mut noise = Noise(3);
    let (verdict, at) = run(&mut judge, &mut noise, 600, (200, 800), |_| (0.01, 0.01));
    assert_eq!(verdict, Verdict::Successful, "at {at}");
    assert_eq!(judge.progress().toward_successful, 1.0);
}

#[test]
fn without_stable_traffic_nothing_is_decided() {
    let mut judge = Judge::new(Tolerance::default());
    let mut noise = Noise(4);
    let (verdict, _) = run(&mut judge, &mut noise, 120, (200, 0), |_| (1.0, 0.0));
    assert_eq!(verdict, Verdict::Inconclusive);
    let (verdict, _) = run(&mut judge, &mut noise, 120, (200, 0), |_| (0.0, 0.0));
    assert_eq!(verdict, Verdict::Inconclusive);
    assert_eq!(judge.canary().requests, 48_000);
}

#[test]
fn a_stable_without_errors_still_catches_a_canary_with_many() {
    let mut judge = Judge::new(Tolerance::default());
    let mut noise = Noise(5);
    let (verdict, at) = run(&mut judge, &mut noise, 60, (200, 800), |_| (0.05, 0.0));
    assert_eq!(verdict, Verdict::Failed);
    assert!(at < 5.0, "{at}");
}

#[test]
fn the_margin_tolerates_small_absolute_differences() {
    // 0.05 % against a stable with none: infinitely worse by ratio, within the 0.1 % margin.
    for seed in 0..10 {
        let mut judge = Judge::new(Tolerance::default());
        let mut noise = Noise(200 + seed);
        let (verdict, at) = run(&mut judge, &mut noise, 300, (200, 800), |_| (0.0005, 0.0));
        assert_ne!(verdict, Verdict::Failed, "seed {seed} at {at}");
    }
}

#[test]
fn after_successful_it_keeps_watching() {
    let mut judge = Judge::new(Tolerance::default());
    let mut noise = Noise(6);
    let (verdict, at) = run(&mut judge, &mut noise, 600, (200, 800), |_| (0.01, 0.01));
    assert_eq!(verdict, Verdict::Successful, "at {at}");
    let (verdict, _) = run(&mut judge, &mut noise, 60, (200, 800), |_| (0.3, 0.01));
    assert_eq!(verdict, Verdict::Failed);
    // Failed is final.
    let (verdict, _) = run(&mut judge, &mut noise, 10, (200, 800), |_| (0.0, 0.01));
    assert_eq!(verdict, Verdict::Failed);
}
