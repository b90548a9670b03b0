//! Listeners and the admin endpoint: socket addresses that must parse and must not collide.

use std::collections::HashMap;
use std::net::SocketAddr;

use weir_proxy::listen::spec::{
    AdminSpec, ClientAuthSpec, ListenerSpec, ListenerTls, ServerTlsSpec,
};

use crate::config::check::Checker;
use crate::config::model::{RawAdmin, RawClientAuth, RawListener, RawServerTls};

fn client_auth(raw: &RawClientAuth, path: &str, check: &mut Checker) -> ClientAuthSpec {
    let required = match raw.mode.as_deref() {
        None | Some("require") => true,
        Some("optional") => false,
        Some(other) => {
            check.report(
                format!("{path}.mode"),
                format!("{other:?} is not a mode: require or optional"),
            );
            true
        }
    };
    ClientAuthSpec {
        ca_file: check.file(&format!("{path}.ca"), &raw.ca),
        required,
        crl_files: raw
            .crl
            .iter()
            .enumerate()
            .map(|(i, f)| check.file(&format!("{path}.crl[{i}]"), f))
            .collect(),
    }
}

pub fn listeners(
    raw: &[RawListener],
    raw_admin: &RawAdmin,
    check: &mut Checker,
) -> (Vec<ListenerSpec>, AdminSpec) {
    if raw.is_empty() {
        check.report("listeners", "at least one listener is required");
    }
    let mut names: HashMap<String, usize> = HashMap::new();
    // Address -> the config path that claimed it first, for a useful duplicate message.
    let mut taken: HashMap<SocketAddr, String> = HashMap::new();
    let mut specs = Vec::with_capacity(raw.len());

    for (i, listener) in raw.iter().enumerate() {
        let path = format!("listeners[{i}]");
        let name = listener
            .name
            .clone()
            .unwrap_or_else(|| format!("listener-{i}"));
        check.name(&format!("{path}.name"), &name);
        if let Some(first) = names.insert(name.clone(), i) {
            check.report(
                format!("{path}.name"),
                format!("duplicate listener name {name:?} (also listeners[{first}])"),
            );
        }
        let address = socket_addr(
            &format!("{path}.address"),
            &listener.address,
            &mut taken,
            check,
        );
        let tls = listener.tls.as_ref().map(|tls| match tls {
            RawServerTls::Files(files) => ListenerTls::Files(ServerTlsSpec {
                cert_file: check.file(&format!("{path}.tls.cert"), &files.cert),
                key_file: check.file(&format!("{path}.tls.key"), &files.key),
                client_auth: files
                    .client_auth
                    .as_ref()
                    .map(|auth| client_auth(auth, &format!("{path}.tls.client_auth"), check)),
            }),
            RawServerTls::Gateway(gateway) => {
                if !gateway.from_gateway {
                    check.report(
                        format!("{path}.tls.from_gateway"),
                        "write `true`, or give `cert` and `key` instead",
                    );
                }
                ListenerTls::Installed
            }
        });
        specs.push(ListenerSpec { name, address, tls });
    }

    let admin = match &raw_admin.address {
        Some(text) => AdminSpec {
            address: socket_addr("admin.address", text, &mut taken, check),
        },
        None => {
            let admin = AdminSpec::default();
            if let Some(owner) = taken.get(&admin.address) {
                check.report(
                    owner.clone(),
                    format!(
                        "{} is the default admin address; set admin.address",
                        admin.address
                    ),
                );
            }
            admin
        }
    };
    (specs, admin)
}

/// Listeners bind, so the address must be an IP literal with a port, not a host name.
/// Port 0 is allowed.
fn socket_addr(
    path: &str,
    text: &str,
    taken: &mut HashMap<SocketAddr, String>,
    check: &mut Checker,
) -> SocketAddr {
    let Ok(address) = text.parse::<SocketAddr>() else {
        check.report(
            path,
            format!("invalid address {text:?}: expected ip:port, e.g. 0.0.0.0:8080"),
        );
        return SocketAddr::from(([0, 0, 0, 0], 0));
    };
    // Port 0 asks the OS for a free port (handy in tests), so it cannot collide.
    if address.port() == 0 {
        return address;
    }
    if let Some(first) = taken.get(&address) {
        check.report(
            path,
            format!("address {address} is already used by {first}"),
        );
    } else {
        taken.insert(address, path.to_string());
    }
    address
}
