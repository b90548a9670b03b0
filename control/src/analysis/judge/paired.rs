//! The paired judge: the same request answered by both versions (a mirrored copy), so the
//! question is only where the two answers differ.
//!
//! Each pair has an outcome for each side — an *event* (an error, or for latency "slower than
//! the other beyond the tolerance") or not. With `s` and `c` the stable's and the canary's
//! event for one pair, the canary is **the same** as the stable when
//! `P(c) <= max(max_ratio × P(s), P(s) + margin)`, as in the unpaired judge (`super`). Two
//! quantities per pair have a mean of at most 0 exactly under each half of that:
//!
//! - `x = c − max_ratio·s` (in `[−max_ratio, 1]`): `E[x] <= 0` ⟺ `P(c) <= max_ratio·P(s)`;
//! - `y = c − s − margin` (in `[−1 − margin, 1 − margin]`): `E[y] <= 0` ⟺ `P(c) <= P(s) + margin`.
//!
//! A pair where both sides succeeded moves `x` by nothing; both failing (a shared dependency
//! down) counts against the canary only by `1 − max_ratio`, which is not positive: failures
//! the two versions share are no evidence, and the discordant pairs carry the test, as in
//! McNemar's. Each null is tested by betting: the wealth `Π (1 + λ·x)` with every `λ` fixed
//! before the pair it bets on is a nonnegative supermartingale while `E[x] <= 0`, so by
//! Ville's inequality it reaches `1/alpha` with probability at most `alpha` however long it
//! runs and however often it is read. The bets are a fixed ladder of fractions averaged
//! together (an average of test supermartingales is one): a large fraction wins fast on a
//! large regression, a small one still grows on a slight one, and none depends on the data.
//!
//! - **Failed** when both tests pass `1/alpha` (an intersection-union test: a canary within
//!   either half of the tolerance meets one true null, so is failed with probability at most
//!   `alpha`).
//! - **Successful** when the evidence shows it is not worse beyond the tolerance: the bets on
//!   `−x`, or on `−y`, pass `2/alpha` (either, each at `alpha/2`).
//!
//! Pairs need not be independent of each other or of time: the bound holds for any sequence
//! whose conditional mean, given the past, keeps to the null — bursts included.

use serde::Serialize;

use super::{Tolerance, Verdict};

/// The fractions of the largest safe bet that the wealth processes average over.
const LADDER: [f64; 5] = [1.0 / 32.0, 1.0 / 8.0, 1.0 / 4.0, 1.0 / 2.0, 3.0 / 4.0];

/// A Successful verdict needs at least this many pairs.
const MIN_PAIRS: u64 = 100;

/// Pairs by outcome: `(stable event, canary event)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pairs {
    /// Neither side had the event.
    pub neither: u64,
    /// Only the canary (it failed, or was slower, where the stable was not).
    pub canary_only: u64,
    /// Only the stable.
    pub stable_only: u64,
    /// Both.
    pub both: u64,
}

impl Pairs {
    pub fn total(self) -> u64 {
        self.neither + self.canary_only + self.stable_only + self.both
    }

    pub fn add(&mut self, other: Pairs) {
        self.neither += other.neither;
        self.canary_only += other.canary_only;
        self.stable_only += other.stable_only;
        self.both += other.both;
    }

    /// The canary's and the stable's event rates over these pairs.
    pub fn rates(self) -> Option<(f64, f64)> {
        let n = self.total() as f64;
        (n > 0.0).then(|| {
            (
                (self.canary_only + self.both) as f64 / n,
                (self.stable_only + self.both) as f64 / n,
            )
        })
    }

    /// `(count, (stable event, canary event))` for each outcome.
    fn outcomes(self) -> [(u64, (f64, f64)); 4] {
        [
            (self.neither, (0.0, 0.0)),
            (self.canary_only, (0.0, 1.0)),
            (self.stable_only, (1.0, 0.0)),
            (self.both, (1.0, 1.0)),
        ]
    }
}

/// One null's wealth: bets of `sign × f(s, c)` at each rung of the ladder, `f`'s lowest value
/// being `-floor` (so a bet of `1/floor` or more could lose everything).
#[derive(Clone, Debug)]
struct Wealth {
    logs: [f64; LADDER.len()],
    /// The largest safe fraction: 1 / the most a pair can take away.
    full: f64,
}

impl Wealth {
    fn new(floor: f64) -> Self {
        Wealth {
            logs: [0.0; LADDER.len()],
            full: 1.0 / floor,
        }
    }

