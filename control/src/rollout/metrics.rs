//! Rollout metrics, added to weir's one registry: phase, step, aborts, analysis verdicts and
//! the last value each analysis metric measured.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use serde_json::Value;
use std::sync::atomic::AtomicU64;
use weir_proxy::stats::Metrics;

use super::machine::Traffic;
use super::state::{Phase, RolloutState};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RolloutLabel {
    rollout: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    rollout: String,
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MetricLabels {
    rollout: String,
    metric: String,
}

pub struct RolloutMetrics {
    rollout: String,
    phase: Family<PhaseLabels, Gauge>,
    step: Family<RolloutLabel, Gauge>,
    weight: Family<RolloutLabel, Gauge<f64, AtomicU64>>,
    aborts: Family<RolloutLabel, Counter>,
    runs: Family<PhaseLabels, Counter>,
    last_value: Family<MetricLabels, Gauge<f64, AtomicU64>>,
}

const PHASES: [Phase; 4] = [
    Phase::Progressing,
    Phase::Paused,
    Phase::Healthy,
    Phase::Degraded,
];

impl RolloutMetrics {
    pub fn register(metrics: &Metrics, rollout: &str) -> Self {
        let m = RolloutMetrics {
            rollout: rollout.to_string(),
            phase: Family::default(),
            step: Family::default(),
            weight: Family::default(),
            aborts: Family::default(),
            runs: Family::default(),
            last_value: Family::default(),
        };
        metrics.register(|r| {
            r.register(
                "rollout_phase",
                "1 for the rollout's current phase, 0 for the others",
                m.phase.clone(),
            );
            r.register(
                "rollout_step",
                "The rollout's current step, 1-based",
                m.step.clone(),
            );
            r.register(
                "rollout_canary_weight_ratio",
                "Canary weight the rollout has in force, 0..1",
                m.weight.clone(),
            );
            r.register(
                "rollout_aborts",
                "Rollouts aborted (analysis or operator)",
                m.aborts.clone(),
            );
            r.register(
                "analysis_runs",
                "Analysis runs finished, by phase",
                m.runs.clone(),
            );
            r.register(
                "analysis_metric_value",
                "The last value each analysis metric measured",
                m.last_value.clone(),
            );
        });
        m
    }

    fn label(&self) -> RolloutLabel {
        RolloutLabel {
            rollout: self.rollout.clone(),
        }
    }

    pub fn observe(&self, state: &RolloutState, traffic: &Traffic) {
        for p in PHASES {
            let labels = PhaseLabels {
                rollout: self.rollout.clone(),
                phase: p.as_str().to_string(),
            };
            self.phase
                .get_or_create(&labels)
                .set(i64::from(p == state.phase));
        }
        self.step
            .get_or_create(&self.label())
            .set(state.step_index as i64 + 1);
        let weight = if traffic.promoted {
            0.0
        } else {
            traffic.weight_bp as f64 / 10_000.0
        };
        self.weight.get_or_create(&self.label()).set(weight);
    }

    pub fn aborted(&self) {
        self.aborts.get_or_create(&self.label()).inc();
    }

    /// Records a finished run from its status JSON.
    pub fn analysis_finished(&self, run: &Value) {
        let phase = run["phase"].as_str().unwrap_or("Unknown").to_string();
        self.runs
            .get_or_create(&PhaseLabels {
                rollout: self.rollout.clone(),
                phase,
            })
            .inc();
        self.measured(run);
    }

    /// The last numeric measurement of each metric in a run's status JSON.
    pub fn measured(&self, run: &Value) {
        for metric in run["metrics"].as_array().into_iter().flatten() {
            let Some(name) = metric["name"].as_str() else {
                continue;
            };
            let last = metric["measurements"].as_array().and_then(|m| m.last());
            if let Some(value) = last
                .and_then(|m| m["value"].as_str())
                .and_then(|v| v.parse::<f64>().ok())
            {
                let labels = MetricLabels {
                    rollout: self.rollout.clone(),
                    metric: name.to_string(),
                };
                self.last_value.get_or_create(&labels).set(value);
            }
        }
    }
}
