//! How far the comparative judge can be trusted: false aborts over many healthy canaries, and
//! time to abort for real regressions — simulated, seeded, in process.
//!
//! Each run is one rollout as the shipped `weir-compare` template judges it: a `compare-errors`
//! and a `compare-latency` comparison (alpha 0.005 each, max ratio 1.5, margin 0.1 %), looking
//! every 100 ms of simulated time. Requests are generated per backend at a fixed rate (weir's
//! split is an exact rotation, and a load generator sends at a steady rate), each with its own
//! error draw and latency draw, and recorded through weir's real live windows
//! (`LiveWindow::record_at`); the real `Comparison` reads them second by second, as the
//! provider does. Only the clock is simulated, so ten minutes take milliseconds.
//!
//! Run: `cargo bench --bench verdicts` (RUNS=1000 by default; THREADS=2; ALPHA=0.005 per metric,
//! as shipped).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use weir_control::analysis::judge::{Comparison, Signal, Tolerance, Verdict};
use weir_proxy::stats::{LiveWindow, Outcome};

/// Looks per simulated second (the provider's 100 ms).
const TICKS: u64 = 10;
/// A healthy run, and the longest a regression run watches after the regression.
const HORIZON_S: u64 = 600;
/// Regressions start after a healthy minute, so the evidence has a past to overcome.
const ONSET_S: u64 = 60;

/// How one backend answers at some moment.
#[derive(Clone, Copy, Debug)]
struct Behaviour {
    /// Share of requests answered 5xx.
    errors: f64,
    /// Share of requests that take `tail` more.
    tail_share: f64,
    tail: Duration,
}

const fn healthy(errors: f64) -> Behaviour {
    Behaviour {
        errors,
        tail_share: 0.0,
        tail: Duration::ZERO,
    }
}

type Schedule = Box<dyn Fn(u64) -> Behaviour + Sync>;

struct Scenario {
    name: String,
    canary_rps: f64,
    stable_rps: f64,
    /// By simulated second.
    canary: Schedule,
    stable: Schedule,
}

/// splitmix64: fast, seedable, good enough for simulation.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A backend's latency: 1 ms plus an exponential part of mean 0.8 ms (p99 about 4.7 ms), plus
/// the behaviour's tail.
struct LatencyModel {
    /// Exponential quantiles in µs, one per 1/4096 of probability.
    exponential: Vec<u64>,
}

impl LatencyModel {
    fn new() -> Self {
        let exponential = (0..4096)
            .map(|i| {
                let u = (i as f64 + 0.5) / 4096.0;
                (-(1.0 - u).ln() * 800.0) as u64
            })
            .collect();
        LatencyModel { exponential }
    }

    fn draw(&self, rng: &mut Rng, b: &Behaviour) -> (Duration, bool) {
        let r = rng.next();
        let mut micros = 1_000 + self.exponential[(r & 4095) as usize];
        let u = ((r >> 12) & 0xF_FFFF) as f64 / (1u64 << 20) as f64;
        if u < b.tail_share {
            micros += b.tail.as_micros() as u64;
        }
        let failed = ((r >> 32) as f64 / (1u64 << 32) as f64) < b.errors;
        (Duration::from_micros(micros), failed)
    }
}

/// What one simulated rollout came to.
#[derive(Clone, Copy, Debug, Default)]
struct RunResult {
    /// Seconds (simulated) at which each comparison first said Failed / Successful.
    errors_failed: Option<f64>,
    latency_failed: Option<f64>,
    errors_passed: Option<f64>,
    latency_passed: Option<f64>,
}

