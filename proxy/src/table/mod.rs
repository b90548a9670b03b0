//! The routing table: immutable once compiled, replaced whole through `TableHandle`.

mod backend;
mod compile;
mod edits;
mod error;
mod fields;
mod handle;
mod hosts;
mod identity;
mod matcher;
mod route;
/// The plain data a table is compiled from (its own module, so that upstream can read backend
/// settings without importing the table that imports it).
pub use crate::table_spec as spec;
mod split;
mod url_filters;

use std::sync::Arc;

pub use backend::{Backend, BackendStats};
pub use compile::Compiler;
pub use edits::Edits;
pub use error::{TableError, TableErrors};
pub use fields::Fields;
pub use handle::TableHandle;
pub use route::Route;
pub use split::{sticky_bucket, Split};
pub use url_filters::{check_hostname, check_path_modifier, PathEdit, Redirect, Rewrite};

pub(crate) use matcher::prefix_matches;

use crate::authority::{host_bytes, request_port};
use hosts::HostIndex;
use spec::TableSpec;

pub struct RouteTable {
    generation: u64,
    spec: TableSpec,
    routes: Vec<Arc<Route>>,
    /// (route, match of the route) pairs: what the host lists hold the numbers of.
    entries: Vec<(usize, usize)>,
    /// Host → candidate entries, each list most specific match first.
    hosts: HostIndex,
    /// Some route serves only some request ports (GAMMA parentRef ports): only then is a
    /// request's port read.
    by_port: bool,
}

impl RouteTable {
    /// A table with no routes: every request gets 404. What serves before the first config.
    pub fn empty() -> Self {
        RouteTable {
            generation: 0,
            spec: TableSpec::default(),
            routes: Vec::new(),
            entries: Vec::new(),
            hosts: HostIndex::default(),
            by_port: false,
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
    /// the most specific match that holds (`Match::precedence`: Gateway API's order) on a
    /// route that serves the request's port. `target` is the whole request target, query
    /// included; `tls` says which port a host without one was addressed to.
    pub fn find<F: Fields + ?Sized>(
        &self,
        host: Option<&[u8]>,
        tls: bool,
        method: &[u8],
        target: &[u8],
        headers: &F,
    ) -> Option<&Arc<Route>> {
        // Two copies of the walk: the usual table (no route with ports) neither reads the
        // request's port nor tests a route's, and keeps the other copy out of its own code.
        match self.by_port {
            false => self.walk::<false, F>(host, (method, target, headers, 0)),
            true => self.find_by_port(host, tls, (method, target, headers)),
        }
    }

    #[inline(never)]
    fn find_by_port<F: Fields + ?Sized>(
        &self,
        host: Option<&[u8]>,
        tls: bool,
        (method, target, headers): (&[u8], &[u8], &F),
    ) -> Option<&Arc<Route>> {
        let port = request_port(host, tls);
        self.walk::<true, F>(host, (method, target, headers, port))
    }

    fn walk<const BY_PORT: bool, F: Fields + ?Sized>(
        &self,
        host: Option<&[u8]>,
        request: (&[u8], &[u8], &F, u16),
    ) -> Option<&Arc<Route>> {
        if let Some(host) = host.map(host_bytes) {
            let exact = self.hosts.exact(host).into_iter();
            for candidates in exact.chain(self.hosts.wildcards(host)) {
                if let Some(found) = self.first::<BY_PORT, F>(candidates, request) {
                    return Some(found);
                }
            }
        }
        self.first::<BY_PORT, F>(self.hosts.any(), request)
    }

    fn first<const BY_PORT: bool, F: Fields + ?Sized>(
        &self,
        candidates: &[usize],
        (method, target, headers, port): (&[u8], &[u8], &F, u16),
    ) -> Option<&Arc<Route>> {
        candidates.iter().find_map(|&e| {
            let (i, j) = self.entries[e];
            let route = &self.routes[i];
            ((!BY_PORT || route.spec.ports.admits(port))
                && route.matches(j).matches(method, target, headers))
            .then_some(route)
        })
    }
}

#[cfg(test)]
mod ports_tests;
