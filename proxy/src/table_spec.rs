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

/// The backend names a rollout's route uses; a metric's `backend` label is the backend's name,
/// so queries and templates written for `stable` and `canary` keep working.
pub const STABLE: &str = "stable";
pub const CANARY: &str = "canary";

#[derive(Clone, Debug, PartialEq)]
pub struct RouteSpec {
    /// Unique name; used as the `route` label in metrics and live windows.
    pub name: String,
    /// Exact hosts and `*.suffix` wildcards; empty matches any host.
    pub hosts: Vec<String>,
    /// The ports the request must have been addressed to (its Host's port, else the scheme's
    /// default): a GAMMA parentRef's Service port. `Any` for every other route.
    pub ports: PortMatch,
    /// A request matches the route when it matches any one of these (an HTTPRoute rule's
    /// `matches`). Never empty once compiled; `MatchSpec::default()` is "every path".
    pub matches: Vec<MatchSpec>,
    /// Where requests go, each with a weight relative to the sum of all weights. Weight 0
    /// sends nothing; when every weight is 0 the route answers 500. A rollout's route has
    /// `stable` first and `canary` second (`RouteSpec::canary_weight_bp`).
    pub backends: Vec<WeightedBackend>,
    /// Argo's setHeaderRoute: first matching rule decides the backend, whatever the weight.
    pub header_routes: Vec<HeaderRouteSpec>,
    pub sticky: Option<StickySpec>,
    pub mirror: Option<MirrorSpec>,
    /// Deadline for the whole request (headers of the response); None = no deadline.
    pub timeout: Option<Duration>,
    /// Applied to the request before it is forwarded (HTTPRoute RequestHeaderModifier).
    pub request_headers: HeaderEdits,
    /// Applied to every response of the route (HTTPRoute ResponseHeaderModifier on a rule).
    pub response_headers: HeaderEdits,
    /// Answer every request with a redirect (HTTPRoute RequestRedirect): no backend is
    /// contacted, so the route may have none.
    pub redirect: Option<RedirectSpec>,
    /// Change the host and path sent upstream (HTTPRoute URLRewrite).
    pub rewrite: Option<RewriteSpec>,
    /// The object this route was made from, when it was made from one (an HTTPRoute):
    /// shown by /routes, so what a controller wrote can be checked against what is in force.
    pub origin: Option<Origin>,
    /// Whether its requests are written to the access log: the section's sample, off, or a
    /// share of its own.
    pub access_log: crate::access_log::RoutePolicy,
    /// Mutual TLS: which callers may use the route, and the header naming them upstream.
    pub client_identity: ClientIdentitySpec,
}

/// A route's `client_identity`: callers by the identity their certificate gives (its URI SAN,
/// e.g. a SPIFFE ID; else its DNS SAN; else `CN=` its common name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientIdentitySpec {
    /// Identities admitted, each exact or, ending in `*`, a prefix; empty: every caller. A
    /// caller refused is answered 403.
    pub allow: Vec<String>,
    /// A request header set to the caller's identity (removed first whatever the client sent
    /// in it); None: no header.
    pub header: Option<String>,
}

/// Which request ports a route serves. A request's port is its Host's (or `:authority`'s),
/// else 80, or 443 on a TLS listener.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum PortMatch {
    #[default]
    Any,
    /// Only these.
    Only(Vec<u16>),
    /// Every port but these: a Service's default port takes whatever names none of its other
    /// ports (weir's own listener port included, as a sidecar's clients may address it).
    Except(Vec<u16>),
}

impl PortMatch {
    pub fn admits(&self, port: u16) -> bool {
        match self {
            PortMatch::Any => true,
            PortMatch::Only(ports) => ports.contains(&port),
            PortMatch::Except(ports) => !ports.contains(&port),
        }
    }
}

