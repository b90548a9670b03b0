//! The dark canary's judge against weir-compare's, simulated and seeded (issue 50): how fast
//! each fails a regressed canary, and how often the paired one fails a healthy one.
//!
//! Paired: every request of the route is mirrored at 1,000 requests/s, so each is answered by
//! both versions; pairs go through weir's real `PairLog` and the real `ShadowRun` (the
//! `shadow-errors` and `shadow-latency` judges, tolerance and alpha as the shipped `weir-shadow`
//! template: 1.5 ×, 0.1 %, alpha 0.005 each; latency 1.2 × and 5 ms a pair), read every 100 ms of
//! simulated time. Unpaired: the canary at 20 % of the same 1,000 requests/s, judged by
//! weir-compare's error judge (`Judge`, the same tolerance and alpha) on the canary's and the
//! stable's own requests, every 100 ms. Each run draws its own requests from a seeded splitmix64;
//! only the clock is simulated.
//!
//! Healthy canaries include ones whose failures are correlated with the stable's (a shared
//! dependency failing both answers of the same request) and bursts (for 2 s in every 30, the
//! dependency fails 20 % of requests, both answers alike; or both versions' own error rates
//! rise tenfold together).
//!
//! Run: `cargo bench --bench shadow` (RUNS=1000 healthy runs a scenario, DETECT=200 runs a
//! regression). Reports; asserts nothing.

use weir_control::analysis::judge::{Count, Judge, PairRule, ShadowRun, Tolerance, Verdict};
use weir_proxy::stats::pairs::{Answer, Pair, PairLog};

/// Looks per simulated second (the provider's 100 ms).
const TICKS: u64 = 10;
const RATE: u64 = 1000;
/// The unpaired comparison's canary share.
const CANARY_SHARE: f64 = 0.2;