    /// Every pair of `pairs`, each worth `value(s, c)`, bet on at every rung.
    fn bet(&mut self, pairs: Pairs, value: impl Fn(f64, f64) -> f64) {
        for (count, (s, c)) in pairs.outcomes() {
            if count == 0 {
                continue;
            }
            let v = value(s, c);
            for (log, rung) in self.logs.iter_mut().zip(LADDER) {
                *log += count as f64 * (rung * self.full * v).ln_1p();
            }
        }
    }

    fn log_evidence(&self) -> f64 {
        super::mixture::log_mean_exp(&self.logs)
    }
}

/// One signal's paired judge, from the start of a measurement.
#[derive(Clone, Debug)]
pub struct PairedJudge {
    tolerance: Tolerance,
    pairs: Pairs,
    /// Against `E[x] <= 0` and `E[y] <= 0`: evidence the canary is worse.
    worse_ratio: Wealth,
    worse_level: Wealth,
    /// Against `E[x] >= 0` and `E[y] >= 0`: evidence it is not.
    better_ratio: Wealth,
    better_level: Wealth,
    /// Each Failed test once it has crossed 1/alpha.
    crossed: (bool, bool),
    passed: bool,
    verdict: Verdict,
}

/// How far the evidence has come, each in 0..=1 (1 = that verdict).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PairedProgress {
    pub toward_failed: f64,
    pub toward_successful: f64,
    /// The evidence for each verdict as odds against its null ("200:1").
    pub failed_odds: f64,
    pub successful_odds: f64,
}

impl PairedJudge {
    pub fn new(tolerance: Tolerance) -> Self {
        let r = tolerance.max_ratio.max(1.0);
        let m = tolerance.margin.clamp(0.0, 0.5);
        PairedJudge {
            tolerance,
            pairs: Pairs::default(),
            // x = c - r·s >= -r; y = c - s - m >= -(1 + m).
            worse_ratio: Wealth::new(r),
            worse_level: Wealth::new(1.0 + m),
            // -x = r·s - c >= -1; -y = s - c + m >= -(1 - m).
            better_ratio: Wealth::new(1.0),
            better_level: Wealth::new(1.0 - m),
            crossed: (false, false),
            passed: false,
            verdict: Verdict::Inconclusive,
        }
    }

    pub fn tolerance(&self) -> Tolerance {
        self.tolerance
    }

    /// Takes the pairs completed since the last call; returns the verdict so far.
    pub fn observe(&mut self, pairs: Pairs) -> Verdict {
        if self.verdict == Verdict::Failed || pairs.total() == 0 {
            return self.verdict;
        }
        let r = self.tolerance.max_ratio.max(1.0);
        let m = self.tolerance.margin.clamp(0.0, 0.5);
        self.worse_ratio.bet(pairs, |s, c| c - r * s);
        self.worse_level.bet(pairs, |s, c| c - s - m);
        self.better_ratio.bet(pairs, |s, c| r * s - c);
        self.better_level.bet(pairs, |s, c| s - c + m);
        self.pairs.add(pairs);

        let fail_at = (1.0 / self.tolerance.alpha).ln();
        self.crossed.0 |= self.worse_ratio.log_evidence() >= fail_at;
        self.crossed.1 |= self.worse_level.log_evidence() >= fail_at;
        let pass_at = (2.0 / self.tolerance.alpha).ln();
        self.passed |= (self.better_ratio.log_evidence() >= pass_at
            || self.better_level.log_evidence() >= pass_at)
            && self.pairs.total() >= MIN_PAIRS;
        self.verdict = if self.crossed.0 && self.crossed.1 {
            Verdict::Failed
        } else if self.passed {
            Verdict::Successful
        } else {
            Verdict::Inconclusive
        };
        self.verdict
    }

    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    pub fn pairs(&self) -> Pairs {
        self.pairs
    }

