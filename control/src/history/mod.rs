//! What the rollout page charts: per route, the canary weight and each side's request rate,
//! 5xx rate and p99 over time, and the rollout's events — kept in weir, bounded in memory.
//!
//! Three resolutions, each a fixed-size ring: every second for the last minute, every 10 s for
//! the last 15 minutes, every minute for the last 2 hours. A coarse point is not an average of
//! fine ones: it is the live window read over its whole span at its end (the exact p99 of those
//! 10 s), so nothing is lost by coarsening but time resolution. The pure part is here; the
//! sampler that reads the data plane every second is `sampler.rs`.

mod sampler;

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::analysis::RunStatus;

pub use sampler::{spawn, Sampler};

/// (seconds per point, points kept): 1 s × 60, 10 s × 90 (15 min), 60 s × 120 (2 h).
pub const RESOLUTIONS: [(u64, usize); 3] = [(1, 60), (10, 90), (60, 120)];

/// Rollout events kept (phase changes, aborts, promotions).
pub const MAX_EVENTS: usize = 200;

/// Analysis runs kept, finished ones included (the rollout's status shows only the running).
pub const MAX_RUNS: usize = 20;

/// One side of a route over one point's span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Side {
    pub requests: u64,
    /// Failed requests: 5xx, upstream errors, gRPC server faults.
    pub failures: u64,
    /// Milliseconds; None without requests.
    pub p99_ms: Option<f64>,
}

/// One point of a route's history: the span `[t - span, t)` in unix seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point {
    pub t: u64,
    pub span: u64,
    /// Canary weight in force at `t`, in percent.
    pub weight: f64,
    pub stable: Side,
    pub canary: Side,
}

/// One route's rings, finest first.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RouteHistory {
    pub series: [VecDeque<Point>; 3],
}

impl RouteHistory {
    /// Adds a point at resolution `level`, dropping the oldest beyond its capacity.
    pub fn push(&mut self, level: usize, point: Point) {
        let (_, cap) = RESOLUTIONS[level];
        let ring = &mut self.series[level];
        if ring.len() == cap {
            ring.pop_front();
        }
        ring.push_back(point);
    }

    /// Bytes this route's history can ever hold (its rings at capacity).
    pub fn max_bytes() -> usize {
        let points: usize = RESOLUTIONS.iter().map(|(_, cap)| cap).sum();
        std::mem::size_of::<Self>() + points * std::mem::size_of::<Point>()
    }
}

/// Something that happened to a rollout, marked on the charts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    /// Which rollout (a weir may run several).
    pub rollout: String,
    pub t: u64,
    /// The rollout's phase after it (`Progressing`, `Paused`, `Degraded`, `Healthy`, ...).
    pub phase: String,
    pub step: Option<u64>,
    pub message: String,
}

/// An analysis run as last seen, with what it belonged to (`step 3`, `background`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    pub rollout: String,
    pub label: String,
    pub run: RunStatus,
}

/// Every route's history, the rollout's events and its analysis runs, oldest first.
#[derive(Clone, Debug, Default, Serialize)]
pub struct History {
    pub routes: BTreeMap<String, RouteHistory>,
    pub events: VecDeque<Event>,
    pub runs: VecDeque<Run>,
}

impl History {
    pub fn push(&mut self, route: &str, level: usize, point: Point) {
        self.routes
            .entry(route.to_string())
            .or_default()
            .push(level, point);
    }

    /// Keeps only these routes (a route gone from the table takes its history with it).
    pub fn retain_routes(&mut self, live: &[String]) {
        self.routes.retain(|name, _| live.contains(name));
    }

    /// Updates a run of `rollout` in place (the same name and start), or adds it, dropping the
    /// oldest.
    pub fn observe_run(&mut self, rollout: &str, label: &str, run: &RunStatus) {
        let same = |r: &Run| {
            r.rollout == rollout && r.run.name == run.name && r.run.started_at == run.started_at
        };
        if let Some(known) = self.runs.iter_mut().find(|r| same(r)) {
            known.run = run.clone();
            return;
        }
        if self.runs.len() == MAX_RUNS {
            self.runs.pop_front();
        }
        self.runs.push_back(Run {
            rollout: rollout.to_string(),
            label: label.to_string(),
            run: run.clone(),
        });
    }

