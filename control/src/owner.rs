//! One owner of the routing table in force.
//!
//! Three sources can decide the table, and for the life of a process exactly one does, chosen
//! from the config when weir starts:
//!
//! 1. `rollouts:` (or `rollout:`) — weir's own rollout engine: the config's table, with each
//!    rollout's weight, header routes and mirror on the route it drives (one `Applier` for all);
//! 2. `kube:` — the Kubernetes source: the config's table, with the followed route's endpoints
//!    and weights from the cluster (swapped in once its watches have listed);
//! 3. neither — the config file's table as written.
//!
//! (The config refuses `rollout:` and `kube:` together.) A reload hands the owner a new base
//! table, checked by the data plane before anything changes; the owner decides what goes in
//! force. A reload that would change who owns the table is refused — it takes a restart — so two
//! writers never race over one table. A new source (Gateway API routes) is one more variant
//! here, not another branch in the binary.

use std::sync::{Arc, Mutex};

use weir_proxy::DataPlane;

use crate::analysis::ProviderContext;
use crate::config::{Config, RolloutConfig};
use crate::notify::{Notifier, WebhookConfig};
use crate::rollout::setup::prepare;
use crate::rollout::{Applier, RolloutHandle};
use crate::source::kube::KubeHandle;

/// The Kubernetes source as the owner holds it: replaced on every reload, read by /ready.
pub type SharedKube = Arc<Mutex<KubeHandle>>;

enum Owner {
    File,
    Rollouts(Arc<Applier>, Vec<RolloutHandle>),
    Kube(SharedKube),
}

/// Which source owns the table; a config's sections choose it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    File,
    Rollout,
    Kube,
}

impl Kind {
    fn of(config: &Config) -> Kind {
        match (config.rollouts.is_empty(), &config.kube) {
            (false, _) => Kind::Rollout,
            (true, Some(_)) => Kind::Kube,
            (true, None) => Kind::File,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::File => "the config file",
            Kind::Rollout => "the rollouts (`rollouts:`)",
            Kind::Kube => "the Kubernetes source (`kube:`)",
        }
    }
}

impl Owner {
    fn kind(&self) -> Kind {
        match self {
            Owner::File => Kind::File,
            Owner::Rollouts(..) => Kind::Rollout,
            Owner::Kube(_) => Kind::Kube,
        }
    }
}

pub struct TableOwner {
    plane: Arc<DataPlane>,
    owner: Owner,
    /// The rollouts' sections they started with: changing them takes a restart.
    rollout_config: Vec<RolloutConfig>,
    /// The webhooks it started with: the same.
    notifications: Vec<WebhookConfig>,
}

