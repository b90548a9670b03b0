//! Writes HTTPRoute status back — from one elected replica only (`lease.rs` decides,
//! `route_status.rs` merges; this is their I/O).
//!
//! Every replica watches the one Lease (a watch, not polling: a thousand sidecars cost the API
//! server a thousand idle watches, not a thousand requests a second). The holder renews it every
//! third of its duration; the others try to take it only once it has expired. The holder
//! writes a route's status when what weir serves for it changed (its generation, its
//! conditions), after reading the route to keep other controllers' entries: steady state, no
//! write at all; per change, one GET and one PUT per route that changed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use tokio::sync::watch;

use super::gateway::RouteStatus;
use super::gateway_status::{merged_status, GatewayReport};
use super::lease::{decide, LeaseView, Step};
use super::route_status::{merged_parents, names_served_parent};
use crate::config::HttpRoutesSource;

/// What the table in force says of the objects weir reports on.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Report {
    pub routes: Vec<RouteStatus>,
    pub gateway: Option<GatewayReport>,
}

/// What the writer needs to know.
#[derive(Clone, Debug)]
pub(crate) struct StatusConfig {
    pub namespace: String,
    pub controller: String,
    pub lease_name: String,
    pub lease_duration: Duration,
    /// This replica's name in the Lease.
    pub identity: String,
    pub routes: ApiResource,
    pub gateways: ApiResource,
    /// What this weir serves: whose entries in a route's status are its own.
    pub source: HttpRoutesSource,
}

/// This replica's identity: the pod's name where the Downward API or the hostname gives it,
/// and the process id (two weirs on one host are two candidates).
pub(crate) fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "weir".to_string());
    format!("{host}-{}", std::process::id())
}

fn view(lease: &Lease) -> LeaseView {
    let spec = lease.spec.clone().unwrap_or_default();
    LeaseView {
        holder: spec.holder_identity,
        renewed: spec.renew_time.map(|t| t.0),
        duration: Duration::from_secs(
            spec.lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .unwrap_or(15),
        ),
        resource_version: lease.metadata.resource_version.clone(),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

/// Runs until the statuses' sender is dropped (the source stopped).
pub(crate) async fn run(
    client: kube::Client,
    cfg: StatusConfig,
    mut statuses: watch::Receiver<Report>,
) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), &cfg.namespace);
    let mut lease_events = kube::runtime::watcher(
        leases.clone(),
        watcher::Config::default().fields(&format!("metadata.name={}", cfg.lease_name)),
    )
    .default_backoff()
    .boxed();
    let renew_every = (cfg.lease_duration / 3).max(Duration::from_millis(100));
    let mut tick = tokio::time::interval(renew_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

    let mut lease: Option<LeaseView> = None;
    let mut leader = false;
    let mut dirty = true;
    // Routes weir wrote an entry for, so that one no longer attached gets it removed.
    let mut written: BTreeSet<(String, String)> = BTreeSet::new();
    let mut gateway_written: Option<GatewayReport> = None;
    loop {
        tokio::select! {
            event = lease_events.next() => match event {
                Some(Ok(Event::Apply(l) | Event::InitApply(l))) => lease = Some(view(&l)),
                Some(Ok(Event::Delete(_))) => lease = None,
                Some(Ok(_)) => {}
                Some(Err(e)) => tracing::debug!(error = %e, "lease watch failed; retrying"),
                None => return,
            },
            changed = statuses.changed() => {
                if changed.is_err() {
                    return;
                }
                dirty = true;
            }
            _ = tick.tick() => {}
        }

        let now = Timestamp::now();
        let was_leader = leader;
        leader = match decide(lease.as_ref(), &cfg.identity, now) {
            Step::Follow { .. } => false,
            Step::Renew => {
                let due = lease
                    .as_ref()
                    .and_then(|l| l.renewed)
                    .and_then(|r| r.checked_add(renew_every).ok())
                    .is_none_or(|at| at <= now);
                if due {
                    hold(&leases, &cfg, now, &mut lease).await
                } else {
                    true
                }
            }
            Step::Create | Step::Take => hold(&leases, &cfg, now, &mut lease).await,
        };
        if leader != was_leader {
            tracing::info!(
                identity = %cfg.identity,
                lease = %cfg.lease_name,
                "HTTPRoute status: {}",
                if leader { "this replica writes it (lease held)" } else { "another replica writes it" }
            );
            // A new holder checks every route once: the last one may have left work undone.
            dirty |= leader;
            gateway_written = None;
        }
        if leader && dirty {
            let current = statuses.borrow().clone();
            dirty = !write_all(&client, &cfg, &current.routes, &mut written).await;
            // The Gateway is read and written only when what weir says of it changed.
            let gateway = current.gateway.clone().map(with_pod_ip);
            if let Some(gateway) = gateway
                .as_ref()
                .filter(|g| gateway_written.as_ref() != Some(g))
            {
                if write_gateway(&client, &cfg, gateway).await {
                    gateway_written = Some(gateway.clone());
                } else {
                    dirty = true;
                }
            }
        }
    }
}