/// A redirect's `Location`, by the Gateway API's rules (HTTPRequestRedirectFilter): each part
/// not given is the request's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedirectSpec {
    /// `http` or `https`; None = the request's.
    pub scheme: Option<String>,
    /// None = the request's host without its port.
    pub hostname: Option<String>,
    /// None = the scheme's well-known port when a scheme is given, else the listener's.
    pub port: Option<u16>,
    /// None = the request's path and query as they are.
    pub path: Option<PathModifier>,
    /// 301, 302, 303, 307 or 308 (the Gateway API's default is 302).
    pub status: u16,
    /// The port of the Gateway listener the route is served on; None (a config-file route) =
    /// the port of the request's Host, if it has one.
    pub listener_port: Option<u16>,
}

impl RedirectSpec {
    /// A 302 to the same URL: each part is then changed by setting its field.
    pub fn found() -> Self {
        RedirectSpec {
            scheme: None,
            hostname: None,
            port: None,
            path: None,
            status: 302,
            listener_port: None,
        }
    }
}

/// What is changed in a request before it goes upstream (HTTPURLRewriteFilter).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RewriteSpec {
    /// Replaces the Host (`:authority`) the upstream sees; X-Forwarded-Host keeps the client's.
    pub hostname: Option<String>,
    pub path: Option<PathModifier>,
}

/// How a redirect or a rewrite changes the path; the query is kept either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathModifier {
    /// The whole path becomes this.
    ReplaceFullPath(String),
    /// The route's matched path prefix (whole segments) becomes this: `/foo/bar` matched by
    /// `/foo` with `/xyz` becomes `/xyz/bar`. Only for a route whose matches are all prefixes.
    ReplacePrefixMatch(String),
}

/// A Kubernetes object and the generation of it a route carries out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub generation: i64,
}

impl RouteSpec {
    /// A route with only a stable backend, everything else defaulted.
    pub fn new(name: impl Into<String>, stable: BackendSpec) -> Self {
        RouteSpec {
            name: name.into(),
            hosts: Vec::new(),
            ports: PortMatch::Any,
            matches: vec![MatchSpec::default()],
            backends: vec![WeightedBackend::new(STABLE, MAX_WEIGHT_BP.into(), stable)],
            header_routes: Vec::new(),
            sticky: None,
            mirror: None,
            timeout: None,
            request_headers: HeaderEdits::default(),
            response_headers: HeaderEdits::default(),
            redirect: None,
            rewrite: None,
            origin: None,
            access_log: crate::access_log::RoutePolicy::Inherit,
            client_identity: ClientIdentitySpec::default(),
        }
    }

    /// The backend called `name`.
    pub fn backend(&self, name: &str) -> Option<&BackendSpec> {
        self.weighted(name).map(|b| &b.spec)
    }

    pub fn backend_mut(&mut self, name: &str) -> Option<&mut BackendSpec> {
        self.backends
            .iter_mut()
            .find(|b| b.name == name)
            .map(|b| &mut b.spec)
    }

    pub fn weighted(&self, name: &str) -> Option<&WeightedBackend> {
        self.backends.iter().find(|b| b.name == name)
    }

    /// A rollout's route: its `stable` backend.
    pub fn stable(&self) -> Option<&BackendSpec> {
        self.backend(STABLE)
    }

    /// A rollout's route: its `canary` backend.
    pub fn canary(&self) -> Option<&BackendSpec> {
        self.backend(CANARY)
    }

    /// Adds, replaces or (with None) removes the `canary` backend, keeping its weight.
    pub fn set_canary(&mut self, canary: Option<BackendSpec>) {
        match (canary, self.backends.iter().position(|b| b.name == CANARY)) {
            (Some(spec), Some(i)) => self.backends[i].spec = spec,
            (Some(spec), None) => self.backends.push(WeightedBackend::new(CANARY, 0, spec)),
            (None, Some(i)) => {
                self.backends.remove(i);
            }
            (None, None) => {}
        }
    }

