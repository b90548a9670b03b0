//! The comparative judge: is the canary worse than the stable beside it, beyond a tolerance?
//! Pure decision code, fed counts by `feed` (live windows) or by a simulation.
//!
//! ## What it decides
//! An *event* is an error (5xx or upstream failure) or, for latency, a request slower than a bar
//! taken from the stable. The canary is **the same** as the stable when its event rate is at
//! most `max(max_ratio × stable, stable + margin)`; it is **worse** beyond that.
//!
//! - **Failed** once the evidence says worse. Two sequential tests must both say so: the ratio
//!   test (which backend each event came from, given each backend's share of the requests; it
//!   is blind to bursts shared by both) rejects "rate ratio <= max_ratio", and the level test
//!   (the canary's rate against the stable's rate plus the margin) rejects "canary <= stable +
//!   margin". A canary that is the same satisfies at least one of the two nulls, and that
//!   test stays below its bar with probability 1 − alpha however long it runs and however often
//!   it is looked at, so the canary is failed with probability at most alpha (an
//!   intersection-union test). For a canary within `max_ratio` — every healthy canary, in any
//!   shared burst — that rests on the ratio test, which assumes only that a moment's events are
//!   independent given the two backends' rates then and their recent shares of the requests.
//!   For one beyond `max_ratio` but within the margin (a stable with almost no errors), it rests
//!   on the level test, whose bound on the stable's rate is a 99 % bound from the stable's
//!   history: that part assumes the stable's rate holds steady.
//! - **Successful** once the evidence says not worse: either test, at alpha/2, rejects "the
//!   canary is worse beyond the tolerance" in its own terms.
//! - **Inconclusive** until then. No stable traffic decides nothing.
//!
//! Each test is a mixture of predictable plug-in likelihood ratios (`mixture`), so checking
//! after every observation is allowed: Ville's inequality, not a fixed sample size, bounds the
//! error.

mod comparison;
mod feed;
mod mixture;
mod paired;
mod rate;
mod ratio;
mod shadow;

use serde::{Deserialize, Serialize};

pub use comparison::{Comparison, Evidence, Figures, Recent, RECENT_SECONDS};
pub use feed::Signal;
pub use paired::{PairedJudge, PairedProgress, Pairs};
pub use shadow::{AnswerEvidence, DifferenceExample, PairEvidence, PairRule, ShadowRun};

use rate::RateTest;
use ratio::RatioTest;

/// Which null a test bets against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Evidence that the canary is worse (the null: it is within the tolerance).
    Worse,
    /// Evidence that it is not (the null: it is worse beyond the tolerance).
    NotWorse,
}

/// How much worse than stable still counts as the same, and the error rate promised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative: the canary may have up to this many times the stable's events (>= 1).
    pub max_ratio: f64,
    /// Absolute, as a fraction of requests: or up to this much more (0.001 = 0.1 %).
    pub margin: f64,
    /// The chance of failing a canary that is the same (and of passing one that is worse).
    pub alpha: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            max_ratio: 1.5,
            margin: 0.001,
            alpha: 0.01,
        }
    }
}

/// The judge's outcome so far. Failed is final; Successful stays unless the canary later turns
/// out worse (the tests keep watching, with no new chance of a false Failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    Inconclusive,
    Failed,
    Successful,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Inconclusive => "Inconclusive",
            Verdict::Failed => "Failed",
            Verdict::Successful => "Successful",
        }
    }
}

/// Requests and events of one backend over some stretch of time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    pub requests: u64,
    pub events: u64,
}

impl Count {
    pub fn rate(self) -> Option<f64> {
        (self.requests > 0).then(|| self.events as f64 / self.requests as f64)
    }

    fn add(&mut self, other: Count) {
        self.requests += other.requests;
        self.events += other.events;
    }

    fn pair(self) -> (u64, u64) {
        (self.requests, self.events.min(self.requests))
    }
}

/// A Successful verdict compares against at least this many stable requests.
const MIN_STABLE_REQUESTS: u64 = 100;
/// The stable's rate bounds are at this many standard errors (99 % one-sided).
const BOUND_Z: f64 = 2.58;
/// The canary's share of requests follows the last ~this many requests.
const EXPOSURE_HALF_LIFE: f64 = 100.0;

/// One signal's judge (errors, or slow requests), from the start of a measurement.
#[derive(Clone, Debug)]
pub struct Judge {
    tolerance: Tolerance,
    canary: Count,
    stable: Count,
    /// Decayed request counts (canary, stable): the canary's recent share of requests.
    exposure: (f64, f64),
    worse_ratio: RatioTest,
    worse_level: RateTest,
    better_ratio: RatioTest,
    better_level: RateTest,
    /// Each Failed test once it has crossed 1/alpha (it need not stay above).
    crossed: (bool, bool),
    /// A Successful test has crossed 2/alpha.
    passed: bool,
    verdict: Verdict,
}

