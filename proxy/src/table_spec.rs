//! The plain-data description of a routing table, as the control plane hands it over.
//!
//! Specs are what a config file or a Kubernetes source produces; `RouteTable::compile` turns
//! them into the immutable, pre-resolved table the data path reads. Field names here follow the
//! YAML config so that validation errors can name the config path (`routes[1].canary.addresses[0]`).

use std::path::PathBuf;
use std::time::Duration;

/// Basis points: 0..=10000. Percent appears only in user-facing formats.
pub const MAX_WEIGHT_BP: u16 = 10_000;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableSpec {
    pub routes: Vec<RouteSpec>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RouteSpec {
    /// Unique name; used as the `route` label in metrics and live windows.
    pub name: String,
    /// Exact hosts and `*.suffix` wildcards; empty matches any host.
    pub hosts: Vec<String>,
    /// Path prefix; the longest matching prefix wins. Defaults to "/".
    pub path_prefix: String,
    /// Every rule must match for the route to match.
    pub headers: Vec<HeaderMatchSpec>,
    pub stable: BackendSpec,
    /// A route without a canary sends everything to stable.
    pub canary: Option<BackendSpec>,
    /// Canary share in basis points (0..=10000). 0 sends nothing to canary, exactly.
    pub canary_weight_bp: u16,
    /// Argo's setHeaderRoute: first matching rule decides the backend, whatever the weight.
    pub header_routes: Vec<HeaderRouteSpec>,
    pub sticky: Option<StickySpec>,
    pub mirror: Option<MirrorSpec>,
    /// Deadline for the whole request (headers of the response); None = no deadline.
    pub timeout: Option<Duration>,
}

impl RouteSpec {
    /// A route with only a stable backend, everything else defaulted.
    pub fn new(name: impl Into<String>, stable: BackendSpec) -> Self {
        RouteSpec {
            name: name.into(),
            hosts: Vec::new(),
            path_prefix: "/".to_string(),
            headers: Vec::new(),
            stable,
            canary: None,
            canary_weight_bp: 0,
            header_routes: Vec::new(),
            sticky: None,
            mirror: None,
            timeout: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct BackendSpec {
    /// `host:port` (an IP literal or a name resolved at connect time).
    pub addresses: Vec<String>,
    pub balance: Balance,
    pub protocol: UpstreamProtocol,
    /// Some = speak TLS to the upstream.
    pub tls: Option<UpstreamTlsSpec>,
    pub connect_timeout: Duration,
    /// Time allowed from sending the request to receiving the response headers.
    pub response_timeout: Duration,
    /// How long an unused pooled connection is kept.
    pub pool_idle_timeout: Duration,
}

impl BackendSpec {
    pub fn new<S: Into<String>>(addresses: impl IntoIterator<Item = S>) -> Self {
        BackendSpec {
            addresses: addresses.into_iter().map(Into::into).collect(),
            balance: Balance::RoundRobin,
            protocol: UpstreamProtocol::Http1,
            tls: None,
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(30),
            pool_idle_timeout: Duration::from_secs(60),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Balance {
    #[default]
    RoundRobin,
    LeastRequest,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum UpstreamProtocol {
    #[default]
    Http1,
    /// HTTP/2 (h2c in clear text, ALPN h2 over TLS); needed for gRPC.
    Http2,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpstreamTlsSpec {
    /// SNI and certificate name; defaults to the host part of the address.
    pub server_name: Option<String>,
    /// PEM file of CA certificates; None = the system's roots.
    pub ca_file: Option<PathBuf>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HeaderMatchSpec {
    /// Header name, case-insensitive.
    pub name: String,
    pub value: ValueMatch,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ValueMatch {
    Exact(String),
    Prefix(String),
    /// Anchored at both ends, as Argo's header routes are.
    Regex(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Stable,
    Canary,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HeaderRouteSpec {
    pub name: String,
    /// All must match.
    pub matches: Vec<HeaderMatchSpec>,
    pub target: Target,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StickySpec {
    Cookie(String),
    Header(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct MirrorSpec {
    pub name: String,
    /// Share of matching requests copied to canary, in basis points.
    pub percent_bp: u16,
    /// All must match; empty mirrors every request of the route.
    pub matches: Vec<HeaderMatchSpec>,
    /// Argo's setMirrorRoute match list: when not empty, a request is mirrored only if at least
    /// one rule matches it (and `matches` all do).
    pub rules: Vec<MirrorRule>,
}

/// One entry of Argo's mirror match list: every condition given must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MirrorRule {
    pub method: Option<ValueMatch>,
    pub path: Option<ValueMatch>,
    pub headers: Vec<HeaderMatchSpec>,
}
