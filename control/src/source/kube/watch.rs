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

use super::certificates::{servable, SecretView};
use super::gateway_view::{GatewayView, GrantView, NamespaceView};
use super::httproute::{gateway_api_resource, gateway_group_resource, HttpRouteView};
use super::objects::{RolloutView, SliceView, SplitView, SERVICE_NAME_LABEL};
use super::plan::Plan;
use super::reconcile::{reconcile, Observed};
use super::service::ServiceView;
use super::status_writer::Report;
use crate::config::{KubeSourceConfig, WeightSource};

/// One change seen by a watch task.
#[derive(Debug)]
pub(crate) enum Change<T> {
    /// A (re-)list starts; the items up to `InitDone` replace the whole set.
    Init,
    /// Added or modified, with its uid; Err = the object could not be read (the last good
    /// version of the same object — the same uid — stays).
    Apply(String, Option<String>, Result<T, String>),
    Delete(String),
    InitDone,
    Error(String),
}

/// A change, from the watch numbered so among those of its kind (one per namespace watched,
/// or one for every namespace).
#[derive(Debug)]
pub(crate) enum Msg {
    Rollout(usize, Change<RolloutView>),
    Split(usize, Change<SplitView>),
    Slice(usize, Change<SliceView>),
    Service(usize, Change<ServiceView>),
    HttpRoute(usize, Change<HttpRouteView>),
    Grant(usize, Change<GrantView>),
    Gateway(usize, Change<GatewayView>),
    Namespace(usize, Change<NamespaceView>),
    Secret(usize, Change<SecretView>),
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
    wrap: impl Fn(Change<T>) -> Msg + Send + 'static,
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
                    Change::Apply(key(&o), o.uid(), parse(&o))
                }
                Ok(Event::Delete(o)) => Change::Delete(key(&o)),
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