const ERRORS: Tolerance = Tolerance {
    max_ratio: 1.5,
    margin: 0.001,
    alpha: 0.005,
};
/// shadow-latency's count tolerance (`argo::provider`'s SHADOW_LATENCY_MARGIN).
const LATENCY_COUNTS: Tolerance = Tolerance {
    max_ratio: 1.5,
    margin: 0.01,
    alpha: 0.005,
};
const LATENCY_RULE: PairRule = PairRule::Latency {
    max_ratio: 1.2,
    margin_micros: 5_000,
};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((x ^ (x >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn exponential(&mut self, mean_us: f64) -> u64 {
        (-(1.0 - self.unit()).ln() * mean_us) as u64
    }
}

/// One second of the world: each version's own error rate, a shared dependency's (failing both
/// answers of the same request), and the canary's extra latency.
#[derive(Clone, Copy)]
struct World {
    stable_errors: f64,
    canary_errors: f64,
    shared_errors: f64,
    canary_extra_us: u64,
}

struct Scenario {
    name: &'static str,
    at: Box<dyn Fn(u64) -> World>,
}

fn healthy(name: &'static str, at: impl Fn(u64) -> World + 'static) -> Scenario {
    Scenario {
        name,
        at: Box::new(at),
    }
}

const CALM: World = World {
    stable_errors: 0.001,
    canary_errors: 0.001,
    shared_errors: 0.0,
    canary_extra_us: 0,
};

fn healthy_scenarios() -> Vec<Scenario> {
    let burst = |s: u64| s % 30 < 2;
    vec![
        healthy("both 0.1 % 5xx", |_| CALM),
        healthy("both 1 % 5xx", |_| World {
            stable_errors: 0.01,
            canary_errors: 0.01,
            ..CALM
        }),
        healthy("shared dependency failing 2 % (both answers)", |_| World {
            shared_errors: 0.02,
            ..CALM
        }),
        healthy(
            "canary within tolerance: 0.1 % own + 1 % shared, canary 0.13 %",
            |_| World {
                canary_errors: 0.0013,
                shared_errors: 0.01,
                ..CALM
            },
        ),
        healthy("shared bursts: 20 % for 2 s in every 30", move |s| World {
            shared_errors: if burst(s) { 0.2 } else { 0.0 },
            ..CALM
        }),
        healthy("own bursts: both ×10 for 2 s in every 30", move |s| {
            let e = if burst(s) { 0.01 } else { 0.001 };
            World {
                stable_errors: e,
                canary_errors: e,
                ..CALM
            }
        }),
    ]
}

fn regressions() -> Vec<Scenario> {
    vec![
        healthy("0.1 → 2 % 5xx", |_| World {
            canary_errors: 0.02,
            ..CALM
        }),
        healthy("0.1 → 0.6 % 5xx", |_| World {
            canary_errors: 0.006,
            ..CALM
        }),
        healthy("+50 ms on every request", |_| World {
            canary_extra_us: 50_000,
            ..CALM
        }),
    ]
}

/// One request's latency on one version: 1 ms, a cost the request itself carries (the same on
/// both versions: exponential, mean 2 ms), and the version's own noise (exponential, 0.5 ms).
fn latency(rng: &mut Rng, cost_us: u64, extra_us: u64) -> u64 {
    1_000 + cost_us + rng.exponential(500.0) + extra_us
}

fn answer(failed: bool, micros: u64) -> Answer {
    Answer {
        status: Some(if failed { 503 } else { 200 }),
        failure: None,
        grpc_fault: false,
        micros,
    }
}

/// Seconds until each paired judge Failed (errors, latency), or None within `horizon`.
fn paired_run(s: &Scenario, seed: u64, horizon: u64) -> (Option<f64>, Option<f64>) {
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0xDA7C);
    let log = PairLog::default();
    let mut errors = ShadowRun::new(PairRule::Errors, ERRORS, &log, 0);
    let mut slower = ShadowRun::new(LATENCY_RULE, LATENCY_COUNTS, &log, 0);
    let (mut e_at, mut l_at) = (None, None);
    for tick in 0..horizon * TICKS {
        let w = (s.at)(tick / TICKS);
        for _ in 0..RATE / TICKS {
            let shared = rng.unit() < w.shared_errors;
            let s_failed = shared || rng.unit() < w.stable_errors;
            let c_failed = shared || rng.unit() < w.canary_errors;
            let cost = rng.exponential(2_000.0);
            let primary = answer(s_failed, latency(&mut rng, cost, 0));
            let copy = answer(c_failed, latency(&mut rng, cost, w.canary_extra_us));
            log.push(Pair { primary, copy });
        }
        let now = tick / TICKS;
        let t = (tick + 1) as f64 / TICKS as f64;
        if e_at.is_none() && errors.observe(&log, now) == Verdict::Failed {
            e_at = Some(t);
        }
        if l_at.is_none() && slower.observe(&log, now) == Verdict::Failed {
            l_at = Some(t);
        }
        if e_at.is_some() || l_at.is_some() {
            break;
        }
    }
    (e_at, l_at)
}

/// Seconds until weir-compare's error judge Failed, the canary at 20 %, or None.
fn unpaired_run(s: &Scenario, seed: u64, horizon: u64) -> Option<f64> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5EED);
    let mut judge = Judge::new(ERRORS);
    let canary_per_tick = (RATE as f64 * CANARY_SHARE) as u64 / TICKS;
    let stable_per_tick = RATE / TICKS - canary_per_tick;
    for tick in 0..horizon * TICKS {
        let w = (s.at)(tick / TICKS);
        let mut side = |n: u64, own: f64| {
            let events = (0..n)
                .filter(|_| rng.unit() < w.shared_errors || rng.unit() < own)
                .count() as u64;
            Count {
                requests: n,
                events,
            }
        };
        let c = side(canary_per_tick, w.canary_errors);
        let st = side(stable_per_tick, w.stable_errors);
        if judge.observe(c, st) == Verdict::Failed {
            return Some((tick + 1) as f64 / TICKS as f64);
        }
    }
    None
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn summary(mut times: Vec<f64>, runs: u64) -> String {
    times.sort_by(f64::total_cmp);
    format!(
        "{} of {runs} | {:.1} s | {:.1} s | {:.1} s",
        times.len(),
        quantile(&times, 0.5),
        quantile(&times, 0.9),
        times.last().copied().unwrap_or(f64::NAN)
    )
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (runs, detect, horizon) = if benching {
        (env("RUNS", 1000), env("DETECT", 200), 120)
    } else {
        (2, 2, 10)
    };

    println!(
        "### Regressed canaries: time to Failed ({detect} seeded runs each, 1,000 requests/s)\n"
    );
    println!("| regression | judge | failed | median | p90 | slowest |");
    println!("|---|---|---|---|---|---|");
    for s in regressions() {
        let (mut paired, mut unpaired) = (Vec::new(), Vec::new());
        for seed in 0..detect {
            let (e, l) = paired_run(&s, seed, horizon);
            if let Some(t) = e.or(l) {
                paired.push(t);
            }
            if s.name.contains("5xx") {
                if let Some(t) = unpaired_run(&s, seed, horizon) {
                    unpaired.push(t);
                }
            }
        }
        println!(
            "| {} | paired (every request mirrored, weight 0) | {} |",
            s.name,
            summary(paired, detect)
        );
        if s.name.contains("5xx") {
            println!(
                "| {} | weir-compare errors, canary at 20 % | {} |",
                s.name,
                summary(unpaired, detect)
            );
        }
    }

    println!(
        "\n### Healthy canaries: false aborts of the paired judges ({runs} seeded runs of {horizon} simulated seconds)\n"
    );
    println!("| scenario | runs | Failed (errors / latency) | rate | alpha (both metrics) |");
    println!("|---|---|---|---|---|");
    for s in healthy_scenarios() {
        let (mut by_errors, mut by_latency) = (0u64, 0u64);
        for seed in 0..runs {
            let (e, l) = paired_run(&s, 1_000_000 + seed, horizon);
            by_errors += u64::from(e.is_some());
            by_latency += u64::from(l.is_some());
        }
        let failed = by_errors + by_latency;
        println!(
            "| {} | {runs} | {failed} ({by_errors} / {by_latency}) | {:.2} % | {:.1} % |",
            s.name,
            100.0 * failed as f64 / runs as f64,
            100.0 * (ERRORS.alpha + LATENCY_COUNTS.alpha)
        );
    }
}