/// How far the evidence has come, for people: each in 0..=1, 1 = that verdict.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub toward_failed: f64,
    pub toward_successful: f64,
}

impl Judge {
    pub fn new(tolerance: Tolerance) -> Self {
        Judge {
            tolerance,
            canary: Count::default(),
            stable: Count::default(),
            exposure: (0.0, 0.0),
            worse_ratio: RatioTest::new(Direction::Worse, tolerance.max_ratio),
            worse_level: RateTest::new(Direction::Worse),
            better_ratio: RatioTest::new(Direction::NotWorse, tolerance.max_ratio),
            better_level: RateTest::new(Direction::NotWorse),
            crossed: (false, false),
            passed: false,
            verdict: Verdict::Inconclusive,
        }
    }

    pub fn tolerance(&self) -> Tolerance {
        self.tolerance
    }

    /// Takes what each backend did since the last call; returns the verdict so far.
    pub fn observe(&mut self, canary: Count, stable: Count) -> Verdict {
        if self.verdict == Verdict::Failed {
            return self.verdict;
        }
        let c = canary.pair();
        let s = stable.pair();
        // The stable's bounds come from before this observation, so each bet is predictable.
        let (low, high) = self.stable_bounds();
        let margin = self.tolerance.margin;
        let keep = 0.5f64.powf((c.0 + s.0) as f64 / EXPOSURE_HALF_LIFE);
        self.exposure = (
            self.exposure.0 * keep + c.0 as f64,
            self.exposure.1 * keep + s.0 as f64,
        );
        let seen = self.exposure.0 + self.exposure.1;
        let w = if seen > 0.0 {
            self.exposure.0 / seen
        } else {
            0.0
        };
        self.worse_ratio.observe(w, c, s);
        self.better_ratio.observe(w, c, s);
        if let Some(high) = high {
            self.worse_level.observe((high + margin).min(1.0), c.0, c.1);
        }
        if let Some(low) = low {
            self.better_level.observe(low + margin, c.0, c.1);
        }
        self.canary.add(canary);
        self.stable.add(stable);

        let fail_at = (1.0 / self.tolerance.alpha).ln();
        self.crossed.0 |= self.worse_ratio.log_evidence() >= fail_at;
        self.crossed.1 |= self.worse_level.log_evidence() >= fail_at;
        let pass_at = (2.0 / self.tolerance.alpha).ln();
        self.passed |= (self.better_ratio.log_evidence() >= pass_at
            || self.better_level.log_evidence() >= pass_at)
            && self.stable.requests >= MIN_STABLE_REQUESTS;
        self.verdict = if self.crossed.0 && self.crossed.1 {
            Verdict::Failed
        } else if self.passed {
            Verdict::Successful
        } else {
            Verdict::Inconclusive
        };
        self.verdict
    }

    /// Lower and upper bounds on the stable's event rate from its history (Wilson score,
    /// 99 % each side); `None` without stable requests.
    fn stable_bounds(&self) -> (Option<f64>, Option<f64>) {
        let n = self.stable.requests as f64;
        if n == 0.0 {
            return (None, None);
        }
        let p = self.stable.events as f64 / n;
        let z2 = BOUND_Z * BOUND_Z;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let spread = BOUND_Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
        (
            Some((centre - spread).max(0.0)),
            Some((centre + spread).min(1.0)),
        )
    }

    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    pub fn canary(&self) -> Count {
        self.canary
    }

    pub fn stable(&self) -> Count {
        self.stable
    }

    pub fn progress(&self) -> Progress {
        toward(
            self.tolerance.alpha,
            (
                self.worse_ratio.log_evidence(),
                self.worse_level.log_evidence(),
            ),
            self.crossed,
            (
                self.better_ratio.log_evidence(),
                self.better_level.log_evidence(),
            ),
            self.passed,
        )
    }
}

/// How far the evidence has come, for either judge: Failed needs both tests against "worse"
/// (each `crossed` once past 1/alpha, which it need not stay above), so the slower one says how
/// far; Successful needs either test against "not worse" past 2/alpha (`passed` once it did).
fn toward(
    alpha: f64,
    worse: (f64, f64),
    crossed: (bool, bool),
    better: (f64, f64),
    passed: bool,
) -> Progress {
    let fail_at = (1.0 / alpha).ln();
    let pass_at = (2.0 / alpha).ln();
    let share = |log: f64, at: f64| (log / at).clamp(0.0, 1.0);
    let part = |crossed: bool, log: f64| if crossed { 1.0 } else { share(log, fail_at) };
    Progress {
        toward_failed: part(crossed.0, worse.0).min(part(crossed.1, worse.1)),
        toward_successful: if passed {
            1.0
        } else {
            share(better.0.max(better.1), pass_at)
        },
    }
}

#[cfg(test)]
mod tests;
