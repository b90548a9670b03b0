//! The YAML document exactly as users write it. Only shapes and types are checked here; the
//! meaning (ranges, references, uniqueness) is checked in `compile`, which collects every problem.
//!
//! Every struct denies unknown fields: a typo must be an error, not a setting silently ignored.

use std::path::PathBuf;

use serde::Deserialize;

use super::duration::ConfigDuration;
use super::percent::Percent;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping with listeners and routes")]
pub struct RawConfig {
    #[serde(default)]
    pub listeners: Vec<RawListener>,
    #[serde(default)]
    pub admin: RawAdmin,
    #[serde(default)]
    pub limits: RawLimits,
    #[serde(default)]
    pub upstream_defaults: RawUpstreamDefaults,
    #[serde(default)]
    pub routes: Vec<RawRoute>,
    /// A standalone rollout, from Argo manifests: the one-item spelling of `rollouts`.
    #[serde(default)]
    pub rollout: Option<RawRollout>,
    /// Standalone rollouts, each driving its own route(s).
    #[serde(default)]
    pub rollouts: Vec<RawRollout>,
    /// Where a rollout without a `state_file` keeps its state: `DIR/NAME.json`.
    pub state_dir: Option<PathBuf>,
    /// Follow the weights Argo Rollouts decides in a Kubernetes cluster.
    #[serde(default)]
    pub kube: Option<RawKube>,
    /// Webhooks told of the rollout's events.
    #[serde(default)]
    pub notifications: Vec<RawWebhook>,
    /// One line per request.
    pub access_log: Option<RawAccessLog>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an access log: {path: stdout|FILE, format: json|logfmt, query: BOOL, sample: PERCENT}"
)]
pub struct RawAccessLog {
    /// `stdout` (default) or a file, appended to and reopened on SIGUSR1 or reload.
    pub path: Option<PathBuf>,
    /// `json` (default) or `logfmt`.
    pub format: Option<String>,
    /// Keep the query string in `path` (default false: it carries tokens).
    pub query: Option<bool>,
    /// The share of requests logged on routes that do not say (default 100).
    pub sample: Option<Percent>,
}

/// A route's `access_log`: `true`, `false`, or `{sample: PERCENT}`.
#[derive(Debug, Deserialize)]
#[serde(untagged, expecting = "true, false or {sample: PERCENT}")]
pub enum RawRouteLog {
    Switch(bool),
    Sample(RawSample),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSample {
    pub sample: Percent,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a webhook: {url or url_file, format, headers, timeout, retries, events}"
)]
pub struct RawWebhook {
    /// How logs, metrics and the page name it; default: its URL's host.
    pub name: Option<String>,
    pub url: Option<String>,
    /// The URL read from a file at each delivery (a Slack webhook URL is a secret).
    pub url_file: Option<PathBuf>,
    /// `json` (default) or `slack`.
    pub format: Option<String>,
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, RawHeaderValue>,
    /// Per attempt (default 5s).
    pub timeout: Option<ConfigDuration>,
    /// Attempts after a failed first one (default 3).
    pub retries: Option<u32>,
    /// Before the first retry, doubled for each next (default 1s).
    pub backoff: Option<ConfigDuration>,
    /// Which events; default every one.
    #[serde(default)]
    pub events: Vec<String>,
    /// Which rollouts' events (by name); default every one's.
    #[serde(default)]
    pub rollouts: Vec<String>,
}

/// A header's value: written out, from a file, or from a mounted Secret's key.
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "a header value: a string, {file: PATH} or {secret: {name, key}}"
)]
pub enum RawHeaderValue {
    Literal(String),
    File { file: PathBuf },
    Secret { secret: RawSecretKey },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a Secret's key: {name, key}")]
pub struct RawSecretKey {
    pub name: String,
    pub key: String,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a kube source: {namespace, rollout, route} or {namespace, http_routes}"
)]
pub struct RawKube {
    pub namespace: String,
    /// One Rollout by name.
    pub rollout: Option<String>,
    /// Or the one Rollout matching a label selector (`app=shop`).
    pub rollout_selector: Option<String>,
    /// Or an SMI TrafficSplit, as Argo writes it for `trafficRouting.smi`.
    pub traffic_split: Option<RawTrafficSplit>,
    /// Or Gateway API HTTPRoutes attached to a Gateway or Services.
    pub http_routes: Option<RawHttpRoutes>,
    /// The weir route whose weights and addresses follow the cluster (not with `http_routes`).
    #[serde(default)]
    pub route: String,
    pub stable_service: Option<String>,
    pub canary_service: Option<String>,
    /// Which port of each Service's EndpointSlices: a port name or a number.
    #[serde(default)]
    pub ports: std::collections::BTreeMap<String, RawPort>,
    pub default_port: Option<RawPort>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "HTTPRoutes: {controller_name, gateway: {name, namespace, section_name} or services: [names], namespaces, version}"
)]
pub struct RawHttpRoutes {
    /// The GatewayClass `controllerName` weir answers for.
    pub controller_name: String,
    /// An edge weir: the Gateway it serves.
    pub gateway: Option<RawGatewayRef>,
    /// A sidecar (GAMMA): the Services it serves.
    pub services: Option<Vec<String>>,
    /// v1 (default) or v1beta1.
    pub version: Option<String>,
    /// The Lease electing the replica that writes status (default weir-gateway-NAME for a
    /// Gateway, weir-httproute-status for Services).
    pub lease_name: Option<String>,
    /// How long an unrenewed Lease holds (default 15s).
    pub lease_duration: Option<ConfigDuration>,
    /// Where routes and their backends are watched: names, or `["*"]` for every namespace
    /// (default: every namespace for a Gateway, `namespace` for Services).
    pub namespaces: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a Gateway: {name, namespace, section_name, addresses}"
)]
pub struct RawGatewayRef {
    pub name: String,
    pub namespace: Option<String>,
    pub section_name: Option<String>,
    /// Where clients reach this Gateway (IPs or hostnames), written in its `status.addresses`
    /// (default: the Gateway's `spec.addresses`, else the pod's `POD_IP`).
    #[serde(default)]
    pub addresses: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a TrafficSplit: {name, version}")]
pub struct RawTrafficSplit {
    pub name: String,
    /// v1alpha1 (default), v1alpha2 or v1alpha3.
    pub version: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged, expecting = "a port name or number")]
