//! The routing table: immutable once compiled, replaced whole through `TableHandle`.

mod backend;
mod compile;
mod error;
mod fields;
mod handle;
mod matcher;
mod route;
pub mod spec;
mod split;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

pub use backend::{Backend, BackendStats};
pub use compile::Compiler;
pub use error::{TableError, TableErrors};
pub use fields::Fields;
pub use handle::TableHandle;
pub use matcher::normalize_host;
pub(crate) use matcher::strip_port;
pub use route::Route;
pub use split::sticky_bucket;

use spec::TableSpec;

/// Exact hosts → candidate routes. Keyed by FNV-1a rather than SipHash: the keys come from the
/// config, so a client's Host can only probe a fixed table, never grow a chain.
type HostMap = HashMap<String, Vec<usize>, BuildHasherDefault<Fnv1a>>;

#[derive(Clone, Copy)]
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub struct RouteTable {
    generation: u64,
    spec: TableSpec,
    routes: Vec<Arc<Route>>,
    /// Host → candidate routes, longest path prefix first.
    exact: HostMap,
    /// `.suffix` → candidates; longest suffix first.
    wildcard: Vec<(String, Vec<usize>)>,
    /// Routes with no host rule.
    any: Vec<usize>,
}

impl RouteTable {
    /// A table with no routes: every request gets 404. What serves before the first config.
    pub fn empty() -> Self {
        RouteTable {
            generation: 0,
            spec: TableSpec::default(),
            routes: Vec::new(),
            exact: HostMap::default(),
            wildcard: Vec::new(),
            any: Vec::new(),
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn spec(&self) -> &TableSpec {
        &self.spec
    }

    pub fn routes(&self) -> &[Arc<Route>] {
        &self.routes
    }

    pub fn route(&self, name: &str) -> Option<&Arc<Route>> {
        self.routes.iter().find(|r| &*r.name == name)
    }

    /// Exact host first, then the longest wildcard suffix, then host-less routes; within each,
    /// the longest path prefix whose header rules match.
    pub fn find<F: Fields + ?Sized>(
        &self,
        host: Option<&str>,
        path: &str,
        headers: &F,
    ) -> Option<&Arc<Route>> {
        if let Some(host) = host {
            let host = normalize_host(host);
            if let Some(found) = self
                .exact
                .get(host.as_ref())
                .and_then(|c| self.first(c, path, headers))
            {
                return Some(found);
            }
            for (suffix, candidates) in &self.wildcard {
                if host.len() > suffix.len() && host.ends_with(suffix.as_str()) {
                    if let Some(found) = self.first(candidates, path, headers) {
                        return Some(found);
                    }
                }
            }
        }
        self.first(&self.any, path, headers)
    }

    fn first<F: Fields + ?Sized>(
        &self,
        candidates: &[usize],
        path: &str,
        headers: &F,
    ) -> Option<&Arc<Route>> {
        candidates
            .iter()
            .map(|&i| &self.routes[i])
            .find(|r| r.path_matches(path) && r.headers_match(headers))
    }
}
