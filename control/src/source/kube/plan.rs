//! Which watches a Kubernetes source runs — a pure decision from its config: for each kind,
//! the namespaces to watch, one watch each (None: every namespace). The spawning
//! (`watch::spawn_watches`) and the reconciler's stores follow the same plan.

use crate::config::{HttpRouteParents, KubeSourceConfig, WatchedNamespaces, WeightSource};

/// Which watches a source runs: for each kind, the namespaces (None: every namespace) — one
/// watch each. Both the spawning and the reconciler's stores follow it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    pub rollouts: Vec<Option<String>>,
    pub splits: Vec<Option<String>>,
    pub http_routes: Vec<Option<String>>,
    pub grants: Vec<Option<String>>,
    /// Services and their EndpointSlices.
    pub backends: Vec<Option<String>>,
    /// The Gateway an edge weir serves: (namespace, name).
    pub gateway: Option<(String, String)>,
    /// Namespaces' labels, for listeners that select routes by them.
    pub namespaces: bool,
    /// The Secrets of the Gateway's namespace (its HTTPS listeners' certificates).
    pub secrets: Option<String>,
}

impl Plan {
    pub fn of(cfg: &KubeSourceConfig) -> Self {
        let own = vec![Some(cfg.namespace.clone())];
        match &cfg.weights {
            WeightSource::Rollout { .. } | WeightSource::RolloutSelector { .. } => Plan {
                rollouts: own.clone(),
                backends: own,
                ..Plan::default()
            },
            WeightSource::TrafficSplit { .. } => Plan {
                splits: own.clone(),
                backends: own,
                ..Plan::default()
            },
            WeightSource::HttpRoutes(source) => {
                let scopes: Vec<Option<String>> = match &source.namespaces {
                    WatchedNamespaces::All => vec![None],
                    WatchedNamespaces::Only(list) => list.iter().cloned().map(Some).collect(),
                };
                let gateway = match &source.parents {
                    HttpRouteParents::Gateway { name, .. } => Some((
                        source.gateway_namespace(&cfg.namespace).to_string(),
                        name.clone(),
                    )),
                    HttpRouteParents::Services(_) => None,
                };
                Plan {
                    http_routes: scopes.clone(),
                    grants: scopes.clone(),
                    backends: scopes,
                    namespaces: gateway.is_some(),
                    secrets: gateway.as_ref().map(|(ns, _)| ns.clone()),
                    gateway,
                    ..Plan::default()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{GatewayVersion, HttpRoutesSource};
    use std::time::Duration;
    use weir_proxy::table::spec::TableSpec;

    fn source(parents: HttpRouteParents, namespaces: WatchedNamespaces) -> KubeSourceConfig {
        let source = HttpRoutesSource {
            parents,
            controller_name: "example.com/weir".into(),
            version: GatewayVersion::V1,
            lease_name: "l".into(),
            lease_duration: Duration::from_secs(15),
            namespaces,
            addresses: Vec::new(),
        };
        KubeSourceConfig::new(
            "infra",
            WeightSource::HttpRoutes(source),
            "",
            TableSpec::default(),
        )
    }

    #[test]
    fn an_edge_weir_watches_its_gateway_and_what_may_attach_to_it() {
        let gateway = HttpRouteParents::Gateway {
            name: "gw".into(),
            namespace: Some("gateways".into()),
            section_name: None,
        };
        let plan = Plan::of(&source(gateway.clone(), WatchedNamespaces::All));
        assert_eq!(plan.http_routes, [None]);
        assert_eq!(plan.backends, [None]);
        assert_eq!(plan.gateway, Some(("gateways".into(), "gw".into())));
        assert_eq!(plan.secrets.as_deref(), Some("gateways"));
        assert!(plan.namespaces && plan.rollouts.is_empty());
        let only = WatchedNamespaces::Only(vec!["a".into(), "b".into()]);
        let plan = Plan::of(&source(gateway, only));
        assert_eq!(plan.grants, [Some("a".into()), Some("b".into())]);
    }

    #[test]
    fn a_sidecar_watches_no_gateway_nor_secrets() {
        let services = HttpRouteParents::Services(vec!["shop".into()]);
        let only = WatchedNamespaces::Only(vec!["infra".into()]);
        let plan = Plan::of(&source(services, only));
        assert_eq!(plan.http_routes, [Some("infra".into())]);
        assert_eq!(
            (plan.gateway, plan.secrets, plan.namespaces),
            (None, None, false)
        );
    }
}
