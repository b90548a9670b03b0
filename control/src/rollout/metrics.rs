//! Rollout metrics, added to weir's one registry: phase, step, aborts, analysis verdicts and
//! the last value each analysis metric measured.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::atomic::AtomicU64;
use weir_proxy::stats::Metrics;

use super::machine::Traffic;
use super::state::{Phase, RolloutState};
use crate::analysis::RunStatus;

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TowardLabels {
    rollout: String,
    metric: String,
    toward: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendLabels {
    rollout: String,
    metric: String,
    backend: String,
}

pub struct RolloutMetrics {
    rollout: String,
    phase: Family<PhaseLabels, Gauge>,
    step: Family<RolloutLabel, Gauge>,
    weight: Family<RolloutLabel, Gauge<f64, AtomicU64>>,
    aborts: Family<RolloutLabel, Counter>,
    state_save_failures: Family<RolloutLabel, Counter>,
    runs: Family<PhaseLabels, Counter>,
    last_value: Family<MetricLabels, Gauge<f64, AtomicU64>>,
    evidence: Family<TowardLabels, Gauge<f64, AtomicU64>>,
    compare_rate: Family<BackendLabels, Gauge<f64, AtomicU64>>,
    compare_requests: Family<BackendLabels, Gauge>,
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
            state_save_failures: Family::default(),
            runs: Family::default(),
            last_value: Family::default(),
            evidence: Family::default(),
            compare_rate: Family::default(),
            compare_requests: Family::default(),
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
                "rollout_state_save_failures",
                "Attempts to write the rollout's state file that failed",
                m.state_save_failures.clone(),
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
            r.register(
                "analysis_evidence_ratio",
                "How far a comparison's evidence has come towards a verdict, 0..1 (1 = decided)",
                m.evidence.clone(),
            );
            r.register(
                "analysis_compare_rate",
                "A comparison's event rate per backend since it started (errors or slow requests)",
                m.compare_rate.clone(),
            );
            r.register(
                "analysis_compare_requests",
                "Requests a comparison has judged per backend since it started",
                m.compare_requests.clone(),
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

    pub fn state_save_failed(&self) {
        self.state_save_failures.get_or_create(&self.label()).inc();
    }

    /// Records a finished run.
    pub fn analysis_finished(&self, run: &RunStatus) {
        self.runs
            .get_or_create(&PhaseLabels {
                rollout: self.rollout.clone(),
                phase: run.phase.as_str().to_string(),
            })
            .inc();
        self.measured(run);
        self.evidence(run);
    }

    /// Each comparison's evidence in a run, as it stands.
    pub fn evidence(&self, run: &RunStatus) {
        for metric in &run.metrics {
            let Some(e) = &metric.evidence else {
                continue;
            };
            for (toward, x) in [
                ("failed", e.toward_failed),
                ("successful", e.toward_successful),
            ] {
                let labels = TowardLabels {
                    rollout: self.rollout.clone(),
                    metric: metric.name.clone(),
                    toward: toward.to_string(),
                };
                self.evidence.get_or_create(&labels).set(x);
            }
            for (backend, figures) in [("canary", e.canary), ("stable", e.stable)] {
                let labels = BackendLabels {
                    rollout: self.rollout.clone(),
                    metric: metric.name.clone(),
                    backend: backend.to_string(),
                };
                if let Some(rate) = figures.rate {
                    self.compare_rate.get_or_create(&labels).set(rate);
                }
                self.compare_requests
                    .get_or_create(&labels)
                    .set(i64::try_from(figures.requests).unwrap_or(i64::MAX));
            }
        }
    }

    /// The last numeric measurement of each metric in a run.
    pub fn measured(&self, run: &RunStatus) {
        for metric in &run.metrics {
            let last = metric.measurements.back();
            if let Some(value) = last
                .and_then(|m| m.value.as_deref())
                .and_then(|v| v.parse::<f64>().ok())
            {
                let labels = MetricLabels {
                    rollout: self.rollout.clone(),
                    metric: metric.name.clone(),
                };
                self.last_value.get_or_create(&labels).set(value);
            }
        }
    }
}
