//! One side of a route (stable or canary): its endpoints, how to balance them, where to record.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::stats::{BackendMetrics, LiveWindow, Outcome, Role};
use crate::upstream::Endpoint;

use super::spec::Balance;

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
    pub role: Role,
    endpoints: Vec<Arc<Endpoint>>,
    balance: Balance,
    next: AtomicUsize,
    pub stats: BackendStats,
}

impl Backend {
    pub(super) fn new(
        role: Role,
        endpoints: Vec<Arc<Endpoint>>,
        balance: Balance,
        stats: BackendStats,
    ) -> Self {
        Backend {
            role,
            endpoints,
            balance,
            next: AtomicUsize::new(0),
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
            self.next.fetch_add(1, Ordering::Relaxed) % n
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