    /// The `canary` backend's share of the weights, in basis points (0 without one).
    pub fn canary_weight_bp(&self) -> u16 {
        let total: u64 = self.backends.iter().map(|b| u64::from(b.weight)).sum();
        match self.weighted(CANARY) {
            Some(c) if total > 0 => (u64::from(c.weight) * u64::from(MAX_WEIGHT_BP) / total) as u16,
            _ => 0,
        }
    }

    /// A rollout's split: `canary` gets `bp`, `stable` the rest (values over 100 % are left
    /// for compilation to refuse). Other backends, if any, keep their weights.
    pub fn set_canary_weight_bp(&mut self, bp: u16) {
        for b in &mut self.backends {
            match b.name.as_str() {
                CANARY => b.weight = u32::from(bp),
                STABLE => b.weight = u32::from(MAX_WEIGHT_BP.saturating_sub(bp)),
                _ => {}
            }
        }
    }
}

/// One way a request can match a route: every part given must hold.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchSpec {
    pub path: PathMatch,
    /// Every rule must match; header names are case-insensitive.
    pub headers: Vec<HeaderMatchSpec>,
    /// Every rule must match; parameter names are case-sensitive (Gateway API).
    pub query: Vec<QueryMatchSpec>,
    /// Upper-case method name, e.g. `GET`.
    pub method: Option<String>,
}

impl Default for MatchSpec {
    fn default() -> Self {
        MatchSpec::prefix("/")
    }
}

impl MatchSpec {
    pub fn prefix(prefix: impl Into<String>) -> Self {
        MatchSpec {
            path: PathMatch::Prefix(prefix.into()),
            headers: Vec::new(),
            query: Vec::new(),
            method: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathMatch {
    /// Whole segments: `/api` matches `/api` and `/api/x`, not `/apix`.
    Prefix(String),
    Exact(String),
    /// Anchored at both ends, matched against the path without its query.
    Regex(String),
}

impl PathMatch {
    pub fn value(&self) -> &str {
        match self {
            PathMatch::Prefix(s) | PathMatch::Exact(s) | PathMatch::Regex(s) => s,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct QueryMatchSpec {
    pub name: String,
    pub value: ValueMatch,
}

/// A weighted backend of a route.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightedBackend {
    /// The `backend` label of its metrics, and what header routes and mirrors name.
    pub name: String,
    /// Relative to the sum of the route's weights.
    pub weight: u32,
    pub spec: BackendSpec,
    /// Applied to responses from this backend only (an HTTPRoute backendRef's filter: how
    /// Flagger sets its session-affinity cookie).
    pub response_headers: HeaderEdits,
    /// Applied to requests sent to this backend only, after the route's (an HTTPRoute
    /// backendRef's RequestHeaderModifier).
    pub request_headers: HeaderEdits,
}

impl WeightedBackend {
    pub fn new(name: impl Into<String>, weight: u32, spec: BackendSpec) -> Self {
        WeightedBackend {
            name: name.into(),
            weight,
            spec,
            response_headers: HeaderEdits::default(),
            request_headers: HeaderEdits::default(),
        }
    }
}

/// Header edits, applied in the order remove, set, add (HTTPRoute's HTTPHeaderFilter).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeaderEdits {
    /// Replaces every value of the field.
    pub set: Vec<(String, String)>,
    /// Appends one more value.
    pub add: Vec<(String, String)>,
    pub remove: Vec<String>,
}

impl HeaderEdits {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.add.is_empty() && self.remove.is_empty()
    }
}

/// Why this many: a pool smaller than the requests in flight to an address closes what it
/// cannot keep and opens it again moments later. h2load's `-c 64 -m 10` (640 requests in
/// flight) to one address through a pool of 256 opened a new upstream connection for 13-16 %
/// of requests; without that, 1.13-1.56x the requests a second (benches/README.md, session
/// 12). 1,024 covers the concurrency of a busy sidecar or edge; an idle connection costs a
/// socket and a few KiB, and `pool_idle_timeout` closes those no request took for that long.
pub const DEFAULT_POOL_MAX_IDLE: usize = 1024;

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
    /// HTTP/1 connections kept idle per address at most; one handed back past it is closed.
    pub pool_max_idle: usize,
    /// The HTTP/2 connection pool of each address (used when `protocol` is `Http2`).
    pub http2: Http2PoolSpec,
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
            pool_max_idle: DEFAULT_POOL_MAX_IDLE,
            http2: Http2PoolSpec::default(),
        }
    }
}