/// Creates, renews or takes the Lease for this replica; whether it holds it afterwards.
async fn hold(
    leases: &Api<Lease>,
    cfg: &StatusConfig,
    now: Timestamp,
    lease: &mut Option<LeaseView>,
) -> bool {
    let seen = lease.as_ref();
    let ours = seen.and_then(|l| l.holder.as_deref()) == Some(cfg.identity.as_str());
    let transitions = seen.map_or(0, |l| l.transitions) + i32::from(seen.is_some() && !ours);
    let object = Lease {
        metadata: ObjectMeta {
            name: Some(cfg.lease_name.clone()),
            namespace: Some(cfg.namespace.clone()),
            resource_version: seen.and_then(|l| l.resource_version.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(cfg.identity.clone()),
            lease_duration_seconds: i32::try_from(cfg.lease_duration.as_secs().max(1)).ok(),
            renew_time: Some(MicroTime(now)),
            acquire_time: (!ours).then_some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }),
    };
    let answer = match lease {
        None => leases.create(&PostParams::default(), &object).await,
        // With the resourceVersion seen: if another replica got there first, 409.
        Some(_) => {
            leases
                .replace(&cfg.lease_name, &PostParams::default(), &object)
                .await
        }
    };
    match answer {
        Ok(stored) => {
            *lease = Some(view(&stored));
            true
        }
        Err(e) => {
            tracing::debug!(error = %e, "lease not taken or renewed");
            false
        }
    }
}

/// Writes every route whose status differs; true when nothing is left to do.
async fn write_all(
    client: &kube::Client,
    cfg: &StatusConfig,
    statuses: &[RouteStatus],
    written: &mut BTreeSet<(String, String)>,
) -> bool {
    let mut by_route: BTreeMap<(String, String), Vec<RouteStatus>> = BTreeMap::new();
    for s in statuses {
        by_route
            .entry((s.namespace.clone(), s.name.clone()))
            .or_default()
            .push(s.clone());
    }
    // Routes no longer attached: weir's entries go.
    for gone in written.iter() {
        by_route.entry(gone.clone()).or_default();
    }
    let now = Timestamp::now().to_string();
    let mut all_done = true;
    for ((namespace, name), ours) in by_route {
        let routes: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &namespace, &cfg.routes);
        let serves = |p: &super::httproute::ParentRef| {
            names_served_parent(&cfg.source, &cfg.namespace, &namespace, p)
        };
        let key = (namespace.clone(), name.clone());
        let object = match routes.get_opt(&name).await {
            Ok(Some(o)) => o,
            Ok(None) => {
                written.remove(&key);
                continue;
            }
            Err(e) => {
                tracing::warn!(route = %format!("{namespace}/{name}"), error = %e, "cannot read HTTPRoute for its status; will retry");
                all_done = false;
                continue;
            }
        };
        let Ok(mut value) = serde_json::to_value(&object) else {
            continue;
        };
        // Statuses of a route since deleted are not written on the one now under its name:
        // that one's own come with the table that serves it.
        let uid = value["metadata"]["uid"].as_str().unwrap_or("");
        let stale = !ours.is_empty() && ours.iter().all(|s| !s.uid.is_empty() && s.uid != uid);
        if stale {
            continue;
        }
        let Some(parents) = merged_parents(&value, &ours, &cfg.controller, &now, serves) else {
            if ours.is_empty() {
                written.remove(&key);
            } else {
                written.insert(key);
            }
            continue;
        };
        value["status"]["parents"] = parents;
        let Ok(updated) = serde_json::from_value::<DynamicObject>(value) else {
            continue;
        };
        match routes
            .replace_status(&name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => {
                tracing::debug!(route = %name, "HTTPRoute status written");
                if ours.is_empty() {
                    written.remove(&key);
                } else {
                    written.insert(key);
                }
            }
            // A conflict (someone wrote in between) or an outage: again on the next tick.
            Err(e) => {
                tracing::warn!(route = %format!("{}/{name}", key.0), error = %e, "HTTPRoute status not written; will retry");
                all_done = false;
            }
        }
    }
    all_done
}

/// Writes the Gateway's status when it differs; true when nothing is left to do.
async fn write_gateway(client: &kube::Client, cfg: &StatusConfig, report: &GatewayReport) -> bool {
    let gateways: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &report.namespace, &cfg.gateways);
    let id = format!("{}/{}", report.namespace, report.name);
    let object = match gateways.get_opt(&report.name).await {
        Ok(Some(o)) => o,
        Ok(None) => return true,
        Err(e) => {
            tracing::warn!(gateway = %id, error = %e, "cannot read Gateway for its status; will retry");
            return false;
        }
    };
    let Ok(mut value) = serde_json::to_value(&object) else {
        return true;
    };
    let Some(status) = merged_status(&value, report, &Timestamp::now().to_string()) else {
        return true;
    };
    value["status"] = status;
    let Ok(updated) = serde_json::from_value::<DynamicObject>(value) else {
        return true;
    };
    match gateways
        .replace_status(&report.name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => {
            tracing::debug!(gateway = %id, "Gateway status written");
            true
        }
        Err(e) => {
            tracing::warn!(gateway = %id, error = %e, "Gateway status not written; will retry");
            false
        }
    }
}

/// With no address configured nor asked for by the Gateway: the pod's own (`POD_IP`, from
/// the Downward API), where a Service of type LoadBalancer or a node port leads.
fn with_pod_ip(mut report: GatewayReport) -> GatewayReport {
    if report.addresses.is_empty() {
        if let Ok(ip) = std::env::var("POD_IP") {
            if !ip.is_empty() {
                report.addresses.push(ip);
            }
        }
    }
    report
}
