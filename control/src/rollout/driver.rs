//! The rollout driver: one tokio task that runs the step machine against the real world —
//! clocks, analysis runs, the data plane, the state file and operators' commands.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, oneshot, watch};
use weir_proxy::DataPlane;

use super::analysis::{start_run, Run};
use super::applier::Applier;
use super::events;
use super::machine::{self, advance, Command, Traffic, Wait};
use super::metrics::RolloutMetrics;
use super::persist;
use super::plan::Plan;
use super::state::{Phase, RolloutState};
use super::status::{status, RolloutStatus, StatusView};
use crate::analysis::provider::ProviderContext;
use crate::analysis::{Phase as RunPhase, RunStatus};
use crate::notify::{EventKind, Notifier};

/// Optional gradual abort: the weight steps down instead of dropping to 0 at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortRamp {
    pub step_bp: u16,
    pub interval: Duration,
}

/// An abort ramp under way: a timed state of the driver's loop, not a sleep, so the abort is
/// saved and published before the first step down, and commands are served between steps.
#[derive(Clone, Copy, Debug)]
struct Ramping {
    /// The weight in force now.
    weight_bp: u16,
    /// When the next step down is due.
    next: tokio::time::Instant,
}

pub struct RolloutSettings {
    /// The weir route this rollout drives.
    pub route: String,
    pub state_file: Option<PathBuf>,
    pub abort_ramp: Option<AbortRamp>,
    /// Where its events go (`notifications:`); none by default.
    pub notifier: Arc<Notifier>,
}

type Reply = oneshot::Sender<Result<String, String>>;

/// What the rest of weir holds: commands in, status out.
#[derive(Clone)]
pub struct RolloutHandle {
    /// The Rollout's name (its manifest's `metadata.name`): unique in a process.
    name: Arc<str>,
    commands: mpsc::Sender<(Command, Reply)>,
    status: watch::Receiver<RolloutStatus>,
}

