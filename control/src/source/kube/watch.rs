//! The running part: one task per watched resource feeding one reconcile task.
//!
//! Each watch task runs kube's watcher. On any error (API unreachable, watch failure, 410 Gone)
//! it reports the error, drops the stream, waits (doubling from `retry_initial` to `retry_max`,
//! with jitter) and starts again with a fresh list — so every recovery ends in a complete,
//! consistent view. The reconcile task keeps the last good state of every resource; nothing is
//! applied until every watch has listed once, and a state that cannot produce a valid table
//! leaves the table in force alone.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use weir_proxy::table::spec::TableSpec;
use weir_proxy::DataPlane;

use super::gateway::RouteStatus;
use super::httproute::HttpRouteView;
use super::objects::{RolloutView, SliceView, SplitView, SERVICE_NAME_LABEL};
use super::reconcile::{reconcile, Observed};
use crate::config::{KubeSourceConfig, WeightSource};

/// One change seen by a watch task.
#[derive(Debug)]
pub(crate) enum Change<T> {
    /// A (re-)list starts; the items up to `InitDone` replace the whole set.
    Init,
    /// Added or modified; Err = the object could not be read (its last good version stays).
    Apply(String, Result<T, String>),
    Delete(String),
    InitDone,
    Error(String),
}

#[derive(Debug)]
pub(crate) enum Msg {
    Rollout(Change<RolloutView>),
    Split(Change<SplitView>),
    Slice(Change<SliceView>),
    HttpRoute(Change<HttpRouteView>),
}

/// Sync state shared with the handle.
#[derive(Debug)]
pub(crate) struct SyncState {
    pub started: Instant,
    /// Every watch has listed and none has failed since.
    pub in_sync: bool,
    /// The last moment the source was known to be in sync.
    pub last_in_sync: Option<(Instant, SystemTime)>,
    pub applied: Option<TableSpec>,
    pub applied_generation: Option<u64>,
    pub last_problem: Option<String>,
}

impl SyncState {
    pub fn new() -> Self {
        SyncState {
            started: Instant::now(),
            in_sync: false,
            last_in_sync: None,
            applied: None,
            applied_generation: None,
            last_problem: None,
        }
    }

    pub fn staleness(&self) -> Option<Duration> {
        if self.in_sync {
            return Some(Duration::ZERO);
        }
        self.last_in_sync.map(|(at, _)| at.elapsed())
    }
}

pub(crate) type Shared = Arc<Mutex<SyncState>>;

pub(crate) fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, SyncState> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// Delay with up to 25 % jitter, so many sidecars do not re-list in step.
fn jittered(delay: Duration) -> Duration {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let quarter = (delay.as_millis() as u64 / 4).max(1);
    delay + Duration::from_millis(u64::from(nanos) % quarter)
}

/// Watches one resource until dropped, sending changes; re-lists after errors.
pub(crate) async fn watch_loop<K, T>(
    api: Api<K>,
    wc: watcher::Config,
    cfg: (Duration, Duration),
    parse: impl Fn(&K) -> Result<T, String> + Send + 'static,
    wrap: fn(Change<T>) -> Msg,
    tx: mpsc::Sender<Msg>,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (initial, max) = cfg;
    let mut delay = initial;
    loop {
        let mut stream = watcher(api.clone(), wc.clone()).boxed();
        while let Some(event) = stream.next().await {
            let change = match event {
                Ok(Event::Init) => Change::Init,
                Ok(Event::InitApply(o)) | Ok(Event::Apply(o)) => {
                    Change::Apply(o.name_any(), parse(&o))
                }
                Ok(Event::Delete(o)) => Change::Delete(o.name_any()),
                Ok(Event::InitDone) => {
                    delay = initial;
                    Change::InitDone
                }
                Err(e) => Change::Error(e.to_string()),
            };
            let failed = matches!(change, Change::Error(_));
            if tx.send(wrap(change)).await.is_err() {
                return; // the source was stopped
            }
            if failed {
                break;
            }
        }
        drop(stream);
        tokio::time::sleep(jittered(delay)).await;
        delay = (delay * 2).min(max);
    }
}

fn watcher<K>(
    api: Api<K>,
    wc: watcher::Config,
) -> impl futures_util::Stream<Item = watcher::Result<Event<K>>> + Send
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    kube::runtime::watcher(api, wc)
}

