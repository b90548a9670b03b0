//! The routing table: immutable once compiled, replaced whole through `TableHandle`.

mod backend;
mod compile;
mod error;
mod fields;
mod handle;
mod hosts;
mod matcher;
mod route;
/// The plain data a table is compiled from (its own module, so that upstream can read backend
/// settings without importing the table that imports it).
pub use crate::table_spec as spec;
mod split;

use std::sync::Arc;

pub use backend::{Backend, BackendStats};
pub use compile::Compiler;
pub use error::{TableError, TableErrors};
pub use fields::Fields;
pub use handle::TableHandle;
pub use route::Route;
pub use split::sticky_bucket;

use crate::authority::host_bytes;
use hosts::HostIndex;
use spec::TableSpec;

pub struct RouteTable {
    generation: u64,
    spec: TableSpec,
    routes: Vec<Arc<Route>>,
    /// Host → candidate routes, each list longest path prefix first.
    hosts: HostIndex,
}

impl RouteTable {
    /// A table with no routes: every request gets 404. What serves before the first config.
    pub fn empty() -> Self {
        RouteTable {
            generation: 0,
            spec: TableSpec::default(),
            routes: Vec::new(),
            hosts: HostIndex::default(),
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
    /// the longest path prefix whose header rules match. `path` may be the whole request target,
    /// query included: no need to cut it off first.
    pub fn find<F: Fields + ?Sized>(
        &self,
        host: Option<&[u8]>,
        path: &[u8],
        headers: &F,
    ) -> Option<&Arc<Route>> {
        if let Some(host) = host.map(host_bytes) {
            let exact = self.hosts.exact(host).into_iter();
            for candidates in exact.chain(self.hosts.wildcards(host)) {
                if let Some(found) = self.first(candidates, path, headers) {
                    return Some(found);
                }
            }
        }
        self.first(self.hosts.any(), path, headers)
    }

    fn first<F: Fields + ?Sized>(
        &self,
        candidates: &[usize],
        path: &[u8],
        headers: &F,
    ) -> Option<&Arc<Route>> {
        candidates
            .iter()
            .map(|&i| &self.routes[i])
            .find(|r| r.path_matches(path) && r.headers_match(headers))
    }
}
