//! The burst-proof test: of the events (errors, or slow requests) that happened, how many were
//! the canary's, given its share of the requests?
//!
//! If the canary's event rate is `rho` times the stable's, an event in a moment when the canary
//! has share `w` of the requests is the canary's with probability `rho·w / (rho·w + 1 − w)`,
//! whatever the two rates are. A burst in a shared dependency multiplies both rates (or adds
//! the same to both, which moves `rho` towards 1), so it changes how many events there are, not
//! whose they are: bursts cancel by construction. The test bets on each event's owner, against
//! `rho = max_ratio`.

use super::mixture::{clamp_probability, log_mean_exp, Decayed, HALF_LIVES};
use super::Direction;

/// The null hypothesis' boundary is `rho = ratio`; `Worse` tests `rho <= ratio` (evidence
/// that the canary is worse), `NotWorse` tests `rho >= ratio`.
#[derive(Clone, Debug)]
pub struct RatioTest {
    direction: Direction,
    ratio: f64,
    estimators: [Decayed; HALF_LIVES.len()],
    logs: [f64; HALF_LIVES.len()],
}

/// An event owner's probability of being the canary, at rate ratio `rho` and request share `w`.
fn canary_share(rho: f64, w: f64) -> f64 {
    clamp_probability(rho * w / (rho * w + 1.0 - w))
}

impl RatioTest {
    pub fn new(direction: Direction, ratio: f64) -> Self {
        RatioTest {
            direction,
            ratio,
            estimators: [Decayed::default(); HALF_LIVES.len()],
            logs: [0.0; HALF_LIVES.len()],
        }
    }

    /// One observation: the canary's share of recent requests `w`, and (requests, events) of
    /// each side since the last one.
    pub fn observe(&mut self, w: f64, canary: (u64, u64), stable: (u64, u64)) {
        let events = canary.1 + stable.1;
        if events > 0 && w > 0.0 && w < 1.0 {
            let null = canary_share(self.ratio, w);
            let bets = self
                .estimators
                .map(|e| canary_share(self.alternative(&e), w));
            for (bet, log) in bets.into_iter().zip(self.logs.iter_mut()) {
                *log += canary.1 as f64 * (bet / null).ln()
                    + stable.1 as f64 * ((1.0 - bet) / (1.0 - null)).ln();
            }
        }
        // The estimates move only after the bet: each bet is made before its events are seen.
        for (estimator, half_life) in self.estimators.iter_mut().zip(HALF_LIVES) {
            estimator.add(half_life, events as f64, canary, stable);
        }
    }

    /// The rate ratio the recent past points to, clipped to this test's side of the null.
    fn alternative(&self, e: &Decayed) -> f64 {
        let requests = e.canary_requests + e.stable_requests;
        let rho = if requests > 0.0 && e.canary_requests > 0.0 && e.stable_requests > 0.0 {
            let w = e.canary_requests / requests;
            // One pseudo-event split by exposure: no events at all estimates rho = 1.
            let canary = e.canary_events + w;
            let stable = e.stable_events + (1.0 - w);
            (canary / stable) * ((1.0 - w) / w)
        } else {
            1.0
        };
        match self.direction {
            Direction::Worse => rho.clamp(self.ratio, self.ratio * 1e3),
            Direction::NotWorse => rho.clamp(self.ratio * 1e-3, self.ratio),
        }
    }

    /// The log of the e-value: the evidence against this test's null so far.
    pub fn log_evidence(&self) -> f64 {
        log_mean_exp(&self.logs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_shared_by_both_sides_are_no_evidence() {
        // Canary 20 % of requests, 20 % of the errors: a thousand errors in one burst second.
        let mut t = RatioTest::new(Direction::Worse, 1.5);
        t.observe(0.2, (200, 200), (800, 800));
        assert!(t.log_evidence() <= 0.0, "{}", t.log_evidence());
    }

    #[test]
    fn the_canarys_own_errors_are_evidence() {
        let mut t = RatioTest::new(Direction::Worse, 1.5);
        for _ in 0..10 {
            t.observe(0.2, (20, 4), (80, 0));
        }
        assert!(t.log_evidence() > 100.0f64.ln(), "{}", t.log_evidence());
        // The opposite test loses nothing it had not bet.
        let mut n = RatioTest::new(Direction::NotWorse, 1.5);
        for _ in 0..10 {
            n.observe(0.2, (20, 4), (80, 0));
        }
        assert!(n.log_evidence() <= 0.0);
    }

    #[test]
    fn nothing_to_compare_is_no_evidence() {
        let mut t = RatioTest::new(Direction::Worse, 1.5);
        t.observe(1.0, (20, 20), (0, 0));
        t.observe(0.0, (0, 0), (20, 20));
        assert_eq!(t.log_evidence(), 0.0);
    }
}
