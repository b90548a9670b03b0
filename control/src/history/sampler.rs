//! Reads the data plane once a second into the history: the table's weights and each route's
//! live windows (the last completed second, and at each 10 s and 60 s boundary the whole span),
//! and the rollout's status for its events. It reads only what the data path already records:
//! rendering the page costs the data path nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_proxy::stats::{now_second, WindowSnapshot};
use weir_proxy::table::spec::{CANARY, STABLE};
use weir_proxy::table::Route;
use weir_proxy::DataPlane;

use super::{Event, History, Point, Side, RESOLUTIONS};
use crate::rollout::RolloutHandle;

/// The history being kept, shared with whoever serves it.
pub type Sampler = Arc<Mutex<History>>;

/// Starts sampling every second, for the life of the process.
pub fn spawn(plane: Arc<DataPlane>, rollouts: Vec<RolloutHandle>) -> Sampler {
    let history: Sampler = Arc::default();
    let shared = history.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut last = now_second();
        loop {
            tick.tick().await;
            let now = now_second();
            // Every second completed since the last tick (usually one).
            for completed in last..now {
                sample(&plane, &rollouts, &shared, completed);
            }
            last = now;
        }
    });
    history
}

/// Samples the second `completed` (a whole second in the past, so its counts are final).
fn sample(plane: &DataPlane, rollouts: &[RolloutHandle], history: &Sampler, completed: u64) {
    let table = plane.table.load();
    let unix = unix_seconds(completed);
    let mut h = history.lock().unwrap_or_else(|p| p.into_inner());
    for route in table.routes() {
        let (stable, canary) = sides(route);
        let weight = canary.map_or(0, |i| route.shares_bp()[i]);
        for (level, (span, _)) in RESOLUTIONS.iter().enumerate() {
            if !(completed + 1).is_multiple_of(*span) {
                continue;
            }
            let read = |i: Option<usize>| {
                i.map(|i| side(&route.backend(i).stats.live.snapshot_at(completed, *span)))
                    .unwrap_or_default()
            };
            h.push(
                &route.name,
                level,
                Point {
                    t: unix + 1,
                    span: *span,
                    weight: f64::from(weight) / 100.0,
                    stable: read(stable),
                    canary: read(canary),
                },
            );
        }
    }
    let names: Vec<String> = table.routes().iter().map(|r| r.name.to_string()).collect();
    h.retain_routes(&names);
    for rollout in rollouts {
        let s = rollout.status();
        if let Some(step) = &s.analysis.step {
            h.observe_run(&s.rollout, &format!("step {}", step.step), &step.run);
        }
        if let Some(background) = &s.analysis.background {
            h.observe_run(&s.rollout, "background", background);
        }
        h.observe(Event {
            rollout: s.rollout.clone(),
            t: unix + 1,
            phase: s.phase.as_str().to_string(),
            step: Some(s.step as u64),
            message: s.message,
        });
    }
}

/// The route's stable and canary backends: by name for a rollout's route, else the first two.
fn sides(route: &Route) -> (Option<usize>, Option<usize>) {
    let find = |name: &str| route.backends.iter().position(|b| &*b.name == name);
    match (find(STABLE), find(CANARY)) {
        (None, None) => (
            (!route.backends.is_empty()).then_some(0),
            (route.backends.len() > 1).then_some(1),
        ),
        named => named,
    }
}

fn side(w: &WindowSnapshot) -> Side {
    Side {
        requests: w.requests,
        failures: w.failures,
        p99_ms: w.quantile(0.99).map(|d| d.as_secs_f64() * 1000.0),
    }
}

/// The live windows count seconds on their own clock (`now_second`); the page wants unix time.
fn unix_seconds(second: u64) -> u64 {
    let now_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    now_unix.saturating_sub(now_second().saturating_sub(second))
}
