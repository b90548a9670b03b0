//! Plain-data settings for listeners and the admin endpoint, as the control plane hands them over.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct ListenerSpec {
    /// Used in logs; unique.
    pub name: String,
    pub address: SocketAddr,
    /// Some = terminate TLS (ALPN h2, http/1.1).
    pub tls: Option<ListenerTls>,
}

/// Where a TLS listener's certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenerTls {
    /// PEM files, re-read on every config reload.
    Files(ServerTlsSpec),
    /// The certificates the control plane installs (a Gateway's HTTPS listeners', from their
    /// Secrets), chosen by SNI (`crate::sni`).
    Installed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTlsSpec {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// Mutual TLS: clients present certificates, verified against a CA.
    pub client_auth: Option<ClientAuthSpec>,
}

/// `tls.client_auth`: which clients' certificates a listener takes. Re-read with the
/// listener's certificate on every reload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientAuthSpec {
    /// PEM file of the CA certificates a client's certificate must chain to.
    pub ca_file: PathBuf,
    /// `require`: a client without a certificate is refused at the handshake. `optional`: it
    /// is served, with no identity (a route may still ask for one).
    pub required: bool,
    /// PEM files of certificate revocation lists: a revoked certificate is refused.
    pub crl_files: Vec<PathBuf>,
}

/// Limits and timeouts for client connections, shared by every listener.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitsSpec {
    /// Accepting pauses while this many client connections are open.
    pub max_connections: usize,
    /// A client must send a request's whole header block within this time (slowloris), counted
    /// from connect for the first request (TLS handshake included) and from the end of the
    /// previous response for the next: it is also the HTTP/1 keep-alive idle time.
    pub header_read_timeout: Duration,
    /// Largest header block accepted; past it the client gets 431.
    pub max_header_bytes: usize,
    /// Most header fields accepted; past it the client gets 431.
    pub max_headers: usize,
    /// An HTTP/2 connection with no stream for this long is closed.
    pub idle_timeout: Duration,
    /// On SIGTERM/SIGINT, in-flight requests get this long to finish.
    pub shutdown_grace: Duration,
    /// How HTTP/1 requests are forwarded.
    pub http1_engine: Http1Engine,
}

/// `Passthrough` forwards the common HTTP/1 request as bytes (`crate::h1`) and hands anything
/// unusual to hyper; `Hyper` sends every request through hyper's server and client — the
/// reference the passthrough engine is measured against, and a way back should it misbehave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Http1Engine {
    #[default]
    Passthrough,
    Hyper,
}

impl Default for LimitsSpec {
    fn default() -> Self {
        LimitsSpec {
            max_connections: 10_000,
            header_read_timeout: Duration::from_secs(10),
            max_header_bytes: 64 * 1024,
            max_headers: 100,
            idle_timeout: Duration::from_secs(300),
            shutdown_grace: Duration::from_secs(30),
            http1_engine: Http1Engine::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct AdminSpec {
    pub address: SocketAddr,
}

impl Default for AdminSpec {
    fn default() -> Self {
        AdminSpec {
            address: SocketAddr::from(([127, 0, 0, 1], 9901)),
        }
    }
}
