//! The one writer of the table while rollouts own it: the config's table with every rollout's
//! traffic on the route it drives, put in force whole. Config reloads come through here too, so
//! a reload never undoes a rollout's weight, and one rollout's change never undoes another's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use weir_proxy::table::spec::TableSpec;
use weir_proxy::table::TableErrors;
use weir_proxy::DataPlane;

use super::compose::{apply, revision};
use super::machine::Traffic;

pub struct Applier {
    plane: Arc<DataPlane>,
    inner: Mutex<Composed>,
}

struct Composed {
    base: TableSpec,
    /// Per driven route: its rollout's traffic, and where the canary's revision is told (a new
    /// one restarts that rollout's steps).
    routes: BTreeMap<String, (Traffic, watch::Sender<String>)>,
}

impl Composed {
    /// The table to serve: `base` with each route's traffic, `changed` standing in for its own.
    fn table(&self, base: &TableSpec, changed: Option<(&str, &Traffic)>) -> TableSpec {
        let mut table = base.clone();
        for (route, (traffic, _)) in &self.routes {
            let traffic = match changed {
                Some((r, t)) if r == route => t,
                _ => traffic,
            };
            apply(&mut table, route, traffic);
        }
        table
    }
}

impl Applier {
    /// No route driven yet: `base` is what a rollout's traffic will be composed onto.
    pub fn new(plane: Arc<DataPlane>, base: TableSpec) -> Arc<Applier> {
        Arc::new(Applier {
            plane,
            inner: Mutex::new(Composed {
                base,
                routes: BTreeMap::new(),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Composed> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A rollout takes `route`: its canary's revision now, and where later ones are told.
    /// Errors when another rollout drives it already.
    pub(super) fn drive(&self, route: &str) -> Result<watch::Receiver<String>, String> {
        let mut inner = self.lock();
        if inner.routes.contains_key(route) {
            return Err(format!(
                "route {route:?} is driven by another rollout already"
            ));
        }
        let (tx, rx) = watch::channel(revision(&inner.base, route));
        inner
            .routes
            .insert(route.to_string(), (Traffic::default(), tx));
        Ok(rx)
    }

    /// A new config table (a reload). Refused tables leave everything as it was.
    pub fn set_base(&self, base: TableSpec) -> Result<u64, TableErrors> {
        let mut inner = self.lock();
        let generation = self.plane.apply(&inner.table(&base, None))?;
        for (route, (_, revisions)) in &inner.routes {
            let rev = revision(&base, route);
            revisions.send_if_modified(|r| {
                let changed = *r != rev;
                *r = rev;
                changed
            });
        }
        inner.base = base;
        Ok(generation)
    }

    /// A rollout's new traffic on its route.
    pub(super) fn set_traffic(&self, route: &str, traffic: Traffic) -> Result<u64, TableErrors> {
        let mut inner = self.lock();
        let table = inner.table(&inner.base, Some((route, &traffic)));
        let generation = self.plane.apply(&table)?;
        if let Some((t, _)) = inner.routes.get_mut(route) {
            *t = traffic;
        }
        Ok(generation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_proxy::table::spec::{BackendSpec, RouteSpec};

    fn base(canary: &str) -> TableSpec {
        let route = |name: &str, canary: &str| {
            let mut r = RouteSpec::new(name, BackendSpec::new(["127.0.0.1:1"]));
            r.set_canary(Some(BackendSpec::new([canary])));
            r.hosts = vec![format!("{name}.example.com")];
            r
        };
        TableSpec {
            routes: vec![route("web", canary), route("api", "127.0.0.1:3")],
        }
    }

    fn weight(plane: &DataPlane, route: &str) -> u16 {
        let table = plane.table.load();
        table
            .spec()
            .routes
            .iter()
            .find(|r| r.name == route)
            .map_or(0, |r| r.canary_weight_bp())
    }

    fn at(weight_bp: u16) -> Traffic {
        Traffic {
            weight_bp,
            ..Traffic::default()
        }
    }

    #[test]
    fn each_rollout_moves_its_own_route_and_a_reload_keeps_both() {
        let plane = DataPlane::new();
        let applier = Applier::new(plane.clone(), base("127.0.0.1:2"));
        let mut web = applier.drive("web").unwrap();
        let api = applier.drive("api").unwrap();
        let again = applier.drive("web").unwrap_err();
        assert!(again.contains("driven by another rollout"), "{again}");

        applier.set_traffic("web", at(2000)).unwrap();
        applier.set_traffic("api", at(5000)).unwrap();
        assert_eq!((weight(&plane, "web"), weight(&plane, "api")), (2000, 5000));
        applier.set_traffic("web", at(0)).unwrap();
        assert_eq!((weight(&plane, "web"), weight(&plane, "api")), (0, 5000));

        // A reload: both weights stay; only the route whose canary changed hears of it.
        applier.set_traffic("web", at(3000)).unwrap();
        let before = web.borrow_and_update().clone();
        applier.set_base(base("127.0.0.1:9")).unwrap();
        assert_eq!((weight(&plane, "web"), weight(&plane, "api")), (3000, 5000));
        assert!(web.has_changed().unwrap_or(false));
        assert_ne!(*web.borrow(), before);
        assert!(!api.has_changed().unwrap_or(true));
    }
}
