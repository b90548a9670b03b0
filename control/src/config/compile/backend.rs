//! One backend (stable or canary): addresses, balancing, protocol, upstream TLS, timeouts.

use std::time::Duration;

use weir_proxy::table::spec::{BackendSpec, Balance, UpstreamProtocol, UpstreamTlsSpec};

use crate::config::check::Checker;
use crate::config::model::{RawBackend, RawBalance, RawProtocol, RawUpstreamDefaults};

/// Timeouts from `upstream_defaults`, already checked, falling back to `BackendSpec::new`'s.
pub struct UpstreamDefaults {
    connect_timeout: Duration,
    response_timeout: Duration,
    pool_idle_timeout: Duration,
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
    }
}