pub enum RawPort {
    Number(u16),
    Name(String),
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a rollout: {manifests: [files], route: name}"
)]
pub struct RawRollout {
    /// Files holding the Rollout and its AnalysisTemplates (multi-document YAML).
    pub manifests: Vec<PathBuf>,
    /// Which Rollout, when the manifests hold several.
    pub name: Option<String>,
    /// The weir route the Rollout drives; may instead come from `services`.
    pub route: Option<String>,
    /// The Rollout's Service names (stableService/canaryService, activeService/previewService)
    /// → the weir route that carries them.
    #[serde(default)]
    pub services: std::collections::BTreeMap<String, String>,
    /// Where the rollout's progress is kept across restarts (written atomically).
    pub state_file: Option<PathBuf>,
    /// Gradual abort instead of dropping the canary to 0 at once.
    pub abort_ramp: Option<RawAbortRamp>,
    /// Bearer token for promote/abort/retry when the admin listener is not on loopback.
    pub token_file: Option<PathBuf>,
    /// Mounted Secrets (`DIR/SECRET/KEY`) for `valueFrom.secretKeyRef` arguments.
    pub secrets_dir: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an abort ramp: {step: percent, interval: duration}"
)]
pub struct RawAbortRamp {
    pub step: Percent,
    pub interval: ConfigDuration,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a listener: {address: ip:port}")]
pub struct RawListener {
    pub name: Option<String>,
    pub address: String,
    pub tls: Option<RawServerTls>,
}

#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "{cert: FILE, key: FILE}, or {from_gateway: true} (the Gateway's certificates)"
)]
pub enum RawServerTls {
    Files(RawTlsFiles),
    /// The certificates of the Gateway's HTTPS listeners (kube.http_routes.gateway), by SNI.
    Gateway(RawTlsFromGateway),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Mutual TLS: verify clients' certificates.
    pub client_auth: Option<RawClientAuth>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "{ca: FILE, mode: require|optional, crl: [FILE]}"
)]
pub struct RawClientAuth {
    pub ca: PathBuf,
    /// `require` (default) or `optional`.
    pub mode: Option<String>,
    /// Certificate revocation lists (PEM).
    #[serde(default)]
    pub crl: Vec<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTlsFromGateway {
    pub from_gateway: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "{address: ip:port}")]
pub struct RawAdmin {
    pub address: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of limits")]
pub struct RawLimits {
    pub max_connections: Option<usize>,
    pub header_read_timeout: Option<ConfigDuration>,
    pub max_header_bytes: Option<usize>,
    pub max_headers: Option<usize>,
    pub idle_timeout: Option<ConfigDuration>,
    pub shutdown_grace: Option<ConfigDuration>,
    pub http1_engine: Option<RawHttp1Engine>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RawHttp1Engine {
    Passthrough,
    Hyper,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping of upstream timeouts and pool sizes"
)]
pub struct RawUpstreamDefaults {
    pub connect_timeout: Option<ConfigDuration>,
    pub response_timeout: Option<ConfigDuration>,
    pub pool_idle_timeout: Option<ConfigDuration>,
    pub pool_max_idle: Option<usize>,
    pub tls: Option<RawDefaultTls>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a route: {name: NAME, stable: {addresses: [...]}}"
)]
pub struct RawRoute {
    pub name: String,
    #[serde(default, rename = "match")]
    pub matches: RawRouteMatch,
    pub timeout: Option<ConfigDuration>,
    /// Required, save on a route that redirects (checked in `compile`).
    pub stable: Option<RawBackend>,
    pub canary: Option<RawBackend>,
    pub canary_weight: Option<Percent>,
    #[serde(default)]
    pub header_routes: Vec<RawHeaderRoute>,
    pub sticky: Option<RawSticky>,
    pub mirror: Option<RawMirror>,
    /// Answer with a redirect instead of forwarding (an edge's HTTP → HTTPS).
    pub redirect: Option<RawRedirect>,
    /// Change the host and path sent upstream.
    pub rewrite: Option<RawRewrite>,
    /// Whether its requests go to the access log (default: the section's `sample`).
    pub access_log: Option<RawRouteLog>,
    /// Mutual TLS: which callers may use it, and the header naming them upstream.
    pub client_identity: Option<RawClientIdentity>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "{allow: [IDENTITY or PREFIX*], header: NAME}"
)]
pub struct RawClientIdentity {
    #[serde(default)]
    pub allow: Vec<String>,
    pub header: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a redirect: {scheme: http|https, hostname: NAME, port: N, path: {...}, status: 301|302|303|307|308}"
)]
pub struct RawRedirect {
    pub scheme: Option<String>,
    pub hostname: Option<String>,
    pub port: Option<u16>,
    pub path: Option<RawPathModifier>,
    pub status: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a rewrite: {hostname: NAME, path: {...}}"
)]
pub struct RawRewrite {
    pub hostname: Option<String>,
    pub path: Option<RawPathModifier>,
}

