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

pub use body::{BoxError, RequestBody};
pub use connect::Sender;
pub use endpoint::{Endpoint, Lease, RawLease, Release, SendError};
pub use pooled_body::PooledBody;
pub use raw::RawConn;
pub use received::Received;
pub use tls::provider as tls_provider;

use crate::stats::Metrics;
use crate::table_spec::{BackendSpec, Http2PoolSpec, UpstreamProtocol};

/// Everything that makes two endpoints interchangeable: same key, same pool.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EndpointKey {
    pub address: String,
    pub protocol: UpstreamProtocol,
    pub tls: Option<(String, Option<std::path::PathBuf>)>,
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    pub idle_timeout: Duration,
    /// HTTP/1 connections kept idle at most.
    pub max_idle: usize,
    /// The HTTP/2 pool's settings (HTTP/2 endpoints only).
    pub http2: Option<Http2PoolSpec>,
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
        let tls = spec.tls.as_ref().map(|t| {
            let name = t
                .server_name
                .clone()
                .unwrap_or_else(|| crate::authority::strip_port(address).to_string());
            (name, t.ca_file.clone())
        });
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
