//! Plug-in bets mixed over memories: the shape both sequential tests share.
//!
//! Each test is a product of per-observation likelihood ratios whose alternative is estimated
//! from the data *before* the observation (a predictable plug-in), so the product is a
//! nonnegative supermartingale under the null and Ville's inequality bounds the chance it ever
//! reaches 1/alpha. The estimate is clipped to the alternative side of the null: while the data
//! look like the null, the bet is nothing and the evidence does not decay — so a regression
//! after a long healthy stretch is caught as fast as one at the start. Several memories are
//! averaged (an average of test supermartingales is one): a short memory follows a sudden
//! regression within a few events, a long one finds a small, steady one.

/// Half-lives of the estimators, in events (errors or slow requests) expected or seen.
pub const HALF_LIVES: [f64; 3] = [2.0, 8.0, 32.0];

/// Exponentially decayed sums for one estimator.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Decayed {
    pub canary_events: f64,
    pub canary_requests: f64,
    pub stable_events: f64,
    pub stable_requests: f64,
}

impl Decayed {
    /// Decays by `weight` half-lives' worth (`0.5^(weight / half_life)`), then adds.
    pub fn add(&mut self, half_life: f64, weight: f64, c: (u64, u64), s: (u64, u64)) {
        let keep = 0.5f64.powf(weight / half_life);
        self.canary_requests = self.canary_requests * keep + c.0 as f64;
        self.canary_events = self.canary_events * keep + c.1 as f64;
        self.stable_requests = self.stable_requests * keep + s.0 as f64;
        self.stable_events = self.stable_events * keep + s.1 as f64;
    }
}

/// log(mean(exp(x))) without overflow: the log of an equal-weight mixture's value.
pub fn log_mean_exp(logs: &[f64]) -> f64 {
    let max = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    let sum: f64 = logs.iter().map(|l| (l - max).exp()).sum();
    max + (sum / logs.len() as f64).ln()
}

/// Keeps probabilities off 0 and 1, where logarithms of likelihoods blow up.
pub fn clamp_probability(p: f64) -> f64 {
    p.clamp(1e-12, 1.0 - 1e-12)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_mean_exp_is_the_log_of_the_mean() {
        let logs = [0.0, 2.0f64.ln(), 3.0f64.ln()];
        assert!((log_mean_exp(&logs) - 2.0f64.ln()).abs() < 1e-12);
        // No overflow far out.
        let big = log_mean_exp(&[1000.0, 1000.0]);
        assert!((big - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn decay_halves_after_one_half_life() {
        let mut d = Decayed::default();
        d.add(4.0, 0.0, (100, 8), (400, 4));
        d.add(4.0, 4.0, (0, 0), (0, 0));
        assert_eq!(d.canary_events, 4.0);
        assert_eq!(d.stable_requests, 200.0);
    }
}
