//! One backend (stable or canary): addresses, balancing, protocol, upstream TLS, timeouts.

use std::path::PathBuf;
use std::time::Duration;

use weir_proxy::table::spec::{
    BackendSpec, Balance, ClientCertSpec, Http2PoolSpec, UpstreamProtocol, UpstreamTlsSpec,
};

use crate::config::check::Checker;
use crate::config::model::{
    RawBackend, RawBalance, RawHttp2Pool, RawProtocol, RawUpstreamDefaults,
};

/// Timeouts from `upstream_defaults`, already checked, falling back to `BackendSpec::new`'s.
pub struct UpstreamDefaults {
    connect_timeout: Duration,
    response_timeout: Duration,
    pool_idle_timeout: Duration,
    pool_max_idle: usize,
    /// `upstream_defaults.tls`: presented to every TLS upstream that names no certificate.
    client_cert: Option<ClientCertSpec>,
}

impl UpstreamDefaults {
    pub fn compile(raw: &RawUpstreamDefaults, check: &mut Checker) -> Self {
        let builtin = BackendSpec::new(Vec::<String>::new());
        let path = "upstream_defaults";
        UpstreamDefaults {
            connect_timeout: check
                .duration(&format!("{path}.connect_timeout"), raw.connect_timeout)
                .unwrap_or(builtin.connect_timeout),
            response_timeout: check
                .duration(&format!("{path}.response_timeout"), raw.response_timeout)
                .unwrap_or(builtin.response_timeout),
            pool_idle_timeout: check
                .duration(&format!("{path}.pool_idle_timeout"), raw.pool_idle_timeout)
                .unwrap_or(builtin.pool_idle_timeout),
            pool_max_idle: raw.pool_max_idle.unwrap_or(builtin.pool_max_idle),
            client_cert: raw.tls.as_ref().and_then(|tls| {
                client_cert(
                    (tls.cert.as_ref(), tls.key.as_ref()),
                    &format!("{path}.tls"),
                    check,
                )
            }),
        }
    }
}

/// `cert` and `key`, both or neither; each must be readable.
fn client_cert(
    (cert, key): (Option<&PathBuf>, Option<&PathBuf>),
    path: &str,
    check: &mut Checker,
) -> Option<ClientCertSpec> {
    match (cert, key) {
        (None, None) => None,
        (Some(cert), Some(key)) => Some(ClientCertSpec {
            cert_file: check.file(&format!("{path}.cert"), cert),
            key_file: check.file(&format!("{path}.key"), key),
        }),
        (Some(_), None) => {
            check.report(format!("{path}.key"), "a certificate needs its key");
            None
        }
        (None, Some(_)) => {
            check.report(format!("{path}.cert"), "a key needs its certificate");
            None
        }
    }
}

/// `path` is the backend's path, e.g. `routes[0].canary`.
pub fn backend(
    raw: &RawBackend,
    defaults: &UpstreamDefaults,
    path: &str,
    check: &mut Checker,
) -> BackendSpec {
    if raw.addresses.is_empty() {
        check.report(
            format!("{path}.addresses"),
            "at least one address is required",
        );
    }
    for (i, address) in raw.addresses.iter().enumerate() {
        check.host_port(&format!("{path}.addresses[{i}]"), address);
    }
    let tls = raw.tls.as_ref().map(|tls| {
        if tls.server_name.as_deref() == Some("") {
            check.report(format!("{path}.tls.server_name"), "must not be empty");
        }
        UpstreamTlsSpec {
            server_name: tls.server_name.clone(),
            ca_file: tls
                .ca
                .as_ref()
                .map(|ca| check.file(&format!("{path}.tls.ca"), ca)),
            client_cert: client_cert(
                (tls.cert.as_ref(), tls.key.as_ref()),
                &format!("{path}.tls"),
                check,
            )
            .or_else(|| defaults.client_cert.clone()),
            identities: tls.identities.clone(),
        }
    });
    BackendSpec {
        addresses: raw.addresses.clone(),
        balance: match raw.balance {
            RawBalance::RoundRobin => Balance::RoundRobin,
            RawBalance::LeastRequest => Balance::LeastRequest,
        },
        protocol: match raw.protocol {
            RawProtocol::Http1 => UpstreamProtocol::Http1,
            RawProtocol::Http2 => UpstreamProtocol::Http2,
        },
        tls,
        connect_timeout: check
            .duration(&format!("{path}.connect_timeout"), raw.connect_timeout)
            .unwrap_or(defaults.connect_timeout),
        response_timeout: check
            .duration(&format!("{path}.response_timeout"), raw.response_timeout)
            .unwrap_or(defaults.response_timeout),
        pool_idle_timeout: check
            .duration(&format!("{path}.pool_idle_timeout"), raw.pool_idle_timeout)
            .unwrap_or(defaults.pool_idle_timeout),
        // 0 is allowed: no HTTP/1 connection is kept, each request opens its own.
        pool_max_idle: raw.pool_max_idle.unwrap_or(defaults.pool_max_idle),
        http2: match &raw.http2 {
            None => Http2PoolSpec::default(),
            Some(pool) => {
                if !matches!(raw.protocol, RawProtocol::Http2) {
                    check.report(
                        format!("{path}.http2"),
                        "applies to HTTP/2 upstreams only: add `protocol: http2`",
                    );
                }
                http2_pool(pool, &format!("{path}.http2"), check)
            }
        },
    }
}

fn http2_pool(raw: &RawHttp2Pool, path: &str, check: &mut Checker) -> Http2PoolSpec {
    let builtin = Http2PoolSpec::default();
    let mut count = |field: &str, value: Option<usize>, default: u32| {
        let n = check.at_least_one(&format!("{path}.{field}"), value, default as usize);
        u32::try_from(n).unwrap_or_else(|_| {
            check.report(format!("{path}.{field}"), "is too large");
            default
        })
    };
    let max_streams_per_connection = count(
        "max_streams_per_connection",
        raw.max_streams_per_connection,
        builtin.max_streams_per_connection,
    );
    let max_connections = count(
        "max_connections",
        raw.max_connections,
        builtin.max_connections,
    );
    if raw.max_requests_per_connection == Some(0) {
        check.report(
            format!("{path}.max_requests_per_connection"),
            "must be at least 1",
        );
    }
    // 0s turns PINGs off; any other duration is checked as usual.
    let keepalive_interval = match raw.keepalive_interval {
        Some(d) if d.0.is_zero() => None,
        Some(d) => check.duration(&format!("{path}.keepalive_interval"), Some(d)),
        None => builtin.keepalive_interval,
    };
    Http2PoolSpec {
        max_streams_per_connection,
        max_connections,
        max_pending: raw.max_pending.unwrap_or(builtin.max_pending),
        keepalive_interval,
        keepalive_timeout: check
            .duration(&format!("{path}.keepalive_timeout"), raw.keepalive_timeout)
            .unwrap_or(builtin.keepalive_timeout),
        max_connection_age: check.duration(
            &format!("{path}.max_connection_age"),
            raw.max_connection_age,
        ),
        max_requests_per_connection: raw.max_requests_per_connection,
    }
}