impl RunResult {
    fn failed(&self) -> Option<f64> {
        match (self.errors_failed, self.latency_failed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn passed(&self) -> Option<f64> {
        Some(self.errors_passed?.max(self.latency_passed?))
    }
}

/// The shipped template's tolerance; `ALPHA=` tries another alpha per metric.
fn tolerance() -> Tolerance {
    let alpha = std::env::var("ALPHA")
        .ok()
        .and_then(|a| a.parse().ok())
        .unwrap_or(0.005);
    Tolerance {
        max_ratio: 1.5,
        margin: 0.001,
        alpha,
    }
}

/// One rollout: until a Failed, or the horizon; `until_passed` also stops once both passed.
fn simulate(
    s: &Scenario,
    seed: u64,
    horizon_s: u64,
    until_passed: bool,
    model: &LatencyModel,
) -> RunResult {
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5DEE_CE66);
    let canary = LiveWindow::new();
    let stable = LiveWindow::new();
    let mut errors = Comparison::new(Signal::Errors, tolerance(), 0);
    let mut latency = Comparison::new(Signal::Latency { quantile: 0.99 }, tolerance(), 0);
    let mut result = RunResult::default();
    // Requests owed to each backend: a fixed rate, whole requests per look.
    let mut owed = (rng.unit(), rng.unit());
    for tick in 0..horizon_s * TICKS {
        let second = 1 + tick / TICKS;
        let (cb, sb) = ((s.canary)(second - 1), (s.stable)(second - 1));
        owed.0 += s.canary_rps / TICKS as f64;
        owed.1 += s.stable_rps / TICKS as f64;
        for (window, behaviour, owed) in [(&canary, cb, &mut owed.0), (&stable, sb, &mut owed.1)] {
            while *owed >= 1.0 {
                *owed -= 1.0;
                let (took, failed) = model.draw(&mut rng, &behaviour);
                let status = if failed { 500 } else { 200 };
                window.record_at(second, &Outcome::response(status, took));
            }
        }
        let now = (tick + 1) as f64 / TICKS as f64;
        let e = errors.observe(&canary, &stable, second);
        let l = latency.observe(&canary, &stable, second);
        for (verdict, failed, passed) in [
            (e, &mut result.errors_failed, &mut result.errors_passed),
            (l, &mut result.latency_failed, &mut result.latency_passed),
        ] {
            match verdict {
                Verdict::Failed => *failed = failed.or(Some(now)),
                Verdict::Successful => *passed = passed.or(Some(now)),
                Verdict::Inconclusive => {}
            }
        }
        if result.failed().is_some() || (until_passed && result.passed().is_some()) {
            break;
        }
    }
    result
}

/// Runs `runs` seeded rollouts of a scenario over the threads.
fn many(s: &Scenario, runs: u64, horizon_s: u64, until_passed: bool) -> Vec<RunResult> {
    let threads: u64 = std::env::var("THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    let next = AtomicU64::new(0);
    let results = Mutex::new(Vec::with_capacity(runs as usize));
    let model = LatencyModel::new();
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= runs {
                    break;
                }
                let r = simulate(s, seed, horizon_s, until_passed, &model);
                results.lock().unwrap_or_else(|p| p.into_inner()).push(r);
            });
        }
    });
    results.into_inner().unwrap_or_else(|p| p.into_inner())
}

fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// The 95 % upper confidence bound on a rate from `k` of `n` (Wilson score).
fn upper_95(k: usize, n: usize) -> f64 {
    let (k, n, z) = (k as f64, n as f64, 1.96f64);
    let p = k / n;
    let centre = p + z * z / (2.0 * n);
    let spread = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (centre + spread) / (1.0 + z * z / n)
}

fn seconds(x: Option<f64>) -> String {
    x.map_or("–".to_string(), |s| format!("{s:.1} s"))
}

fn traffic(canary_rps: f64, stable_rps: f64) -> (f64, f64) {
    (canary_rps, stable_rps)
}

fn steady(b: Behaviour) -> Schedule {
    Box::new(move |_| b)
}

/// From the onset on, `after`; before it, `before`.
fn regress(before: Behaviour, after: Behaviour) -> Schedule {
    Box::new(move |s| if s >= ONSET_S { after } else { before })
}