/// The last good objects of one kind, and how its watch is doing.
#[derive(Debug)]
struct Store<T> {
    kind: &'static str,
    items: BTreeMap<String, T>,
    /// Some during a (re-)list.
    listing: Option<BTreeMap<String, T>>,
    synced_once: bool,
    error: Option<String>,
    /// Objects that failed to parse, with the error last logged for them.
    bad: BTreeMap<String, String>,
}

impl<T: Clone + PartialEq> Store<T> {
    fn new(kind: &'static str) -> Self {
        Store {
            kind,
            items: BTreeMap::new(),
            listing: None,
            synced_once: false,
            error: None,
            bad: BTreeMap::new(),
        }
    }

    /// Applies a change; returns the objects that disappeared (for Rollout tombstones) and whether
    /// the visible set changed.
    fn change(&mut self, change: Change<T>) -> (bool, Vec<T>) {
        match change {
            Change::Init => {
                self.listing = Some(BTreeMap::new());
                (false, vec![])
            }
            Change::Apply(name, parsed) => {
                let item = match parsed {
                    Ok(item) => {
                        if self.bad.remove(&name).is_some() {
                            tracing::info!(kind = self.kind, %name, "kube object readable again");
                        }
                        Some(item)
                    }
                    Err(error) => {
                        if self.bad.get(&name) != Some(&error) {
                            tracing::warn!(kind = self.kind, %name, %error,
                                "cannot read kube object; keeping its last good version");
                            self.bad.insert(name.clone(), error);
                        }
                        self.items.get(&name).cloned()
                    }
                };
                let Some(item) = item else {
                    return (false, vec![]);
                };
                match &mut self.listing {
                    Some(listing) => {
                        listing.insert(name, item);
                        (false, vec![])
                    }
                    None => {
                        let changed = self.items.get(&name) != Some(&item);
                        self.items.insert(name, item);
                        (changed, vec![])
                    }
                }
            }
            Change::Delete(name) => {
                self.bad.remove(&name);
                let gone: Vec<T> = self.items.remove(&name).into_iter().collect();
                (!gone.is_empty(), gone)
            }
            Change::InitDone => {
                let new = self.listing.take().unwrap_or_default();
                let gone: Vec<T> = self
                    .items
                    .iter()
                    .filter(|(k, _)| !new.contains_key(*k))
                    .map(|(_, v)| v.clone())
                    .collect();
                let changed = new != self.items || !self.synced_once;
                self.items = new;
                self.synced_once = true;
                if self.error.take().is_some() {
                    tracing::info!(kind = self.kind, "kube watch recovered (re-listed)");
                }
                (changed, gone)
            }
            Change::Error(error) => {
                self.listing = None;
                if self.error.is_none() {
                    tracing::warn!(kind = self.kind, %error,
                        "kube watch failed; serving the last table, will re-list");
                } else {
                    tracing::debug!(kind = self.kind, %error, "kube watch still failing");
                }
                self.error = Some(error);
                (false, vec![])
            }
        }
    }

    fn healthy(&self) -> bool {
        self.synced_once && self.error.is_none()
    }
}

/// The reconcile task's state.
pub(crate) struct Reconciler {
    cfg: KubeSourceConfig,
    plane: Arc<DataPlane>,
    shared: Shared,
    rollouts: Option<Store<RolloutView>>,
    splits: Option<Store<SplitView>>,
    http_routes: Option<Store<HttpRouteView>>,
    slices: Store<SliceView>,
    deleted_rollout: Option<RolloutView>,
    /// For an HTTPRoute source: where the statuses of the table in force go (the writer).
    statuses: Option<tokio::sync::watch::Sender<Vec<RouteStatus>>>,
    last_summary: Option<String>,
    last_warnings: Vec<String>,
}

impl Reconciler {
    pub fn new(
        cfg: KubeSourceConfig,
        plane: Arc<DataPlane>,
        shared: Shared,
        statuses: Option<tokio::sync::watch::Sender<Vec<RouteStatus>>>,
    ) -> Self {
        let (rollouts, splits, http_routes) = match &cfg.weights {
            WeightSource::Rollout { .. } | WeightSource::RolloutSelector { .. } => {
                (Some(Store::new("Rollout")), None, None)
            }
            WeightSource::TrafficSplit { .. } => (None, Some(Store::new("TrafficSplit")), None),
            WeightSource::HttpRoutes(_) => (None, None, Some(Store::new("HTTPRoute"))),
        };
        Reconciler {
            rollouts,
            splits,
            http_routes,
            slices: Store::new("EndpointSlice"),
            cfg,
            plane,
            shared,
            deleted_rollout: None,
            statuses,
            last_summary: None,
            last_warnings: Vec::new(),
        }
    }

