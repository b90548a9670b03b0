//! From live windows to the judge: what each backend did since the last look, second by second,
//! so evidence can build for as long as a measurement runs (the windows keep only 60 s).

use weir_proxy::stats::{LatencyDistribution, LatencyThreshold, LiveWindow, SecondCounts};

use super::Count;

/// What counts as an event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Signal {
    /// 5xx, upstream failures and gRPC server faults.
    Errors,
    /// Requests slower than the stable's `quantile` (a fraction, 0.99), measured on the stable
    /// before judging; both backends are then counted against that same bar.
    Latency { quantile: f64 },
}

/// A second stays open this many seconds after it ends, for outcomes recorded late.
const GRACE_SECS: u64 = 1;

/// Reads both windows of a route, remembering what it already took from seconds still open.
#[derive(Clone, Debug)]
pub struct Feed {
    signal: Signal,
    /// Seconds before this are closed; seconds from it on may be partly taken.
    cursor: u64,
    /// For each open second: what was taken from it (canary, stable).
    taken: Vec<(u64, SecondCounts, SecondCounts)>,
    /// Latency: the stable's latencies until there are enough to set the bar.
    calibration: LatencyDistribution,
    threshold: Option<LatencyThreshold>,
}

impl Feed {
    /// Starts with the second after `now_second`: what came before belongs to no measurement.
    pub fn new(signal: Signal, now_second: u64) -> Self {
        Feed {
            signal,
            cursor: now_second + 1,
            taken: Vec::new(),
            calibration: LatencyDistribution::new(),
            threshold: None,
        }
    }

    pub fn signal(&self) -> Signal {
        self.signal
    }

    /// The latency bar, once set.
    pub fn threshold(&self) -> Option<LatencyThreshold> {
        self.threshold
    }

    /// Stable requests the latency bar needs, and how many it has (`None` for errors, or once
    /// the bar is set).
    pub fn calibrating(&self) -> Option<(u64, u64)> {
        match self.signal {
            Signal::Latency { quantile } if self.threshold.is_none() => {
                Some((self.calibration.count(), calibration_size(quantile)))
            }
            _ => None,
        }
    }

    /// What each backend did (canary, stable) since the last call, up to `now_second`.
    pub fn read(
        &mut self,
        canary: &LiveWindow,
        stable: &LiveWindow,
        now_second: u64,
    ) -> (Count, Count) {
        let mut totals = (Count::default(), Count::default());
        if now_second < self.cursor {
            return totals;
        }
        // After a stall longer than the windows, the oldest seconds are gone: skip them.
        self.cursor = self
            .cursor
            .max(now_second.saturating_sub(weir_proxy::stats::WINDOW_SECS - 1));
        self.taken.retain(|(second, _, _)| *second >= self.cursor);
        let bar = self.threshold;
        let judging = !matches!(self.signal, Signal::Latency { .. }) || bar.is_some();
        for second in self.cursor..=now_second {
            let c = canary.second_counts(second, bar);
            let s = stable.second_counts(second, bar);
            let (before_c, before_s) = match self.taken.iter_mut().find(|t| t.0 == second) {
                Some(entry) => {
                    let before = (entry.1, entry.2);
                    (entry.1, entry.2) = (c, s);
                    before
                }
                None => {
                    self.taken.push((second, c, s));
                    (SecondCounts::default(), SecondCounts::default())
                }
            };
            if judging {
                totals.0.add(self.delta(c, before_c));
                totals.1.add(self.delta(s, before_s));
            }
        }
        // Close the seconds past their grace; the latency bar learns from closed ones.
        while self.cursor + GRACE_SECS < now_second {
            let second = self.cursor;
            if let Signal::Latency { quantile } = self.signal {
                if self.threshold.is_none() {
                    stable.merge_second_latency(second, &mut self.calibration);
                    if self.calibration.count() >= calibration_size(quantile) {
                        self.threshold = self.calibration.threshold(quantile);
                        // Open seconds were read without a bar: judge from the next one on.
                        self.cursor = now_second + 1;
                        self.taken.clear();
                        break;
                    }
                }
            }
            self.taken.retain(|(s, _, _)| *s != second);
            self.cursor += 1;
        }
        totals
    }