fn healthy_scenarios() -> Vec<Scenario> {
    let mut out = Vec::new();
    let scenario = |name: &str, (c, s): (f64, f64), canary: Schedule, stable: Schedule| Scenario {
        name: name.to_string(),
        canary_rps: c,
        stable_rps: s,
        canary,
        stable,
    };
    for errors in [0.001, 0.01, 0.05] {
        out.push(scenario(
            &format!("both {} % 5xx, canary 200 req/s", errors * 100.0),
            traffic(200.0, 800.0),
            steady(healthy(errors)),
            steady(healthy(errors)),
        ));
    }
    let slow_tail = Behaviour {
        errors: 0.001,
        tail_share: 0.02,
        tail: Duration::from_millis(600),
    };
    out.push(scenario(
        "both 0.1 % 5xx, 2 % of requests +600 ms (slow-tail baseline)",
        traffic(200.0, 800.0),
        steady(slow_tail),
        steady(slow_tail),
    ));
    // A shared dependency: 30 % of everyone's requests fail for 3 s every minute.
    let burst = |s: u64| {
        healthy(if s % 60 >= 30 && s % 60 < 33 {
            0.301
        } else {
            0.001
        })
    };
    out.push(scenario(
        "shared error bursts: 30 % 5xx on both for 3 s every minute",
        traffic(200.0, 800.0),
        Box::new(burst),
        Box::new(burst),
    ));
    // A shared slowdown: 20 % of everyone's requests take 300 ms more for 5 s every minute.
    let slowdown = |s: u64| Behaviour {
        errors: 0.001,
        tail_share: if s % 60 >= 20 && s % 60 < 25 {
            0.2
        } else {
            0.0
        },
        tail: Duration::from_millis(300),
    };
    out.push(scenario(
        "shared slowdowns: 20 % of requests +300 ms on both for 5 s every minute",
        traffic(200.0, 800.0),
        Box::new(slowdown),
        Box::new(slowdown),
    ));
    for rps in [1.0, 3.0, 10.0] {
        out.push(scenario(
            &format!("both 0.1 % 5xx, canary {rps} req/s (stable 4×)"),
            traffic(rps, 4.0 * rps),
            steady(healthy(0.001)),
            steady(healthy(0.001)),
        ));
    }
    out
}

