//! An analysis run: Argo's AnalysisRun, executed in-process, one tokio task per metric.
//!
//! Each metric measures on its own schedule; after every measurement the run is re-assessed
//! under one lock, and the moment it is decided every task stops. So a bad canary is caught at
//! its first failing measurement, not when the slowest metric finishes.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::judge::Evidence;
use super::metric::ResolvedMetric;
use super::provider::{in_words, measure, Memory, ProviderContext};
use super::verdict::{assess, Judgement, Limits, Phase, Tally};
use crate::argo::model::AnalysisTemplate;

/// Measurements kept per metric, as Argo's DefaultMeasurementHistoryLimit.
const HISTORY: usize = 10;
/// Argo's DefaultErrorRetryInterval: how soon a failed measurement is retried.
const ERROR_RETRY: Duration = Duration::from_secs(10);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStatus {
    pub name: String,
    pub phase: Phase,
    pub message: String,
    /// Unix seconds.
    pub started_at: u64,
    pub finished_at: Option<u64>,
    pub metrics: Vec<MetricStatus>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricStatus {
    pub name: String,
    pub phase: Phase,
    pub message: String,
    pub dry_run: bool,
    #[serde(flatten)]
    pub counts: Tally,
    /// The latest measurements, oldest first.
    pub measurements: VecDeque<MeasurementStatus>,
    /// A comparison's evidence: live while its measurement runs, then as it decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeasurementStatus {
    pub phase: Phase,
    /// The value as measured (`[0.962]`, `0.5`), absent when there was none.
    pub value: Option<String>,
    pub message: String,
    pub started_at: u64,
    /// Absent while it runs (a comparison's, which lasts until its judge decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<u64>,
}

struct State {
    status: RunStatus,
    limits: Vec<Limits>,
}

struct Shared {
    state: Mutex<State>,
    /// Flips to true once the run is decided or terminated; every task watches it.
    done: watch::Sender<bool>,
}

/// A running analysis. Dropping it stops its tasks.
pub struct AnalysisRun {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl AnalysisRun {
    /// Merges the templates' metrics and arguments and starts measuring.
    ///
    /// `Err` when the templates cannot make a run (a required argument has no value, two
    /// templates define the same metric, no tokio runtime). A metric with a bad value (an
    /// unparsable count, an unknown argument in a query) makes the run start in phase Error,
    /// as Argo does, with a message naming the metric and the field.
    pub fn start(
        name: String,
        templates: Vec<AnalysisTemplate>,
        args: HashMap<String, String>,
        ctx: Arc<ProviderContext>,
    ) -> Result<AnalysisRun, String> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| format!("analysis run {name:?}: needs a tokio runtime"))?;
        let args = merge_args(&templates, &args)?;
        let metrics = merge_metrics(&templates)?;
        let resolved: Result<Vec<ResolvedMetric>, String> = metrics
            .iter()
            .map(|m| ResolvedMetric::resolve(m, &args))
            .collect();

        let mut status = RunStatus {
            name,
            phase: Phase::Running,
            message: String::new(),
            started_at: unix_now(),
            finished_at: None,
            metrics: metrics
                .iter()
                .map(|m| MetricStatus {
                    name: m.name.clone(),
                    phase: Phase::Pending,
                    message: String::new(),
                    dry_run: m.dry_run,
                    counts: Tally::default(),
                    measurements: VecDeque::new(),
                    evidence: None,
                })
                .collect(),
        };
        let resolved = match resolved {
            Ok(resolved) => resolved,
            Err(message) => {
                tracing::warn!(run = %status.name, %message, "analysis run cannot start");
                status.phase = Phase::Error;
                status.message = message;
                status.finished_at = Some(status.started_at);
                let shared = Shared {
                    state: Mutex::new(State {
                        status,
                        limits: Vec::new(),
                    }),
                    done: watch::Sender::new(true),
                };
                return Ok(AnalysisRun {
                    shared: Arc::new(shared),
                    tasks: Vec::new(),
                });
            }
        };

        let limits = resolved.iter().map(|m| m.limits.clone()).collect();
        let shared = Arc::new(Shared {
            state: Mutex::new(State { status, limits }),
            done: watch::Sender::new(false),
        });
        let tasks = resolved
            .into_iter()
            .enumerate()
            .map(|(index, metric)| {
                runtime.spawn(run_metric(
                    Arc::clone(&shared),
                    index,
                    metric,
                    Arc::clone(&ctx),
                ))
            })
            .collect();
        Ok(AnalysisRun { shared, tasks })
    }

    /// A snapshot of the run, cheap enough to poll.
    pub fn status(&self) -> RunStatus {
        self.shared.lock().status.clone()
    }

    /// Waits until the run is decided (or terminated), then returns its final status.
    pub async fn finished(&self) -> RunStatus {
        let mut done = self.shared.done.subscribe();
        // The sender lives in `self.shared`, so this only returns once done is true.
        let _ = done.wait_for(|done| *done).await;
        self.status()
    }

    /// Stops the run, as the rollout does with background analysis when it ends: metrics
    /// still measuring count as Successful, a run already decided keeps its verdict.
    pub fn terminate(&self) {
        let mut state = self.shared.lock();
        if state.status.phase.completed() {
            return;
        }
        for metric in &mut state.status.metrics {
            if !metric.phase.completed() {
                metric.phase = Phase::Successful;
                metric.message = "run terminated".into();
            }
            // A measurement in progress ends with it, as Argo's does ("Metric Terminated").
            if let Some(running) = metric.measurements.back_mut() {
                if running.phase == Phase::Running {
                    running.phase = Phase::Successful;
                    running.message = format!("run terminated: {}", running.message);
                    running.finished_at = Some(unix_now());
                }
            }
        }
        let (phase, message) =
            verdict_of(&state.status.metrics).unwrap_or((Phase::Successful, String::new()));
        let message = if phase == Phase::Successful {
            "run terminated".into()
        } else {
            message
        };
        self.shared.finish(&mut state, phase, message);
    }
}

