//! The margin test for Successful: is the canary's event rate less than the stable's plus the
//! margin, measured over the same moments?
//!
//! Each batch of requests gives `excess = canary events − canary requests × (stable events /
//! stable requests)`, whose mean is `canary requests × (canary rate − stable rate)` whatever the
//! stable's rate did meanwhile. If the canary were worse by the margin or more, `canary requests
//! × margin − excess` would have a mean of at most zero, so betting a predictable amount on it
//! being positive (a betting martingale over a bounded variable) grows only when the canary is
//! within the margin. It needs no bound on the stable's rate, so low-traffic services are not
//! held back by how little is known about a rare stable error rate.

use super::mixture::log_mean_exp;

/// Batches hold at least this many stable requests, so the stable's rate in a batch is not
/// mostly noise (at 12 stable req/s: about four seconds).
const BATCH_STABLE: u64 = 50;
/// Bets are at most this share of what a batch could lose, so no factor reaches zero.
const MAX_STAKE: f64 = 0.5;
/// Fractions of the estimated Kelly bet the mixture holds.
const SCALES: [f64; 2] = [1.0, 0.5];

#[derive(Clone, Debug)]
pub struct DifferenceTest {
    margin: f64,
    /// The batch being gathered: canary (requests, events), stable (requests, events).
    batch: ((u64, u64), (u64, u64)),
    /// Everything before the batch, for the bets' estimates.
    past: ((u64, u64), (u64, u64)),
    logs: [f64; SCALES.len()],
}

impl DifferenceTest {
    pub fn new(margin: f64) -> Self {
        DifferenceTest {
            margin,
            batch: ((0, 0), (0, 0)),
            past: ((0, 0), (0, 0)),
            logs: [0.0; SCALES.len()],
        }
    }

    pub fn observe(&mut self, canary: (u64, u64), stable: (u64, u64)) {
        let b = &mut self.batch;
        b.0 .0 += canary.0;
        b.0 .1 += canary.1;
        b.1 .0 += stable.0;
        b.1 .1 += stable.1;
        if b.1 .0 < BATCH_STABLE {
            return;
        }
        let ((nc, xc), (ns, xs)) = std::mem::take(&mut self.batch);
        if nc > 0 {
            let stake = self.stake(nc as f64, ns as f64);
            let nc_f = nc as f64;
            let excess = xc as f64 - nc_f * (xs as f64 / ns as f64);
            let gain = nc_f * self.margin - excess;
            for (scale, log) in SCALES.iter().zip(self.logs.iter_mut()) {
                *log += (1.0 + scale * stake * gain).ln();
            }
        }
        self.past.0 .0 += nc;
        self.past.0 .1 += xc;
        self.past.1 .0 += ns;
        self.past.1 .1 += xs;
    }

    /// The Kelly bet for a batch of `nc` canary and `ns` stable requests, from the past alone:
    /// mean over variance of the batch's `margin·nc − excess`, capped so that the worst case
    /// (every canary request an event) loses at most `MAX_STAKE`.
    fn stake(&self, nc: f64, ns: f64) -> f64 {
        let ((pnc, pxc), (pns, pxs)) = self.past;
        let rate = |x: u64, n: u64| (x as f64 + 0.5) / (n as f64 + 1.0);
        let (rc, rs) = (rate(pxc, pnc), rate(pxs, pns));
        let mean = nc * (self.margin - (rc - rs));
        if mean <= 0.0 {
            return 0.0;
        }
        let variance = nc * rc * (1.0 - rc) + nc * nc * rs * (1.0 - rs) / ns;
        let kelly = mean / (variance + mean * mean);
        let worst = nc * (1.0 - self.margin);
        kelly.min(MAX_STAKE / worst)
    }

    pub fn log_evidence(&self) -> f64 {
        log_mean_exp(&self.logs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_canary_like_the_stable_builds_evidence_of_being_within_the_margin() {
        let mut t = DifferenceTest::new(0.01);
        for i in 0..2_000u64 {
            t.observe((20, u64::from(i % 5 == 0)), (80, u64::from(i % 5 == 0) * 4));
        }
        assert!(t.log_evidence() > 200.0f64.ln(), "{}", t.log_evidence());
    }

    #[test]
    fn a_canary_worse_by_the_margin_builds_none() {
        let mut t = DifferenceTest::new(0.01);
        // Canary 3 %, stable 1 %: worse by twice the margin.
        for _ in 0..2_000 {
            t.observe((100, 3), (100, 1));
        }
        assert!(t.log_evidence() <= 0.0, "{}", t.log_evidence());
    }

    #[test]
    fn batches_wait_for_enough_stable_requests() {
        let mut t = DifferenceTest::new(0.01);
        t.observe((5, 0), (10, 0));
        assert_eq!(t.batch, ((5, 0), (10, 0)));
        t.observe((20, 0), (40, 0));
        assert_eq!(t.batch, ((0, 0), (0, 0)));
        assert_eq!(t.past, ((25, 0), (50, 0)));
    }
}