    fn delta(&self, now: SecondCounts, before: SecondCounts) -> Count {
        let events = |c: SecondCounts| match self.signal {
            Signal::Errors => c.failures,
            Signal::Latency { .. } => c.slower,
        };
        Count {
            requests: now.requests.saturating_sub(before.requests),
            events: events(now).saturating_sub(events(before)),
        }
    }
}

/// Stable requests that set the latency bar: enough that about 10 lie above it.
fn calibration_size(quantile: f64) -> u64 {
    let tail = (1.0 - quantile).max(1e-4);
    ((10.0 / tail).ceil() as u64).max(200)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use weir_proxy::stats::Outcome;

    use super::*;

    fn ok(ms: u64) -> Outcome {
        Outcome::response(200, Duration::from_millis(ms))
    }

    #[test]
    fn reads_each_request_once_across_open_and_closed_seconds() {
        let (canary, stable) = (LiveWindow::new(), LiveWindow::new());
        let mut feed = Feed::new(Signal::Errors, 9);
        canary.record_at(10, &ok(1));
        canary.record_at(10, &Outcome::response(500, Duration::from_millis(1)));
        stable.record_at(10, &ok(1));
        let (c, s) = feed.read(&canary, &stable, 10);
        assert_eq!((c.requests, c.events, s.requests), (2, 1, 1));
        // More in the same second, and a late one for it after it ended.
        canary.record_at(10, &ok(1));
        canary.record_at(11, &ok(1));
        let (c, _) = feed.read(&canary, &stable, 11);
        assert_eq!((c.requests, c.events), (2, 0));
        canary.record_at(10, &Outcome::response(503, Duration::from_millis(1)));
        let (c, _) = feed.read(&canary, &stable, 11);
        assert_eq!((c.requests, c.events), (1, 1));
        // Second 10 closes at 12; nothing is read twice.
        let (c, _) = feed.read(&canary, &stable, 12);
        assert_eq!(c, Count::default());
        let (c, _) = feed.read(&canary, &stable, 20);
        assert_eq!(c, Count::default());
        // What came before the feed started is not its business.
        let mut late = Feed::new(Signal::Errors, 10);
        let (c, _) = late.read(&canary, &stable, 11);
        assert_eq!(c.requests, 1);
    }

    #[test]
    fn latency_waits_for_its_bar_then_counts_slower_requests() {
        let (canary, stable) = (LiveWindow::new(), LiveWindow::new());
        let mut feed = Feed::new(Signal::Latency { quantile: 0.9 }, 0);
        assert_eq!(feed.calibrating(), Some((0, 200)));
        // 250 stable requests of 1..=10 ms in second 1: the bar is 9 ms's bucket.
        for i in 0..250 {
            stable.record_at(1, &ok(1 + i % 10));
        }
        let (c, s) = feed.read(&canary, &stable, 1);
        assert_eq!((c, s), (Count::default(), Count::default()));
        let (_, s) = feed.read(&canary, &stable, 3);
        assert_eq!(s, Count::default());
        assert_eq!(feed.calibrating(), None);
        let bar = feed.threshold().map(|t| t.as_duration());
        assert!(bar.is_some_and(|b| b > Duration::from_millis(9) && b < Duration::from_millis(10)));
        // From second 4 on: 10 ms and 50 ms are slower, 2 ms is not.
        canary.record_at(4, &ok(2));
        canary.record_at(4, &ok(50));
        stable.record_at(4, &ok(10));
        let (c, s) = feed.read(&canary, &stable, 4);
        assert_eq!((c.requests, c.events, s.requests, s.events), (2, 1, 1, 1));
    }
}