impl Drop for AnalysisRun {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // State is only ever replaced field by field; a panicking holder leaves it usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn finish(&self, state: &mut State, phase: Phase, message: String) {
        let status = &mut state.status;
        status.phase = phase;
        status.message = message;
        status.finished_at = Some(unix_now());
        tracing::info!(run = %status.name, phase = phase.as_str(), message = %status.message, "analysis run finished");
        self.done.send_replace(true);
    }

    /// A running comparison's evidence so far: its metric is Running, with a Running
    /// measurement (begun at `started_at`) that says the evidence in words, as Argo lists a
    /// plugin's measurement in progress.
    fn evidence(&self, index: usize, evidence: Evidence, started_at: u64) {
        let mut state = self.lock();
        if state.status.phase.completed() {
            return;
        }
        let Some(metric) = state.status.metrics.get_mut(index) else {
            return;
        };
        let message = in_words(&evidence);
        metric.evidence = Some(evidence);
        if metric.phase.completed() {
            return;
        }
        metric.phase = Phase::Running;
        match metric.measurements.back_mut() {
            Some(running) if running.phase == Phase::Running => running.message = message,
            _ => {
                if metric.measurements.len() == HISTORY {
                    metric.measurements.pop_front();
                }
                metric.measurements.push_back(MeasurementStatus {
                    phase: Phase::Running,
                    value: None,
                    message,
                    started_at,
                    finished_at: None,
                });
            }
        }
    }

    /// Records a measurement and re-assesses; true when this metric needs no more measurements.
    fn record(&self, index: usize, judgement: Judgement, started_at: u64) -> bool {
        let mut state = self.lock();
        if state.status.phase.completed() {
            return true;
        }
        let Some(limits) = state.limits.get(index).cloned() else {
            return true;
        };
        let Some(metric) = state.status.metrics.get_mut(index) else {
            return true;
        };
        metric.counts.record(judgement.phase);
        let (phase, why) = assess(&limits, &metric.counts);
        metric.phase = phase;
        if phase.completed() {
            metric.message = match why {
                Some(why) => format!(
                    "metric {:?} {}: {} ({why})",
                    metric.name,
                    phase.as_str().to_lowercase(),
                    judgement.message
                ),
                None => String::new(),
            };
            tracing::info!(metric = %metric.name, phase = phase.as_str(), message = %metric.message, "metric decided");
        }
        // The measurement in progress, if it was listed, is this one.
        if metric
            .measurements
            .back()
            .is_some_and(|m| m.phase == Phase::Running)
        {
            metric.measurements.pop_back();
        }
        if metric.measurements.len() == HISTORY {
            metric.measurements.pop_front();
        }
        metric.measurements.push_back(MeasurementStatus {
            phase: judgement.phase,
            value: judgement.value,
            message: judgement.message,
            started_at,
            finished_at: Some(unix_now()),
        });

        let metrics = &state.status.metrics;
        let all_done = metrics.iter().all(|m| m.phase.completed());
        if let Some((run_phase, message)) = verdict_of(metrics) {
            // A Failed, Error or Inconclusive metric ends the run at once (Argo terminates).
            if run_phase != Phase::Successful || all_done {
                self.finish(&mut state, run_phase, message);
            }
        } else if all_done {
            // Only dry-run metrics: they never decide, so the run passes once they are done.
            self.finish(&mut state, Phase::Successful, String::new());
        }
        phase.completed()
    }
}