fn regression_scenarios() -> Vec<Scenario> {
    let at =
        |name: &str, (c, s): (f64, f64), before: Behaviour, after: Behaviour, stable: Behaviour| {
            Scenario {
                name: name.to_string(),
                canary_rps: c,
                stable_rps: s,
                canary: regress(before, after),
                stable: steady(stable),
            }
        };
    let base = healthy(0.001);
    vec![
        at(
            "0.1 → 2 % 5xx, canary 200 req/s",
            traffic(200.0, 800.0),
            base,
            healthy(0.02),
            base,
        ),
        at(
            "0.1 → 0.6 % 5xx, canary 200 req/s",
            traffic(200.0, 800.0),
            base,
            healthy(0.006),
            base,
        ),
        at(
            "1 → 3 % 5xx, canary 200 req/s",
            traffic(200.0, 800.0),
            healthy(0.01),
            healthy(0.03),
            healthy(0.01),
        ),
        at(
            "0.1 → 5 % 5xx, canary 200 req/s (the end-to-end bench's case)",
            traffic(200.0, 800.0),
            base,
            healthy(0.05),
            base,
        ),
        at(
            "+150 ms on 3 % of requests (p99 5 → 150 ms), canary 200 req/s",
            traffic(200.0, 800.0),
            base,
            Behaviour {
                errors: 0.001,
                tail_share: 0.03,
                tail: Duration::from_millis(150),
            },
            base,
        ),
        at(
            "total outage (100 % 5xx), canary 200 req/s",
            traffic(200.0, 800.0),
            base,
            healthy(1.0),
            base,
        ),
        at(
            "0.1 → 5 % 5xx, canary 3 req/s (stable 12)",
            traffic(3.0, 12.0),
            base,
            healthy(0.05),
            base,
        ),
    ]
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this with no args: one quick
    // pass of each scenario so the harness itself stays working.
    let benching = std::env::args().any(|a| a == "--bench");
    let runs: u64 = if benching {
        std::env::var("RUNS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(1000)
    } else {
        2
    };
    let horizon = if benching { HORIZON_S } else { 90 };

    println!(
        "### Healthy canaries: false aborts ({runs} runs of {horizon} simulated seconds each)\n"
    );
    println!("| scenario | runs | aborted (errors / latency) | false-abort rate | 95 % upper bound | both Successful by | median time to both Successful |");
    println!("|---|---|---|---|---|---|---|");
    for s in healthy_scenarios() {
        let results = many(&s, runs, horizon, false);
        let n = results.len();
        let aborted = results.iter().filter(|r| r.failed().is_some()).count();
        let by_errors = results.iter().filter(|r| r.errors_failed.is_some()).count();
        let by_latency = results
            .iter()
            .filter(|r| r.latency_failed.is_some())
            .count();
        let mut passed: Vec<f64> = results.iter().filter_map(|r| r.passed()).collect();
        passed.sort_by(f64::total_cmp);
        println!(
            "| {} | {n} | {aborted} ({by_errors} / {by_latency}) | {:.2} % | {:.2} % | {:.1} % of runs | {} |",
            s.name,
            100.0 * aborted as f64 / n as f64,
            100.0 * upper_95(aborted, n),
            100.0 * passed.len() as f64 / n as f64,
            seconds(quantile(&passed, 0.5)),
        );
    }

    println!("\n### Regressions: time from the regression to Failed (canary weight 0), onset after {ONSET_S} healthy seconds ({runs} runs each)\n");
    println!("| regression | runs | median | p90 | max | not caught in {HORIZON_S} s | by errors / latency first |");
    println!("|---|---|---|---|---|---|---|");
    for s in regression_scenarios() {
        let results = many(&s, runs, ONSET_S + horizon, false);
        let n = results.len();
        let early = results
            .iter()
            .filter(|r| r.failed().is_some_and(|t| t <= ONSET_S as f64))
            .count();
        let mut times: Vec<f64> = results
            .iter()
            .filter_map(|r| r.failed())
            .filter(|t| *t > ONSET_S as f64)
            .map(|t| t - ONSET_S as f64)
            .collect();
        times.sort_by(f64::total_cmp);
        let missed = n - times.len() - early;
        let by_errors = results
            .iter()
            .filter(|r| r.errors_failed.is_some() && r.errors_failed == r.failed())
            .count();
        let by_latency = results
            .iter()
            .filter(|r| r.latency_failed.is_some() && r.latency_failed == r.failed())
            .count();
        let note = if early > 0 {
            format!(" ({early} aborted before the onset)")
        } else {
            String::new()
        };
        println!(
            "| {}{note} | {n} | {} | {} | {} | {missed} | {by_errors} / {by_latency} |",
            s.name,
            seconds(quantile(&times, 0.5)),
            seconds(quantile(&times, 0.9)),
            seconds(times.last().copied()),
        );
    }

    // Low traffic takes long to call healthy: measured over hours, fewer runs.
    let long_runs = if benching { (runs / 10).max(20) } else { 1 };
    let long_horizon = if benching { 6 * 3600 } else { 60 };
    println!("\n### Time for a healthy canary to reach Successful on both metrics ({long_runs} runs, up to {} simulated hours)\n", long_horizon / 3600);
    println!("| scenario | runs | reached | median | p90 |");
    println!("|---|---|---|---|---|");
    for (c, rate) in [(3.0, 0.001), (10.0, 0.001), (200.0, 0.001), (200.0, 0.01)] {
        let s = Scenario {
            name: format!("both {} % 5xx, canary {c} req/s (stable 4×)", rate * 100.0),
            canary_rps: c,
            stable_rps: 4.0 * c,
            canary: steady(healthy(rate)),
            stable: steady(healthy(rate)),
        };
        let results = many(&s, long_runs, long_horizon, true);
        let mut passed: Vec<f64> = results.iter().filter_map(|r| r.passed()).collect();
        passed.sort_by(f64::total_cmp);
        let show = |x: Option<f64>| x.map_or("–".to_string(), |s| format!("{:.1} min", s / 60.0));
        println!(
            "| {} | {} | {} | {} | {} |",
            s.name,
            results.len(),
            passed.len(),
            show(quantile(&passed, 0.5)),
            show(quantile(&passed, 0.9)),
        );
    }
}