/// `namespace/name`, or the name of a cluster-scoped object.
fn key<K: Resource>(o: &K) -> String {
    match o.namespace() {
        Some(ns) => format!("{ns}/{}", o.name_any()),
        None => o.name_any(),
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
    /// The uid of each object held (what a re-created object under the same name is not).
    uids: BTreeMap<String, Option<String>>,
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
            uids: BTreeMap::new(),
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
            Change::Apply(name, uid, parsed) => {
                let same_object = self.uids.get(&name) == Some(&uid);
                let item = match parsed {
                    Ok(item) => {
                        if self.bad.remove(&name).is_some() {
                            tracing::info!(kind = self.kind, %name, "kube object readable again");
                        }
                        Some(item)
                    }
                    Err(error) => {
                        if self.bad.get(&name) != Some(&error) {
                            if same_object {
                                tracing::warn!(kind = self.kind, %name, %error,
                                    "cannot read kube object; keeping its last good version");
                            } else {
                                tracing::warn!(kind = self.kind, %name, %error,
                                    "cannot read kube object; it has no good version to keep");
                            }
                            self.bad.insert(name.clone(), error);
                        }
                        // Only the same object's last good version: one deleted and created
                        // again under its name (seen as one change after a re-list) is another,
                        // and nothing of the old one may stand for it.
                        if same_object {
                            self.items.get(&name).cloned()
                        } else {
                            self.uids.remove(&name);
                            let gone = self.items.remove(&name).is_some();
                            if let Some(listing) = &mut self.listing {
                                listing.remove(&name);
                            }
                            return (gone && self.listing.is_none(), vec![]);
                        }
                    }
                };
                self.uids.insert(name.clone(), uid);
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
                self.uids.remove(&name);
                let gone: Vec<T> = self.items.remove(&name).into_iter().collect();
                (!gone.is_empty(), gone)
            }
            Change::InitDone => {
                let new = self.listing.take().unwrap_or_default();
                self.uids.retain(|name, _| new.contains_key(name));
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

/// One kind's stores, one per watch of it (a watch per namespace, or one for all): each
/// (re-)list replaces only its own store. No watch of a kind: nothing to wait for.
struct Shards<T> {
    stores: Vec<Store<T>>,
}

impl<T: Clone + PartialEq> Shards<T> {
    fn new(kind: &'static str, watches: usize) -> Self {
        Shards {
            stores: (0..watches).map(|_| Store::new(kind)).collect(),
        }
    }

    fn change(&mut self, shard: usize, change: Change<T>) -> (bool, Vec<T>) {
        match self.stores.get_mut(shard) {
            Some(store) => store.change(change),
            None => (false, vec![]),
        }
    }

    fn synced_once(&self) -> bool {
        self.stores.iter().all(|s| s.synced_once)
    }

    fn healthy(&self) -> bool {
        self.stores.iter().all(Store::healthy)
    }

    fn items(&self) -> BTreeMap<String, T> {
        let mut out = BTreeMap::new();
        for s in &self.stores {
            out.extend(s.items.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        out
    }
}

/// The reconcile task's state.
pub(crate) struct Reconciler {
    cfg: KubeSourceConfig,
    plane: Arc<DataPlane>,
    shared: Shared,
    rollouts: Shards<RolloutView>,
    splits: Shards<SplitView>,
    http_routes: Shards<HttpRouteView>,
    slices: Shards<SliceView>,
    services: Shards<ServiceView>,
    grants: Shards<GrantView>,
    gateways: Shards<GatewayView>,
    namespaces: Shards<NamespaceView>,
    secrets: Shards<SecretView>,
    deleted_rollout: Option<RolloutView>,
    /// For an HTTPRoute source: where the statuses of the table in force go (the writer).
    statuses: Option<tokio::sync::watch::Sender<Report>>,
    last_summary: Option<String>,
    last_warnings: Vec<String>,
    /// The certificates last installed in the data plane.
    installed: Option<Vec<super::certificates::ListenerCertificate>>,
}

impl Reconciler {
    pub fn new(
        cfg: KubeSourceConfig,
        plane: Arc<DataPlane>,
        shared: Shared,
        statuses: Option<tokio::sync::watch::Sender<Report>>,
    ) -> Self {
        let plan = Plan::of(&cfg);
        Reconciler {
            rollouts: Shards::new("Rollout", plan.rollouts.len()),
            splits: Shards::new("TrafficSplit", plan.splits.len()),
            http_routes: Shards::new("HTTPRoute", plan.http_routes.len()),
            slices: Shards::new("EndpointSlice", plan.backends.len()),
            services: Shards::new("Service", plan.backends.len()),
            grants: Shards::new("ReferenceGrant", plan.grants.len()),
            gateways: Shards::new("Gateway", usize::from(plan.gateway.is_some())),
            namespaces: Shards::new("Namespace", usize::from(plan.namespaces)),
            secrets: Shards::new("Secret", usize::from(plan.secrets.is_some())),
            cfg,
            plane,
            shared,
            deleted_rollout: None,
            statuses,
            last_summary: None,
            last_warnings: Vec::new(),
            installed: None,
        }
    }

    /// Returns whether a recompute is due.
    fn handle(&mut self, msg: Msg) -> bool {
        let changed = match msg {
            Msg::Rollout(i, c) => {
                let (changed, gone) = self.rollouts.change(i, c);
                if let Some(last) = gone.into_iter().last() {
                    self.deleted_rollout = Some(last);
                }
                changed
            }
            Msg::Split(i, c) => self.splits.change(i, c).0,
            Msg::Slice(i, c) => self.slices.change(i, c).0,
            Msg::Service(i, c) => self.services.change(i, c).0,
            Msg::HttpRoute(i, c) => self.http_routes.change(i, c).0,
            Msg::Grant(i, c) => self.grants.change(i, c).0,
            Msg::Gateway(i, c) => self.gateways.change(i, c).0,
            Msg::Namespace(i, c) => self.namespaces.change(i, c).0,
            Msg::Secret(i, c) => self.secrets.change(i, c).0,
        };
        self.update_sync();
        changed
    }

    /// (every watch has listed once, and none is failing now)
    fn sync(&self) -> (bool, bool) {
        let listed = self.rollouts.synced_once()
            && self.splits.synced_once()
            && self.http_routes.synced_once()
            && self.slices.synced_once()
            && self.services.synced_once()
            && self.grants.synced_once()
            && self.gateways.synced_once()
            && self.namespaces.synced_once()
            && self.secrets.synced_once();
        let healthy = self.rollouts.healthy()
            && self.splits.healthy()
            && self.http_routes.healthy()
            && self.slices.healthy()
            && self.services.healthy()
            && self.grants.healthy()
            && self.gateways.healthy()
            && self.namespaces.healthy()
            && self.secrets.healthy();
        (listed, healthy)
    }

    fn update_sync(&self) {
        let (_, ok) = self.sync();
        let mut s = lock(&self.shared);
        if ok || s.in_sync {
            // Entering or leaving sync: this moment is the last known good one.
            s.last_in_sync = Some((Instant::now(), SystemTime::now()));
        }
        s.in_sync = ok;
    }

    fn observed(&self) -> Observed {
        Observed {
            rollouts: self.rollouts.items(),
            deleted_rollout: self.deleted_rollout.clone(),
            splits: self.splits.items(),
            slices: self.slices.items(),
            services: self.services.items(),
            http_routes: self.http_routes.items(),
            gateway: self.gateways.items().into_values().next(),
            namespaces: self
                .namespaces
                .items()
                .into_values()
                .map(|n| (n.name.clone(), n))
                .collect(),
            grants: self.grants.items(),
            secrets: self.secrets.items(),
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
        if !self.sync().0 {
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
        self.install_certificates(&desired);
        let unchanged = lock(&self.shared).applied.as_ref() == Some(&desired.spec);
        if unchanged {
            // The table in force is this one: its statuses hold (a new generation that
            // changed nothing weir serves still gets its observedGeneration).
            self.publish(&desired);
            return self.problem(None);
        }
        match self.plane.apply(&desired.spec) {
            Ok(generation) => {
                if self.last_summary.as_ref() != Some(&desired.summary) {
                    tracing::info!(generation, "kube source: {}", desired.summary);
                    self.last_summary = Some(desired.summary.clone());
                }
                self.publish(&desired);
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

    /// The Gateway's certificates, when they changed: new handshakes use them at once.
    fn install_certificates(&mut self, desired: &super::reconcile::Desired) {
        let Some(certificates) = &desired.certificates else {
            return;
        };
        if self.installed.as_ref() == Some(certificates) {
            return;
        }
        self.plane.certificates.install(servable(certificates));
        tracing::info!(
            listeners = certificates.len(),
            "kube source: the Gateway's certificates installed"
        );
        self.installed = Some(certificates.clone());
    }

    /// Statuses only ever describe a table in force: sent after it is applied.
    fn publish(&self, desired: &super::reconcile::Desired) {
        if let Some(tx) = &self.statuses {
            let report = Report {
                routes: desired.statuses.clone(),
                gateway: desired.gateway.clone(),
            };
            tx.send_if_modified(|current| {
                let changed = *current != report;
                if changed {
                    *current = report;
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

/// An Api of `ar` in `namespace`, or across every namespace (None).
fn dynamic_api(
    client: &kube::Client,
    ar: &ApiResource,
    namespace: &Option<String>,
) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    }
}

/// A typed Api in `namespace`, or across every namespace (None).
fn typed_api<K>(client: &kube::Client, namespace: &Option<String>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    <K as Resource>::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Spawns the watches of `Plan::of(cfg)`, each feeding `tx`.
pub(crate) fn spawn_watches(
    client: kube::Client,
    cfg: &KubeSourceConfig,
    tx: mpsc::Sender<Msg>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let retry = (cfg.retry_initial, cfg.retry_max);
    let plan = Plan::of(cfg);
    let mut tasks = Vec::new();
    let dynamic = |group: &str, version: &str, kind: &str, plural: &str| ApiResource {
        group: group.to_string(),
        version: version.to_string(),
        api_version: format!("{group}/{version}"),
        kind: kind.to_string(),
        plural: plural.to_string(),
    };
    for (i, ns) in plan.rollouts.iter().enumerate() {
        let ar = dynamic("argoproj.io", "v1alpha1", "Rollout", "rollouts");
        let wc = match &cfg.weights {
            WeightSource::Rollout { name } => {
                watcher::Config::default().fields(&format!("metadata.name={name}"))
            }
            WeightSource::RolloutSelector { labels } => watcher::Config::default().labels(labels),
            _ => watcher::Config::default(),
        };
        let parse = |o: &DynamicObject| {
            let name = o.name_any();
            let mut view = RolloutView::parse(&name, &o.data)?;
            view.generation = o.metadata.generation.unwrap_or(0);
            Ok(view)
        };
        let api = dynamic_api(&client, &ar, ns);
        let wrap = move |c| Msg::Rollout(i, c);
        tasks.push(tokio::spawn(watch_loop(
            api,
            wc,
            retry,
            parse,
            wrap,
            tx.clone(),
        )));
    }
    if let WeightSource::TrafficSplit { name, version } = &cfg.weights {
        for (i, ns) in plan.splits.iter().enumerate() {
            let ar = dynamic(
                "split.smi-spec.io",
                version.as_str(),
                "TrafficSplit",
                "trafficsplits",
            );
            let wc = watcher::Config::default().fields(&format!("metadata.name={name}"));
            let parse = |o: &DynamicObject| {
                let mut view = SplitView::parse(&o.name_any(), &o.data)?;
                view.generation = o.metadata.generation.unwrap_or(0);
                Ok(view)
            };
            let api = dynamic_api(&client, &ar, ns);
            let wrap = move |c| Msg::Split(i, c);
            tasks.push(tokio::spawn(watch_loop(
                api,
                wc,
                retry,
                parse,
                wrap,
                tx.clone(),
            )));
        }
    }
    if let WeightSource::HttpRoutes(source) = &cfg.weights {
        let whole = |o: &DynamicObject| serde_json::to_value(o).map_err(|e| e.to_string());
        for (i, ns) in plan.http_routes.iter().enumerate() {
            // Every HTTPRoute: which are ours is decided on their parentRefs.
            let api = dynamic_api(&client, &super::httproute::api_resource(source.version), ns);
            let parse = move |o: &DynamicObject| HttpRouteView::parse(&whole(o)?);
            let wrap = move |c| Msg::HttpRoute(i, c);
            let wc = watcher::Config::default();
            tasks.push(tokio::spawn(watch_loop(
                api,
                wc,
                retry,
                parse,
                wrap,
                tx.clone(),
            )));
        }
        for (i, ns) in plan.grants.iter().enumerate() {
            let ar = gateway_group_resource(source.version, "ReferenceGrant", "referencegrants");
            let api = dynamic_api(&client, &ar, ns);
            let parse = move |o: &DynamicObject| GrantView::parse(&whole(o)?);
            let wrap = move |c| Msg::Grant(i, c);
            let wc = watcher::Config::default();
            tasks.push(tokio::spawn(watch_loop(
                api,
                wc,
                retry,
                parse,
                wrap,
                tx.clone(),
            )));
        }
        if let Some((ns, name)) = &plan.gateway {
            let api = dynamic_api(
                &client,
                &gateway_api_resource(source.version),
                &Some(ns.clone()),
            );
            let wc = watcher::Config::default().fields(&format!("metadata.name={name}"));
            let parse = move |o: &DynamicObject| GatewayView::parse(&whole(o)?);
            let wrap = |c| Msg::Gateway(0, c);
            tasks.push(tokio::spawn(watch_loop(
                api,
                wc,
                retry,
                parse,
                wrap,
                tx.clone(),
            )));
        }
        if plan.namespaces {
            let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
            let parse = |o: &k8s_openapi::api::core::v1::Namespace| {
                NamespaceView::parse(&serde_json::to_value(o).map_err(|e| e.to_string())?)
            };
            let wrap = |c| Msg::Namespace(0, c);
            let wc = watcher::Config::default();
            tasks.push(tokio::spawn(watch_loop(
                api,
                wc,
                retry,
                parse,
                wrap,
                tx.clone(),
            )));
        }
    }
    if let Some(ns) = &plan.secrets {
        let api: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), ns);
        let wrap = |c| Msg::Secret(0, c);
        let parse = |s: &_| Ok(SecretView::from_secret(s));
        let wc = watcher::Config::default();
        tasks.push(tokio::spawn(watch_loop(
            api,
            wc,
            retry,
            parse,
            wrap,
            tx.clone(),
        )));
    }
    for (i, ns) in plan.backends.iter().enumerate() {
        let api: Api<k8s_openapi::api::discovery::v1::EndpointSlice> = typed_api(&client, ns);
        let wc = watcher::Config::default().labels(SERVICE_NAME_LABEL);
        let wrap = move |c| Msg::Slice(i, c);
        let parse = |s: &_| Ok(SliceView::from_slice(s));
        tasks.push(tokio::spawn(watch_loop(
            api,
            wc,
            retry,
            parse,
            wrap,
            tx.clone(),
        )));
        let api: Api<k8s_openapi::api::core::v1::Service> = typed_api(&client, ns);
        let wrap = move |c| Msg::Service(i, c);
        let wc = watcher::Config::default();
        tasks.push(tokio::spawn(watch_loop(
            api,
            wc,
            retry,
            ServiceView::from_service,
            wrap,
            tx.clone(),
        )));
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(store: &mut Store<u32>, uid: &str, parsed: Result<u32, &str>) -> bool {
        let parsed = parsed.map_err(str::to_string);
        store
            .change(Change::Apply("ns/r".into(), Some(uid.into()), parsed))
            .0
    }

    #[test]
    fn a_bad_version_keeps_the_same_objects_last_good_one_only() {
        let mut store = Store::new("HTTPRoute");
        store.change(Change::Init);
        apply(&mut store, "uid-1", Ok(1));
        store.change(Change::InitDone);
        assert_eq!(store.items.get("ns/r"), Some(&1));
        // The same object, unreadable now: its last good version stays.
        assert!(!apply(&mut store, "uid-1", Err("bad filter")));
        assert_eq!(store.items.get("ns/r"), Some(&1));
        // Deleted and created again under its name, unreadable, seen in one re-list: the old
        // one's rules must not stand for it.
        store.change(Change::Init);
        apply(&mut store, "uid-2", Err("bad filter"));
        store.change(Change::InitDone);
        assert_eq!(store.items.get("ns/r"), None);
        // Outside a list: the same, at once.
        apply(&mut store, "uid-3", Ok(3));
        assert_eq!(store.items.get("ns/r"), Some(&3));
        assert!(apply(&mut store, "uid-4", Err("bad filter")));
        assert_eq!(store.items.get("ns/r"), None);
        // And after a delete, a bad re-creation has nothing to keep.
        apply(&mut store, "uid-5", Ok(5));
        store.change(Change::Delete("ns/r".into()));
        apply(&mut store, "uid-5", Err("bad filter"));
        assert_eq!(store.items.get("ns/r"), None);
    }
}