/// The worst phase among decided metrics that are not dry-run, with its message.
fn verdict_of(metrics: &[MetricStatus]) -> Option<(Phase, String)> {
    metrics
        .iter()
        .filter(|m| !m.dry_run && m.phase.completed())
        .max_by_key(|m| m.phase.severity())
        .map(|m| (m.phase, m.message.clone()))
}

async fn run_metric(
    shared: Arc<Shared>,
    index: usize,
    metric: ResolvedMetric,
    ctx: Arc<ProviderContext>,
) {
    let mut done = shared.done.subscribe();
    if let Some(delay) = metric.initial_delay {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = done.wait_for(|d| *d) => return,
        }
    }
    // When the measurement in progress began, for its listing as Running.
    let measuring_since = AtomicU64::new(unix_now());
    let progress = |evidence| {
        shared.evidence(index, evidence, measuring_since.load(Ordering::Relaxed));
    };
    let mut memory = Memory::default();
    loop {
        let started_at = unix_now();
        measuring_since.store(started_at, Ordering::Relaxed);
        let reading = tokio::select! {
            reading = measure(&metric.provider, &ctx, &mut memory, &progress) => reading,
            _ = done.wait_for(|d| *d) => return,
        };
        let judgement = metric.conditions.judge(reading);
        let errored = judgement.phase == Phase::Error;
        if errored {
            tracing::warn!(metric = %metric.name, message = %judgement.message, "measurement error");
        }
        if shared.record(index, judgement, started_at) {
            return;
        }
        // Errors are retried after Argo's 10 s, or sooner when the interval is shorter.
        let wait = match metric.interval {
            Some(interval) if errored => interval.min(ERROR_RETRY),
            Some(interval) => interval,
            None => ERROR_RETRY,
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = done.wait_for(|d| *d) => return,
        }
    }
}

fn merge_args(
    templates: &[AnalysisTemplate],
    given: &HashMap<String, String>,
) -> Result<HashMap<String, String>, String> {
    let mut merged: HashMap<String, String> = HashMap::new();
    for template in templates {
        for arg in &template.args {
            let value = match (given.get(&arg.name), &arg.value) {
                (Some(value), _) => value.clone(),
                (None, Some(default)) => default.clone(),
                (None, None) => {
                    return Err(format!(
                        "argument {:?} required by AnalysisTemplate {:?} has no value",
                        arg.name, template.name
                    ))
                }
            };
            if let Some(earlier) = merged.get(&arg.name) {
                if *earlier != value {
                    return Err(format!(
                        "argument {:?} has conflicting defaults {earlier:?} and {value:?} (AnalysisTemplate {:?})",
                        arg.name, template.name
                    ));
                }
            }
            merged.insert(arg.name.clone(), value);
        }
    }
    Ok(merged)
}

fn merge_metrics(
    templates: &[AnalysisTemplate],
) -> Result<Vec<crate::argo::model::Metric>, String> {
    let mut metrics: Vec<crate::argo::model::Metric> = Vec::new();
    let mut owner: HashMap<&str, &str> = HashMap::new();
    for template in templates {
        for metric in &template.metrics {
            if let Some(first) = owner.insert(&metric.name, &template.name) {
                return Err(format!(
                    "metric {:?} is defined by both AnalysisTemplate {first:?} and {:?}",
                    metric.name, template.name
                ));
            }
            metrics.push(metric.clone());
        }
    }
    if metrics.is_empty() {
        return Err("the analysis has no metrics".into());
    }
    Ok(metrics)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