    /// Returns whether a recompute is due.
    fn handle(&mut self, msg: Msg) -> bool {
        let changed = match msg {
            Msg::Rollout(c) => match &mut self.rollouts {
                Some(store) => {
                    let (changed, gone) = store.change(c);
                    if let Some(last) = gone.into_iter().last() {
                        self.deleted_rollout = Some(last);
                    }
                    changed
                }
                None => false,
            },
            Msg::Split(c) => self.splits.as_mut().map(|s| s.change(c).0).unwrap_or(false),
            Msg::Slice(c) => self.slices.change(c).0,
            Msg::HttpRoute(c) => self
                .http_routes
                .as_mut()
                .map(|s| s.change(c).0)
                .unwrap_or(false),
        };
        self.update_sync();
        changed
    }

    fn weights_store_healthy(&self) -> (bool, bool) {
        match (&self.rollouts, &self.splits, &self.http_routes) {
            (Some(s), _, _) => (s.synced_once, s.healthy()),
            (_, Some(s), _) => (s.synced_once, s.healthy()),
            (_, _, Some(s)) => (s.synced_once, s.healthy()),
            _ => (false, false),
        }
    }

    fn update_sync(&self) {
        let (_, weights_ok) = self.weights_store_healthy();
        let ok = weights_ok && self.slices.healthy();
        let mut s = lock(&self.shared);
        if ok || s.in_sync {
            // Entering or leaving sync: this moment is the last known good one.
            s.last_in_sync = Some((Instant::now(), SystemTime::now()));
        }
        s.in_sync = ok;
    }

    fn observed(&self) -> Observed {
        Observed {
            rollouts: self
                .rollouts
                .as_ref()
                .map(|s| s.items.clone())
                .unwrap_or_default(),
            deleted_rollout: self.deleted_rollout.clone(),
            splits: self
                .splits
                .as_ref()
                .map(|s| s.items.clone())
                .unwrap_or_default(),
            slices: self.slices.items.clone(),
            http_routes: self
                .http_routes
                .as_ref()
                .map(|s| s.items.clone())
                .unwrap_or_default(),
        }
    }

    fn problem(&self, problem: Option<String>) {
        let mut s = lock(&self.shared);
        if s.last_problem != problem {
            match &problem {
                Some(p) => tracing::warn!(problem = %p, "kube source: keeping the table in force"),
                None if s.last_problem.is_some() => tracing::info!("kube source: problem resolved"),
                None => {}
            }
            s.last_problem = problem;
        }
    }

    fn recompute(&mut self) {
        let (weights_synced, _) = self.weights_store_healthy();
        if !weights_synced || !self.slices.synced_once {
            return; // not everything listed yet: the table in force stays
        }
        let desired = match reconcile(&self.cfg, &self.observed()) {
            Ok(d) => d,
            Err(e) => return self.problem(Some(e)),
        };
        for w in &desired.warnings {
            if !self.last_warnings.contains(w) {
                tracing::warn!("kube source: {w}");
            }
        }
        self.last_warnings = desired.warnings.clone();
        let unchanged = lock(&self.shared).applied.as_ref() == Some(&desired.spec);
        if unchanged {
            // The table in force is this one: its statuses hold (a new generation that
            // changed nothing weir serves still gets its observedGeneration).
            self.publish(&desired.statuses);
            return self.problem(None);
        }
        match self.plane.apply(&desired.spec) {
            Ok(generation) => {
                if self.last_summary.as_ref() != Some(&desired.summary) {
                    tracing::info!(generation, "kube source: {}", desired.summary);
                    self.last_summary = Some(desired.summary.clone());
                }
                self.publish(&desired.statuses);
                {
                    let mut s = lock(&self.shared);
                    s.applied = Some(desired.spec);
                    s.applied_generation = Some(generation);
                }
                self.problem(None);
            }
            Err(errors) => self.problem(Some(format!("table rejected: {errors}"))),
        }
    }

