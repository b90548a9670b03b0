//! One weighted backend of a route: its endpoints, how to balance them, where to record.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::edits::Edits;
use crate::stats::{BackendMetrics, LiveWindow, Outcome};
use crate::upstream::Endpoint;

use crate::table_spec::Balance;

/// Both sinks of one route×backend, resolved when the table is compiled.
#[derive(Clone)]
pub struct BackendStats {
    pub metrics: BackendMetrics,
    pub live: Arc<LiveWindow>,
}

impl BackendStats {
    pub fn record(&self, outcome: &Outcome) {
        self.metrics.record(outcome);
        self.live.record(outcome);
    }
}

pub struct Backend {
    /// Its name in the route (`stable`, `canary`, a Service): the `backend` label.
    pub name: Arc<str>,
    endpoints: Vec<Arc<Endpoint>>,
    balance: Balance,
    next: AtomicU32,
    /// `fastmod_factor` of the endpoint count: the round-robin turn is taken modulo the count by
    /// two multiplications instead of a division.
    fastmod: u64,
    pub stats: BackendStats,
    /// Applied to this backend's responses (after the route's own).
    pub response_edits: Edits,
    /// Applied to requests sent to this backend (after the route's own).
    pub request_edits: Edits,
}

impl Backend {
    pub(super) fn new(
        name: Arc<str>,
        endpoints: Vec<Arc<Endpoint>>,
        balance: Balance,
        stats: BackendStats,
        (request_edits, response_edits): (Edits, Edits),
    ) -> Self {
        let n = endpoints.len().clamp(1, u32::MAX as usize) as u64;
        Backend {
            name,
            response_edits,
            request_edits,
            endpoints,
            balance,
            next: AtomicU32::new(0),
            fastmod: fastmod_factor(n),
            stats,
        }
    }

    pub fn endpoints(&self) -> &[Arc<Endpoint>] {
        &self.endpoints
    }

    /// Compilation guarantees at least one endpoint.
    pub fn pick(&self) -> &Arc<Endpoint> {
        let n = self.endpoints.len();
        let start = if n > 1 {
            fastmod(self.next.fetch_add(1, Ordering::Relaxed), self.fastmod, n)
        } else {
            0
        };
        match self.balance {
            Balance::RoundRobin => &self.endpoints[start],
            Balance::LeastRequest => {
                // Scan from the rotating start so ties spread instead of piling on the first.
                let mut best = start;
                let mut best_load = usize::MAX;
                for k in 0..n {
                    let i = (start + k) % n;
                    let load = self.endpoints[i].outstanding();
                    if load < best_load {
                        best = i;
                        best_load = load;
                    }
                }
                &self.endpoints[best]
            }
        }
    }
}

/// Lemire's fastmod: with `m = fastmod_factor(n)`, `fastmod(a, m, n) == a % n` for every u32 `a`
/// and `n` in 1..=u32::MAX.
fn fastmod_factor(n: u64) -> u64 {
    (u64::MAX / n).wrapping_add(1)
}

fn fastmod(a: u32, m: u64, n: usize) -> usize {
    let low = m.wrapping_mul(u64::from(a));
    ((u128::from(low) * n as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastmod_is_modulo() {
        for n in (1..=64).chain([100, 1000, 65_537, u32::MAX as usize]) {
            let m = fastmod_factor(n as u64);
            let turns = (0..10_000u32).chain(u32::MAX - 10_000..=u32::MAX);
            for a in turns.chain((0..1000).map(|i| i * 4_294_967)) {
                assert_eq!(fastmod(a, m, n), a as usize % n, "{a} % {n}");
            }
        }
    }
}
