//! The level test: is the canary's event rate above (or below) a bound taken from the stable —
//! the stable's rate plus the tolerated margin?
//!
//! It uses the stable's whole history, so it is quick where the ratio test has few stable
//! events to go on (a stable with almost no errors), and it is what gives the margin its
//! meaning. A burst shared by both sides would look like a canary problem to it alone; the
//! judge only fails a canary when the burst-proof ratio test agrees (see `super`).

use super::mixture::{clamp_probability, log_mean_exp, Decayed, HALF_LIVES};
use super::Direction;

#[derive(Clone, Debug)]
pub struct RateTest {
    direction: Direction,
    estimators: [Decayed; HALF_LIVES.len()],
    logs: [f64; HALF_LIVES.len()],
}

impl RateTest {
    pub fn new(direction: Direction) -> Self {
        RateTest {
            direction,
            estimators: [Decayed::default(); HALF_LIVES.len()],
            logs: [0.0; HALF_LIVES.len()],
        }
    }

    /// One observation of the canary: `requests` with `events` among them, against the null
    /// rate `bound` (`Worse` tests rate <= bound, `NotWorse` rate >= bound).
    pub fn observe(&mut self, bound: f64, requests: u64, events: u64) {
        let bound = clamp_probability(bound);
        if requests > 0 {
            let misses = requests.saturating_sub(events) as f64;
            let bets = self.estimators.map(|e| self.alternative(&e, bound));
            for (bet, log) in bets.into_iter().zip(self.logs.iter_mut()) {
                *log += events as f64 * (bet / bound).ln()
                    + misses * ((1.0 - bet) / (1.0 - bound)).ln();
            }
        }
        // Memory counts events expected at the bound plus events seen, so both a burst of
        // events and a long quiet stretch move the estimate on.
        let weight = requests as f64 * bound + events as f64;
        for (estimator, half_life) in self.estimators.iter_mut().zip(HALF_LIVES) {
            estimator.add(half_life, weight, (requests, events), (0, 0));
        }
    }

    fn alternative(&self, e: &Decayed, bound: f64) -> f64 {
        // One pseudo-event at the bound: no data estimates the bound itself.
        let rate = (e.canary_events + 1.0) / (e.canary_requests + 1.0 / bound);
        let rate = clamp_probability(rate);
        match self.direction {
            Direction::Worse => rate.max(bound),
            Direction::NotWorse => rate.clamp(bound * 1e-3, bound),
        }
    }

    pub fn log_evidence(&self) -> f64 {
        log_mean_exp(&self.logs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_overwhelming_within_one_observation() {
        let mut t = RateTest::new(Direction::Worse);
        t.observe(0.002, 200, 0);
        t.observe(0.002, 20, 20);
        t.observe(0.002, 20, 20);
        assert!(t.log_evidence() > 100.0f64.ln(), "{}", t.log_evidence());
    }

    #[test]
    fn at_the_bound_there_is_no_drift_up() {
        let mut t = RateTest::new(Direction::Worse);
        // 0.1 % errors against a 0.2 % bound for a long time: the evidence never grows.
        for i in 0..10_000u64 {
            t.observe(0.002, 100, u64::from(i % 10 == 0));
        }
        assert!(t.log_evidence() < 1.0, "{}", t.log_evidence());
        let mut better = RateTest::new(Direction::NotWorse);
        for i in 0..10_000u64 {
            better.observe(0.002, 100, u64::from(i % 10 == 0));
        }
        assert!(
            better.log_evidence() > 200.0f64.ln(),
            "{}",
            better.log_evidence()
        );
    }
}