/// How weir spreads an HTTP/2 upstream address's streams over connections.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Http2PoolSpec {
    /// weir's own cap on streams per connection; the upstream's
    /// SETTINGS_MAX_CONCURRENT_STREAMS lowers it.
    pub max_streams_per_connection: u32,
    /// Connections per address at most.
    pub max_connections: u32,
    /// Requests that may wait for a stream when every connection is at its limit; past this a
    /// request is answered 503 at once.
    pub max_pending: u32,
    /// A PING after this long without a frame from the upstream while streams are open; None
    /// sends none.
    pub keepalive_interval: Option<Duration>,
    /// A PING unanswered for this long closes the connection (its streams fail).
    pub keepalive_timeout: Duration,
    /// A connection older than this takes no new streams and closes when its last ends.
    pub max_connection_age: Option<Duration>,
    /// A connection that carried this many requests is retired the same way.
    pub max_requests_per_connection: Option<u64>,
}

impl Default for Http2PoolSpec {
    fn default() -> Self {
        // 100 streams: the lowest SETTINGS_MAX_CONCURRENT_STREAMS RFC 9113 recommends a server
        // allow, and what nginx and Envoy default to. 16 connections × 100 streams is far more
        // than one sidecar's upstream needs; the queue absorbs bursts past it.
        Http2PoolSpec {
            max_streams_per_connection: 100,
            max_connections: 16,
            max_pending: 1024,
            keepalive_interval: Some(Duration::from_secs(30)),
            keepalive_timeout: Duration::from_secs(10),
            max_connection_age: None,
            max_requests_per_connection: None,
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
    /// Mutual TLS: the certificate weir presents to the upstream.
    pub client_cert: Option<ClientCertSpec>,
    /// The upstream's certificate must name one of these (a URI SAN such as a SPIFFE ID, or a
    /// DNS SAN; exact, or a prefix ending in `*`), beyond chaining to the CA. When given, they
    /// stand in for the server-name check (a SPIFFE certificate names no host).
    pub identities: Vec<String>,
}

/// A certificate (chain) and its key, PEM files, re-read whenever the table is compiled: a
/// reload after the files changed puts new connections on the new certificate, and the old
/// pools finish what they carry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientCertSpec {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
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

impl Target {
    /// The backend it names.
    pub fn backend(self) -> &'static str {
        match self {
            Target::Stable => STABLE,
            Target::Canary => CANARY,
        }
    }
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
    /// The backend of the route that receives the copies (`canary` for a rollout's mirror).
    pub to: String,
    /// Share of matching requests copied, in basis points.
    pub percent_bp: u16,
    /// All must match; empty mirrors every request of the route.
    pub matches: Vec<HeaderMatchSpec>,
    /// Argo's setMirrorRoute match list: when not empty, a request is mirrored only if at least
    /// one rule matches it (and `matches` all do).
    pub rules: Vec<MirrorRule>,
    /// Methods copied besides GET, HEAD and OPTIONS. A copy repeats the request's side effects
    /// on the other version, so an unsafe method is mirrored only when the route opts in: by
    /// naming it here, or by an Argo rule whose own method condition matches it.
    pub methods: Vec<String>,
    /// The header every copy carries (value `1`), so the version that gets it can tell.
    pub header: String,
}

/// The header a mirrored copy carries unless the route names another.
pub const MIRROR_HEADER: &str = "x-weir-mirror";

/// One entry of Argo's mirror match list: every condition given must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MirrorRule {
    pub method: Option<ValueMatch>,
    pub path: Option<ValueMatch>,
    pub headers: Vec<HeaderMatchSpec>,
}