impl RolloutHandle {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub async fn command(&self, command: Command) -> Result<String, String> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send((command, tx))
            .await
            .map_err(|_| "the rollout driver has stopped".to_string())?;
        rx.await
            .map_err(|_| "the rollout driver has stopped".to_string())?
    }

    pub fn status(&self) -> RolloutStatus {
        self.status.borrow().clone()
    }

    /// Waits until the status satisfies `done` (e.g. phase Healthy or Degraded).
    pub async fn wait_for(&self, done: impl Fn(&RolloutStatus) -> bool) -> RolloutStatus {
        let mut rx = self.status.clone();
        let found = rx.wait_for(|s| done(s)).await.map(|s| s.clone());
        found.unwrap_or_else(|_| self.status())
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Starts the driver task of a rollout on `settings.route`, its traffic composed by `applier`
/// (shared by every rollout of the process) onto the config's table and put in force before
/// this returns.
pub fn start(
    plan: Plan,
    settings: RolloutSettings,
    applier: Arc<Applier>,
    plane: Arc<DataPlane>,
    ctx: Arc<ProviderContext>,
) -> Result<RolloutHandle, String> {
    let revision_rx = applier.drive(&settings.route)?;
    let plan_name = plan.rollout.name.clone();
    let rev = revision_rx.borrow().clone();
    let metrics = RolloutMetrics::register(&plane.metrics, &plan.rollout.name);
    let now = now_ms();

    // Resume where we were; a state file that cannot be used holds the rollout at weight 0
    // rather than restarting (or re-promoting) anything by accident.
    let state = match settings.state_file.as_deref().map(persist::load) {
        None | Some(Ok(None)) => RolloutState::new(&plan.rollout.name, &rev, now),
        Some(Ok(Some(s))) if s.rollout == plan.rollout.name && s.revision == rev => {
            tracing::info!(rollout = %s.rollout, step = s.step_index, phase = s.phase.as_str(), "resuming the rollout from its state file");
            s
        }
        Some(Ok(Some(s))) => {
            tracing::info!(rollout = %plan.rollout.name, old = %s.revision, "a new canary version: starting the steps");
            RolloutState::new(&plan.rollout.name, &rev, now)
        }
        Some(Err(problem)) => {
            tracing::error!("{problem}; holding the rollout at canary weight 0 (fix or remove the file, or retry)");
            let mut s = RolloutState::new(&plan.rollout.name, &rev, now);
            s.aborted = true;
            s.phase = Phase::Degraded;
            s.message = format!(
                "{problem}: holding at canary weight 0; `weir retry` starts the steps again"
            );
            s
        }
    };
    let traffic = machine::traffic(&plan.steps, &state);
    applier
        .set_traffic(&settings.route, traffic.clone())
        .map_err(|e| format!("the routing table was refused:\n{e}"))?;

    let (commands_tx, commands_rx) = mpsc::channel(16);
    let (status_tx, status_rx) = watch::channel(status(StatusView {
        plan: &plan,
        state: &state,
        traffic: &traffic,
        route: &settings.route,
        step_run: None,
        background: None,
        state_file_error: None,
    }));
    let mut driver = Driver {
        plan,
        settings,
        applier: applier.clone(),
        ctx,
        metrics,
        state,
        traffic,
        step_run: None,
        background: None,
        ramping: None,
        state_file_error: None,
        status: status_tx,
        published: None,
        last_verdict: None,
    };
    driver.publish();
    tokio::spawn(driver.run(commands_rx, revision_rx));
    Ok(RolloutHandle {
        name: plan_name.into(),
        commands: commands_tx,
        status: status_rx,
    })
}

struct Driver {
    plan: Plan,
    settings: RolloutSettings,
    applier: Arc<Applier>,
    ctx: Arc<ProviderContext>,
    metrics: RolloutMetrics,
    state: RolloutState,
    traffic: Traffic,
    step_run: Option<(usize, Run)>,
    background: Option<Run>,
    ramping: Option<Ramping>,
    /// The last save failed, and why (cleared by the next save that works).
    state_file_error: Option<String>,
    status: watch::Sender<RolloutStatus>,
    /// The status published last: the next one's difference from it is the events to tell.
    published: Option<RolloutStatus>,
    /// The last analysis run that finished Failed, Error or Inconclusive: the evidence an
    /// abort it caused is told with (the run itself is gone from the status by then).
    last_verdict: Option<RunStatus>,
}

impl Driver {
    async fn run(
        mut self,
        mut commands: mpsc::Receiver<(Command, Reply)>,
        mut revisions: watch::Receiver<String>,
    ) {
        let mut refresh = tokio::time::interval(Duration::from_secs(1));
        let mut saved: Option<RolloutState> = None;
        // A command is answered once its effect is in force and on disk.
        let mut answer: Option<(Reply, Result<String, String>)> = None;
        loop {
            let wait = advance(&self.plan.steps, &mut self.state, now_ms());
            self.sync_analyses(&wait);
            self.sync_traffic();
            // Whatever changed it (a step, a command, a verdict), the file follows; a save
            // that failed is tried again each time round (at least once a second).
            if saved.as_ref() != Some(&self.state) && self.persist() {
                saved = Some(self.state.clone());
            }
            if let Some((reply, result)) = answer.take() {
                let _ = reply.send(result);
            }
            self.publish();

            let deadline = match wait {
                Wait::Until(ms) => Some(
                    tokio::time::Instant::now()
                        + Duration::from_millis(ms.saturating_sub(now_ms())),
                ),
                _ => None,
            };
            tokio::select! {
                Some((command, reply)) = commands.recv() => {
                    let result = machine::command(&self.plan.steps, &mut self.state, command, now_ms());
                    if let Ok(done) = &result {
                        tracing::info!(rollout = %self.plan.rollout.name, ?command, "{done}");
                        if matches!(command, Command::Promote | Command::PromoteFull) {
                            self.tell(EventKind::Promoted, Vec::new());
                        }
                    }
                    answer = Some((reply, result));
                }
                verdict = wait_run(self.step_run.as_ref().map(|(_, r)| r)) => {
                    if let Some((step, run)) = self.step_run.take() {
                        self.analysis_finished(run.status());
                        machine::step_analysis_done(&mut self.state, step, verdict, now_ms());
                    }
                }
                verdict = wait_run(self.background.as_ref()) => {
                    if let Some(run) = self.background.take() {
                        self.analysis_finished(run.status());
                        machine::background_analysis_done(&mut self.state, verdict);
                    }
                }
                _ = sleep_until(deadline) => {}
                _ = sleep_until(self.ramping.map(|r| r.next)) => {}
                Ok(()) = revisions.changed() => {
                    let rev = revisions.borrow_and_update().clone();
                    if rev != self.state.revision {
                        tracing::info!(rollout = %self.plan.rollout.name, "a new canary version: restarting the steps");
                        self.stop_analyses();
                        self.state = RolloutState::new(&self.plan.rollout.name, &rev, now_ms());
                    }
                }
                _ = refresh.tick() => {}
            }
        }
    }

    /// Starts the analysis the current step needs, the background one once its step is
    /// reached, and stops what is no longer wanted.
    fn sync_analyses(&mut self, wait: &Wait) {
        let wanted_step = match wait {
            Wait::Analysis(i) => Some(*i),
            _ => None,
        };
        if self.step_run.as_ref().map(|(i, _)| *i) != wanted_step {
            if let Some((_, run)) = self.step_run.take() {
                run.terminate();
            }
            if let Some(i) = wanted_step {
                let name = format!("{}-step-{}", self.plan.rollout.name, i + 1);
                match self
                    .plan
                    .step_analysis(i)
                    .map(|refs| start_run(&name, refs, &self.plan, &self.ctx))
                {
                    Some(Ok(run)) => self.step_run = Some((i, run)),
                    Some(Err(e)) => machine::step_analysis_done(
                        &mut self.state,
                        i,
                        machine::Verdict::Error(e),
                        now_ms(),
                    ),
                    None => {}
                }
            }
        }
        let live = matches!(self.state.phase, Phase::Progressing | Phase::Paused);
        let background_wanted = live
            && self
                .plan
                .background
                .as_ref()
                .is_some_and(|b| self.state.step_index >= b.starting_step.unwrap_or(0));
        match (&self.background, background_wanted) {
            (Some(run), false) => {
                run.terminate();
                self.background = None;
            }
            (None, true) => {
                if let Some(b) = &self.plan.background {
                    let name = format!("{}-background", self.plan.rollout.name);
                    match start_run(&name, &b.analysis, &self.plan, &self.ctx) {
                        Ok(run) => self.background = Some(run),
                        Err(e) => machine::background_analysis_done(
                            &mut self.state,
                            machine::Verdict::Error(e),
                        ),
                    }
                }
            }
            _ => {}
        }
    }

    fn stop_analyses(&mut self) {
        if let Some((_, run)) = self.step_run.take() {
            run.terminate();
        }
        if let Some(run) = self.background.take() {
            run.terminate();
        }
    }

    /// Puts the traffic of the current state in force. An abort with a ramp steps the weight
    /// down one step each interval first (`Ramping`); the loop comes back when the next step
    /// is due.
    fn sync_traffic(&mut self) {
        let target = machine::traffic(&self.plan.steps, &self.state);
        if !self.state.aborted || target == self.traffic {
            // A retry (or anything else that ends the abort) ends its ramp too.
            self.ramping = None;
            if target == self.traffic {
                return;
            }
        }
        if self.state.aborted && self.ramping.is_none() {
            // The abort begins.
            self.stop_analyses();
            self.metrics.aborted();
            tracing::warn!(rollout = %self.plan.rollout.name, "aborted: {}", self.state.message);
            if let Some(ramp) = self.settings.abort_ramp {
                if self.traffic.weight_bp > ramp.step_bp {
                    self.ramping = Some(Ramping {
                        weight_bp: self.traffic.weight_bp,
                        next: tokio::time::Instant::now(),
                    });
                }
            }
        }
        if let (Some(ramping), Some(ramp)) = (&mut self.ramping, self.settings.abort_ramp) {
            let now = tokio::time::Instant::now();
            if now < ramping.next {
                return;
            }
            if ramping.weight_bp > ramp.step_bp {
                ramping.weight_bp -= ramp.step_bp;
                ramping.next = now + ramp.interval;
                let step = Traffic {
                    weight_bp: ramping.weight_bp,
                    ..Traffic::default()
                };
                if self
                    .applier
                    .set_traffic(&self.settings.route, step.clone())
                    .is_ok()
                {
                    tracing::info!(rollout = %self.plan.rollout.name, weight = step.weight_bp as f64 / 100.0, "abort ramp");
                    self.traffic = step;
                }
                return;
            }
            self.ramping = None;
        }
        match self
            .applier
            .set_traffic(&self.settings.route, target.clone())
        {
            Ok(generation) => {
                tracing::info!(rollout = %self.plan.rollout.name, weight = target.weight_bp as f64 / 100.0, promoted = target.promoted, generation, "traffic in force");
                self.traffic = target;
            }
            // The config's table changed under the rollout into something that does not take
            // this traffic; keep what serves and say so.
            Err(e) => {
                tracing::error!(rollout = %self.plan.rollout.name, "could not apply the rollout's traffic:\n{e}")
            }
        }
    }

    /// Saves the state; false when that failed (said in the log once, in the status and a
    /// metric while it lasts).
    fn persist(&mut self) -> bool {
        let Some(path) = &self.settings.state_file else {
            return true;
        };
        match persist::save(path, &self.state) {
            Ok(()) => {
                if self.state_file_error.take().is_some() {
                    tracing::info!(rollout = %self.plan.rollout.name, "the rollout state is saved again");
                }
                true
            }
            Err(e) => {
                if self.state_file_error.as_deref() != Some(e.as_str()) {
                    tracing::error!(rollout = %self.plan.rollout.name, "{e}; the rollout goes on, a restart would resume from the last state saved");
                }
                self.metrics.state_save_failed();
                self.state_file_error = Some(e);
                false
            }
        }
    }

    /// A run's end: counted, and told when it is not a success.
    fn analysis_finished(&mut self, run: RunStatus) {
        self.metrics.analysis_finished(&run);
        let kind = match run.phase {
            RunPhase::Failed | RunPhase::Error => EventKind::AnalysisFailed,
            RunPhase::Inconclusive => EventKind::AnalysisInconclusive,
            _ => return,
        };
        self.tell(kind, vec![run_json(&run)]);
        self.last_verdict = Some(run);
    }

    /// Hands an event, as of the status in force, to the webhooks.
    fn tell(&self, kind: EventKind, evidence: Vec<serde_json::Value>) {
        let status = self.status.borrow();
        let event = events::event(kind, &status, evidence, now_ms());
        self.settings.notifier.notify(&event);
    }

    fn publish(&mut self) {
        self.metrics.observe(&self.state, &self.traffic);
        let step_run = self.step_run.as_ref().map(|(i, r)| (*i, r.status()));
        let background = self.background.as_ref().map(|r| r.status());
        for run in step_run.iter().map(|(_, r)| r).chain(background.iter()) {
            self.metrics.evidence(run);
        }
        let view = StatusView {
            plan: &self.plan,
            state: &self.state,
            traffic: &self.traffic,
            route: &self.settings.route,
            step_run,
            background,
            state_file_error: self.state_file_error.as_deref(),
        };
        let mut next = status(view);
        next.notifications = self.settings.notifier.status();
        if let Some(prev) = &self.published {
            for kind in events::between(prev, &next) {
                // An abort is told with the verdict that caused it, if one did.
                let mut evidence: Vec<serde_json::Value> = next.runs().map(run_json).collect();
                if kind == EventKind::Aborted {
                    evidence.extend(self.last_verdict.as_ref().map(run_json));
                }
                let event = events::event(kind, &next, evidence, now_ms());
                self.settings.notifier.notify(&event);
            }
        }
        // What is compared next time: without the deliveries, which change on their own.
        let mut compared = next.clone();
        compared.notifications.clear();
        self.published = Some(compared);
        self.status.send_replace(next);
    }
}

fn run_json(run: &RunStatus) -> serde_json::Value {
    serde_json::to_value(run).unwrap_or_default()
}

async fn wait_run(run: Option<&Run>) -> machine::Verdict {
    match run {
        Some(run) => run.verdict().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