    /// Records an event when the rollout's phase, step or message changed since its last one.
    pub fn observe(&mut self, event: Event) {
        let last = self
            .events
            .iter()
            .rev()
            .find(|e| e.rollout == event.rollout);
        let changed = last.is_none_or(|last| {
            (&last.phase, last.step, &last.message) != (&event.phase, event.step, &event.message)
        });
        if changed {
            if self.events.len() == MAX_EVENTS {
                self.events.pop_front();
            }
            self.events.push_back(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(t: u64) -> Point {
        Point {
            t,
            span: 1,
            weight: 20.0,
            stable: Side::default(),
            canary: Side::default(),
        }
    }

    #[test]
    fn rings_are_bounded_and_keep_the_newest() {
        let mut h = History::default();
        for t in 0..1000 {
            h.push("web", 0, point(t));
        }
        let fine = &h.routes["web"].series[0];
        assert_eq!(fine.len(), 60);
        assert_eq!(fine.front().map(|p| p.t), Some(940));
        assert_eq!(fine.back().map(|p| p.t), Some(999));
        h.retain_routes(&[]);
        assert!(h.routes.is_empty());
    }

    /// The bound: at most 1 MiB of history per route.
    #[test]
    fn a_route_history_is_far_under_a_mebibyte() {
        let bytes = RouteHistory::max_bytes();
        eprintln!("history per route at most {bytes} bytes");
        assert!(bytes < 1 << 20, "{bytes} bytes");
        assert!(
            bytes < 64 << 10,
            "{bytes} bytes: more than expected for 270 points"
        );
    }

    #[test]
    fn runs_are_updated_in_place_kept_after_they_finish_and_bounded() {
        let run = |name: &str, started_at, phase| RunStatus {
            name: name.into(),
            phase,
            message: String::new(),
            started_at,
            finished_at: None,
            metrics: Vec::new(),
        };
        let mut h = History::default();
        h.observe_run(
            "shop",
            "step 2",
            &run("a", 10, crate::analysis::Phase::Running),
        );
        h.observe_run(
            "shop",
            "step 2",
            &run("a", 10, crate::analysis::Phase::Failed),
        );
        assert_eq!(h.runs.len(), 1);
        assert_eq!(h.runs[0].run.phase, crate::analysis::Phase::Failed);
        // Retried: the same name, a new start, a new entry.
        h.observe_run(
            "shop",
            "step 2",
            &run("a", 20, crate::analysis::Phase::Running),
        );
        assert_eq!(h.runs.len(), 2);
        for t in 0..100 {
            h.observe_run(
                "shop",
                "background",
                &run("b", 100 + t, crate::analysis::Phase::Running),
            );
        }
        assert_eq!(h.runs.len(), MAX_RUNS);
        assert_eq!(h.runs.back().map(|r| r.run.started_at), Some(199));
    }

    #[test]
    fn events_only_on_change() {
        let mut h = History::default();
        let e = |t, phase: &str| Event {
            rollout: "shop".into(),
            t,
            phase: phase.into(),
            step: Some(1),
            message: String::new(),
        };
        h.observe(e(1, "Progressing"));
        h.observe(e(2, "Progressing"));
        h.observe(e(3, "Degraded"));
        assert_eq!(h.events.len(), 2);
        for t in 0..1000 {
            h.observe(e(t, if t % 2 == 0 { "Paused" } else { "Progressing" }));
        }
        assert_eq!(h.events.len(), MAX_EVENTS);
    }

    /// Two rollouts: each one's events are compared with its own last, not the other's.
    #[test]
    fn each_rollout_has_its_own_events() {
        let mut h = History::default();
        let e = |rollout: &str, t, phase: &str| Event {
            rollout: rollout.into(),
            t,
            phase: phase.into(),
            step: Some(1),
            message: String::new(),
        };
        h.observe(e("shop", 1, "Paused"));
        h.observe(e("cart", 1, "Progressing"));
        h.observe(e("shop", 2, "Paused"));
        h.observe(e("cart", 2, "Progressing"));
        h.observe(e("cart", 3, "Healthy"));
        let seen: Vec<(&str, u64)> = h.events.iter().map(|e| (e.rollout.as_str(), e.t)).collect();
        assert_eq!(seen, [("shop", 1), ("cart", 1), ("cart", 3)]);
    }
}