/// Exactly one of the two must be set (checked in `compile`).
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a path: {replace_full_path: /PATH} or {replace_prefix_match: /PATH}"
)]
pub struct RawPathModifier {
    pub replace_full_path: Option<String>,
    pub replace_prefix_match: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "{hosts: [...], path_prefix: /..., headers: [...]}"
)]
pub struct RawRouteMatch {
    #[serde(default)]
    pub hosts: Vec<String>,
    pub path_prefix: Option<String>,
    #[serde(default)]
    pub headers: Vec<RawHeaderMatch>,
}

/// Exactly one of `exact`, `prefix`, `regex` must be set (checked in `compile`).
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a header match: {name: NAME, exact|prefix|regex: VALUE}"
)]
pub struct RawHeaderMatch {
    pub name: String,
    pub exact: Option<String>,
    pub prefix: Option<String>,
    pub regex: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a backend: {addresses: [host:port, ...]}"
)]
pub struct RawBackend {
    #[serde(default)]
    pub addresses: Vec<String>,
    #[serde(default)]
    pub balance: RawBalance,
    #[serde(default)]
    pub protocol: RawProtocol,
    pub tls: Option<RawUpstreamTls>,
    pub connect_timeout: Option<ConfigDuration>,
    pub response_timeout: Option<ConfigDuration>,
    pub pool_idle_timeout: Option<ConfigDuration>,
    pub pool_max_idle: Option<usize>,
    /// The HTTP/2 connection pool of each address (`protocol: http2`).
    pub http2: Option<RawHttp2Pool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "{max_streams_per_connection: N, max_connections: N, max_pending: N, \
                 keepalive_interval: DURATION, keepalive_timeout: DURATION, \
                 max_connection_age: DURATION, max_requests_per_connection: N}"
)]
pub struct RawHttp2Pool {
    pub max_streams_per_connection: Option<usize>,
    pub max_connections: Option<usize>,
    pub max_pending: Option<u32>,
    /// `0s` sends no PING.
    pub keepalive_interval: Option<ConfigDuration>,
    pub keepalive_timeout: Option<ConfigDuration>,
    pub max_connection_age: Option<ConfigDuration>,
    pub max_requests_per_connection: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RawBalance {
    #[default]
    RoundRobin,
    LeastRequest,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RawProtocol {
    #[default]
    Http1,
    Http2,
}

/// `tls: {}` means TLS with the system's roots and SNI from the address.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "{server_name: NAME, ca: FILE}")]
pub struct RawUpstreamTls {
    pub server_name: Option<String>,
    pub ca: Option<PathBuf>,
    /// Mutual TLS: the certificate (chain) and key weir presents.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// The upstream's certificate must name one of these (URI or DNS SAN; `prefix*`).
    #[serde(default)]
    pub identities: Vec<String>,
}

/// `upstream_defaults.tls`: the certificate weir presents to every TLS upstream that names
/// none of its own.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "{cert: FILE, key: FILE}")]
pub struct RawDefaultTls {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a header route: {name: NAME, match: [...], backend: canary|stable}"
)]
pub struct RawHeaderRoute {
    pub name: String,
    #[serde(default, rename = "match")]
    pub matches: Vec<RawHeaderMatch>,
    #[serde(default)]
    pub backend: RawTarget,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RawTarget {
    #[default]
    Canary,
    Stable,
}

/// Exactly one of `cookie`, `header` must be set (checked in `compile`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "{cookie: NAME} or {header: NAME}")]
pub struct RawSticky {
    pub cookie: Option<String>,
    pub header: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mirror: {percent: N, match: [...]}"
)]
pub struct RawMirror {
    pub name: Option<String>,
    pub percent: Percent,
    #[serde(default, rename = "match")]
    pub matches: Vec<RawHeaderMatch>,
    /// Unsafe methods to copy too (GET, HEAD and OPTIONS always are).
    #[serde(default)]
    pub methods: Vec<String>,
    /// The header that marks a copy (default `x-weir-mirror`).
    pub header: Option<String>,
}