    pub fn progress(&self) -> PairedProgress {
        let worse = (
            self.worse_ratio.log_evidence(),
            self.worse_level.log_evidence(),
        );
        let better = (
            self.better_ratio.log_evidence(),
            self.better_level.log_evidence(),
        );
        let shares = super::toward(
            self.tolerance.alpha,
            worse,
            self.crossed,
            better,
            self.passed,
        );
        PairedProgress {
            toward_failed: shares.toward_failed,
            toward_successful: shares.toward_successful,
            failed_odds: worse.0.min(worse.1).exp(),
            successful_odds: better.0.max(better.1).exp(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: deterministic noise.
    struct StdRng(u64);

    impl StdRng {
        fn seed_from_u64(seed: u64) -> Self {
            StdRng(seed)
        }

        fn unit(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = self.0;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (x ^ (x >> 31)) as f64 / u64::MAX as f64
        }
    }

    const TOLERANCE: Tolerance = Tolerance {
        max_ratio: 1.5,
        margin: 0.001,
        alpha: 0.01,
    };

    /// Pairs for one tenth of a second at `rate` pairs a second: each side fails on its own
    /// with its probability, and both fail together with `shared` (a dependency down).
    fn tick(rng: &mut StdRng, rate: u64, stable: f64, canary: f64, shared: f64) -> Pairs {
        let mut p = Pairs::default();
        for _ in 0..rate / 10 {
            let common = rng.unit() < shared;
            let s = common || rng.unit() < stable;
            let c = common || rng.unit() < canary;
            match (s, c) {
                (false, false) => p.neither += 1,
                (false, true) => p.canary_only += 1,
                (true, false) => p.stable_only += 1,
                (true, true) => p.both += 1,
            }
        }
        p
    }

    /// Seconds until `verdict`, or None within `limit` seconds.
    fn time_to(
        seed: u64,
        stable: f64,
        canary: f64,
        shared: f64,
        verdict: Verdict,
        limit: u64,
    ) -> Option<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut judge = PairedJudge::new(TOLERANCE);
        for t in 1..=limit * 10 {
            let v = judge.observe(tick(&mut rng, 1000, stable, canary, shared));
            if v == verdict {
                return Some(t as f64 / 10.0);
            }
            if v == Verdict::Failed {
                return None;
            }
        }
        None
    }

    #[test]
    fn a_regressed_canary_fails_within_a_second_or_two_of_pairs() {
        let mut times: Vec<f64> = (0..50)
            .map(|seed| time_to(seed, 0.001, 0.02, 0.0, Verdict::Failed, 30).unwrap_or(99.0))
            .collect();
        times.sort_by(f64::total_cmp);
        eprintln!(
            "0.1 % -> 2 %: median {} s, slowest {} s",
            times[25], times[49]
        );
        assert!(times[25] <= 1.5, "median {} s: {times:?}", times[25]);
    }

    #[test]
    fn failures_both_versions_share_are_no_evidence() {
        // A dependency failing 5 % of requests for both: the canary has nothing of its own.
        for seed in 0..20 {
            assert_eq!(
                time_to(seed, 0.0, 0.0, 0.05, Verdict::Failed, 60),
                None,
                "seed {seed}"
            );
        }
        // Every shared failure alone moves the ratio test down and the level test not at all.
        let mut judge = PairedJudge::new(TOLERANCE);
        judge.observe(Pairs {
            both: 1000,
            ..Pairs::default()
        });
        assert!(judge.worse_ratio.log_evidence() < 0.0);
        assert!(judge.worse_level.log_evidence() < 0.0);
    }

    #[test]
    fn a_healthy_canary_is_passed() {
        let t = time_to(7, 0.001, 0.001, 0.0, Verdict::Successful, 120);
        assert!(t.is_some(), "no Successful within 120 s");
    }

    #[test]
    fn the_same_pairs_in_any_batches_are_the_same_evidence() {
        let mut once = PairedJudge::new(TOLERANCE);
        once.observe(Pairs {
            neither: 900,
            canary_only: 9,
            stable_only: 2,
            both: 1,
        });
        let mut split = PairedJudge::new(TOLERANCE);
        for _ in 0..3 {
            split.observe(Pairs {
                neither: 300,
                canary_only: 3,
                ..Pairs::default()
            });
        }
        split.observe(Pairs {
            stable_only: 2,
            both: 1,
            ..Pairs::default()
        });
        // Bets fixed in advance: the wealth is a product, whatever the batches.
        for (a, b) in [
            (&once.worse_ratio, &split.worse_ratio),
            (&once.worse_level, &split.worse_level),
            (&once.better_ratio, &split.better_ratio),
            (&once.better_level, &split.better_level),
        ] {
            assert!((a.log_evidence() - b.log_evidence()).abs() < 1e-9);
        }
        assert_eq!(once.pairs(), split.pairs());
        assert_eq!(once.pairs().rates(), Some((10.0 / 912.0, 3.0 / 912.0)));
    }

    #[test]
    fn discordant_pairs_one_way_fail_the_canary() {
        let mut judge = PairedJudge::new(TOLERANCE);
        let v = judge.observe(Pairs {
            neither: 900,
            canary_only: 30,
            stable_only: 1,
            both: 0,
        });
        assert_eq!(v, Verdict::Failed);
        assert_eq!(judge.progress().toward_failed, 1.0);
        assert!(judge.progress().failed_odds >= 100.0);
    }
}