impl TableOwner {
    /// Puts the config's table in force through the owner its sections choose. Errors name the
    /// config file.
    pub async fn start(config: &Config, plane: Arc<DataPlane>) -> Result<TableOwner, String> {
        let source = config.source_file.display();
        let owner = if !config.rollouts.is_empty() {
            let applier = Applier::new(plane.clone(), config.table.clone());
            let notifier = Arc::new(Notifier::start(&config.notifications, &plane.metrics));
            let ctx = Arc::new(ProviderContext::new(plane.live.clone()));
            let mut handles: Vec<RolloutHandle> = Vec::new();
            for rc in &config.rollouts {
                let (plan, mut settings) =
                    prepare(rc, &config.table).map_err(|e| format!("{source}: {e}"))?;
                let name = &plan.rollout.name;
                if handles.iter().any(|h| h.name() == name) {
                    return Err(format!(
                        "{source}: two rollouts are named {name:?} (in {}): give each Rollout its own name",
                        rc.manifests
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                settings.notifier = notifier.clone();
                if settings.state_file.is_none() {
                    settings.state_file = config
                        .state_dir
                        .as_ref()
                        .map(|d| d.join(format!("{name}.json")));
                }
                let handle = crate::rollout::start(
                    plan,
                    settings,
                    applier.clone(),
                    plane.clone(),
                    ctx.clone(),
                )
                .map_err(|e| format!("{source}: {e}"))?;
                handles.push(handle);
            }
            // A webhook for a rollout that is not there would wait for events that never come.
            for (i, hook) in config.notifications.iter().enumerate() {
                for wanted in &hook.rollouts {
                    if !handles.iter().any(|h| h.name() == wanted) {
                        let names: Vec<&str> = handles.iter().map(|h| h.name()).collect();
                        return Err(format!(
                            "{source}: notifications[{i}].rollouts: no rollout is named {wanted:?} (there are: {})",
                            names.join(", ")
                        ));
                    }
                }
            }
            Owner::Rollouts(applier, handles)
        } else if let Some(cfg) = &config.kube {
            // The file's table serves until the cluster has been listed.
            plane
                .apply(&config.table)
                .map_err(|errors| format!("{source}: the routing table was refused:\n{errors}"))?;
            let handle = crate::source::kube::start(cfg.clone(), plane.clone())
                .await
                .map_err(|e| format!("{source}: kube: {e}"))?;
            Owner::Kube(Arc::new(Mutex::new(handle)))
        } else {
            plane
                .apply(&config.table)
                .map_err(|errors| format!("{source}: the routing table was refused:\n{errors}"))?;
            Owner::File
        };
        Ok(TableOwner {
            plane,
            owner,
            rollout_config: config.rollouts.clone(),
            notifications: config.notifications.clone(),
        })
    }

    /// The rollouts, in the config's order (none unless they own the table).
    pub fn rollouts(&self) -> &[RolloutHandle] {
        match &self.owner {
            Owner::Rollouts(_, handles) => handles,
            _ => &[],
        }
    }

    /// The one rollout, when there is exactly one.
    pub fn rollout(&self) -> Option<&RolloutHandle> {
        match self.rollouts() {
            [one] => Some(one),
            _ => None,
        }
    }

    pub fn kube(&self) -> Option<SharedKube> {
        match &self.owner {
            Owner::Kube(handle) => Some(handle.clone()),
            _ => None,
        }
    }

    /// A reloaded config's table: checked, then put in force by the owner. Returns the
    /// generation in force; on an error nothing changed.
    pub fn reload(&self, config: &Config) -> Result<u64, String> {
        let source = config.source_file.display();
        let (owner, wanted) = (self.owner.kind(), Kind::of(config));
        if wanted != owner {
            return Err(format!(
                "{source}: the table is owned by {}, and this config would hand it to {}: that takes a restart",
                owner.name(),
                wanted.name()
            ));
        }
        if config.rollouts != self.rollout_config {
            tracing::warn!("the rollouts' sections changed in the config: that takes a restart");
        }
        if config.notifications != self.notifications {
            tracing::warn!("the notifications section changed in the config: that takes a restart");
        }
        // Checked first, so a table the data plane refuses changes nothing.
        self.plane
            .validate(&config.table)
            .map_err(|errors| format!("{source}: {errors}"))?;
        match &self.owner {
            Owner::File => self.plane.apply(&config.table).map_err(|e| e.to_string()),
            // Through the rollouts' applier, so a reload keeps each rollout's weight.
            Owner::Rollouts(applier, _) => applier
                .set_base(config.table.clone())
                .map_err(|e| e.to_string()),
            // Restarted on the new base: it swaps the table in once its watches have listed,
            // and the old table serves meanwhile.
            Owner::Kube(slot) => {
                let Some(cfg) = &config.kube else {
                    return Err(format!("{source}: kube: the section is gone"));
                };
                let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                let fresh = slot
                    .restart(cfg.clone())
                    .map_err(|e| format!("kube: {e}"))?;
                *slot = fresh;
                Ok(self.plane.table.load().generation())
            }
        }
        .map_err(|e| format!("{source}: {e}"))
    }
}