    /// Statuses only ever describe a table in force: sent after it is applied.
    fn publish(&self, statuses: &[RouteStatus]) {
        if let Some(tx) = &self.statuses {
            tx.send_if_modified(|current| {
                let changed = current.as_slice() != statuses;
                if changed {
                    *current = statuses.to_vec();
                }
                changed
            });
        }
    }

    /// Runs until `rx` closes.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Msg>, gauges: super::Gauges) {
        let mut due: Option<tokio::time::Instant> = None;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                msg = rx.recv() => {
                    let Some(msg) = msg else { return };
                    if self.handle(msg) && due.is_none() {
                        due = Some(tokio::time::Instant::now() + self.cfg.debounce);
                    }
                    gauges.update(&lock(&self.shared));
                }
                _ = async { tokio::time::sleep_until(due.unwrap()).await }, if due.is_some() => {
                    due = None;
                    self.recompute();
                }
                _ = tick.tick() => gauges.update(&lock(&self.shared)),
            }
        }
    }
}

/// The Api and watcher config for the weights resource and the EndpointSlices.
pub(crate) fn spawn_watches(
    client: kube::Client,
    cfg: &KubeSourceConfig,
    tx: mpsc::Sender<Msg>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let retry = (cfg.retry_initial, cfg.retry_max);
    let ns = cfg.namespace.as_str();
    let mut tasks = Vec::new();
    let dynamic = |group: &str, version: &str, kind: &str, plural: &str| ApiResource {
        group: group.to_string(),
        version: version.to_string(),
        api_version: format!("{group}/{version}"),
        kind: kind.to_string(),
        plural: plural.to_string(),
    };
    match &cfg.weights {
        WeightSource::Rollout { .. } | WeightSource::RolloutSelector { .. } => {
            let ar = dynamic("argoproj.io", "v1alpha1", "Rollout", "rollouts");
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
            let wc = match &cfg.weights {
                WeightSource::Rollout { name } => {
                    watcher::Config::default().fields(&format!("metadata.name={name}"))
                }
                WeightSource::RolloutSelector { labels } => {
                    watcher::Config::default().labels(labels)
                }
                _ => unreachable!(),
            };
            let parse = |o: &DynamicObject| {
                let name = o.name_any();
                let mut view = RolloutView::parse(&name, &o.data)?;
                view.generation = o.metadata.generation.unwrap_or(0);
                Ok(view)
            };
            tasks.push(tokio::spawn(watch_loop(
                api,
                wc,
                retry,
                parse,
                Msg::Rollout,
                tx.clone(),
            )));
        }
        WeightSource::HttpRoutes(source) => {
            let ar = super::httproute::api_resource(source.version);
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
            // Every HTTPRoute of the namespace: which are ours is decided on their parentRefs.
            let parse = |o: &DynamicObject| {
                let object = serde_json::to_value(o).map_err(|e| e.to_string())?;
                HttpRouteView::parse(&object)
            };
            tasks.push(tokio::spawn(watch_loop(
                api,
                watcher::Config::default(),
                retry,
                parse,
                Msg::HttpRoute,
                tx.clone(),
            )));
        }
        WeightSource::TrafficSplit { name, version } => {
            let ar = dynamic(
                "split.smi-spec.io",
                version.as_str(),
                "TrafficSplit",
                "trafficsplits",
            );
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
            let wc = watcher::Config::default().fields(&format!("metadata.name={name}"));
            let parse = |o: &DynamicObject| {
                let mut view = SplitView::parse(&o.name_any(), &o.data)?;
                view.generation = o.metadata.generation.unwrap_or(0);
                Ok(view)
            };
            tasks.push(tokio::spawn(watch_loop(
                api,
                wc,
                retry,
                parse,
                Msg::Split,
                tx.clone(),
            )));
        }
    }
    let api: Api<k8s_openapi::api::discovery::v1::EndpointSlice> = Api::namespaced(client, ns);
    let wc = watcher::Config::default().labels(SERVICE_NAME_LABEL);
    tasks.push(tokio::spawn(watch_loop(
        api,
        wc,
        retry,
        |s| Ok(SliceView::from_slice(s)),
        Msg::Slice,
        tx,
    )));
    tasks
}
