//! Upstream endpoints and their connection pools. Pools outlive routing tables: a table swap
//! that keeps an address keeps its warm connections.

mod body;
mod connect;
mod endpoint;
mod h2pool;
mod idle;
mod pooled_body;
mod raw;
mod received;
pub(crate) mod tls;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

pub use body::{BoxError, RequestBody, TeeTx};
pub use connect::Sender;
pub use endpoint::{Endpoint, Lease, RawLease, Release, SendError};
pub use pooled_body::PooledBody;
pub use raw::RawConn;
pub use received::Received;
pub use tls::provider as tls_provider;

use crate::identity::Pattern;
use crate::stats::Metrics;
use crate::table_spec::{
    BackendSpec, ClientCertSpec, Http2PoolSpec, UpstreamProtocol, UpstreamTlsSpec,
};

/// Everything that makes two endpoints interchangeable: same key, same pool.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EndpointKey {
    pub address: String,
    pub protocol: UpstreamProtocol,
    pub tls: Option<TlsKey>,
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    pub idle_timeout: Duration,
    /// HTTP/1 connections kept idle at most.
    pub max_idle: usize,
    /// The HTTP/2 pool's settings (HTTP/2 endpoints only).
    pub http2: Option<Http2PoolSpec>,
}

/// What makes two TLS upstreams' settings the same: the name checked, the CA, the certificate
/// presented (with a digest of its files' contents, so a reload after they were rotated makes
/// a new pool, and the old one finishes what it carries), and the identities admitted.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TlsKey {
    pub server_name: String,
    pub ca_file: Option<std::path::PathBuf>,
    pub client_cert: Option<(ClientCertSpec, u64)>,
    pub identities: Vec<Pattern>,
}

impl TlsKey {
    fn of(address: &str, spec: &UpstreamTlsSpec) -> Result<Self, String> {
        let server_name = spec
            .server_name
            .clone()
            .unwrap_or_else(|| crate::authority::strip_port(address).to_string());
        let client_cert = match &spec.client_cert {
            None => None,
            Some(files) => {
                let mut digest = std::collections::hash_map::DefaultHasher::new();
                for file in [&files.cert_file, &files.key_file] {
                    let bytes = std::fs::read(file)
                        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
                    std::hash::Hash::hash(&bytes, &mut digest);
                }
                Some((files.clone(), std::hash::Hasher::finish(&digest)))
            }
        };
        let identities = spec
            .identities
            .iter()
            .map(|text| Pattern::parse(text).map_err(|why| format!("identity {text:?}: {why}")))
            .collect::<Result<_, _>>()?;
        Ok(TlsKey {
            server_name,
            ca_file: spec.ca_file.clone(),
            client_cert,
            identities,
        })
    }
}

/// Shared by every table: hands out the pool of an address, creating it on first use.
pub struct Upstreams {
    pools: Mutex<HashMap<EndpointKey, Weak<Endpoint>>>,
    metrics: Arc<Metrics>,
    /// Each endpoint keeps a pool per worker (`crate::worker`).
    workers: usize,
}

impl Upstreams {
    pub fn new(metrics: Arc<Metrics>, workers: usize) -> Self {
        Upstreams {
            pools: Mutex::default(),
            metrics,
            workers,
        }
    }

    /// Called at table compile time, never per request.
    pub fn endpoint(&self, address: &str, spec: &BackendSpec) -> Result<Arc<Endpoint>, String> {
        let tls = match &spec.tls {
            None => None,
            Some(t) => Some(TlsKey::of(address, t)?),
        };
        let key = EndpointKey {
            address: address.to_string(),
            protocol: spec.protocol,
            tls,
            connect_timeout: spec.connect_timeout,
            response_timeout: spec.response_timeout,
            idle_timeout: spec.pool_idle_timeout,
            max_idle: spec.pool_max_idle,
            http2: (spec.protocol == UpstreamProtocol::Http2).then(|| spec.http2.clone()),
        };
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = pools.get(&key).and_then(Weak::upgrade) {
            return Ok(existing);
        }
        pools.retain(|_, weak| weak.strong_count() > 0);
        let metrics = self.metrics.upstream_pool(address);
        let http2 = key.http2.clone().unwrap_or_default();
        let endpoint = Arc::new(Endpoint::new(key.clone(), http2, metrics, self.workers)?);
        pools.insert(key, Arc::downgrade(&endpoint));
        Ok(endpoint)
    }
}

impl Upstreams {
    /// Closes idle pooled connections past their idle timeout, over every endpoint in use.
    pub fn evict_idle(&self) -> usize {
        let endpoints: Vec<Arc<Endpoint>> = {
            let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
            pools.values().filter_map(Weak::upgrade).collect()
        };
        endpoints.iter().map(|e| e.evict_idle()).sum()
    }
}
