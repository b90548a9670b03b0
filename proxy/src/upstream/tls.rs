//! TLS towards upstreams: rustls client configs, one per (CA source, ALPN).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use crate::table_spec::UpstreamProtocol;

pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The system's roots, read once: reading them costs milliseconds.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut store = RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            for err in &found.errors {
                tracing::warn!(error = %err, "could not read some system CA certificates");
            }
            let (added, _ignored) = store.add_parsable_certificates(found.certs);
            tracing::debug!(added, "loaded system CA certificates");
            Arc::new(store)
        })
        .clone()
}

pub(crate) fn roots_from_file(path: &Path) -> Result<RootCertStore, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read CA file {}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("bad PEM in CA file {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("CA file {} holds no certificate", path.display()));
    }
    let mut store = RootCertStore::empty();
    for cert in certs {
        store
            .add(cert)
            .map_err(|e| format!("bad CA certificate in {}: {e}", path.display()))?;
    }
    Ok(store)
}

pub fn client_config(
    ca_file: Option<&Path>,
    protocol: UpstreamProtocol,
) -> Result<Arc<ClientConfig>, String> {
    let roots = match ca_file {
        Some(path) => Arc::new(roots_from_file(path)?),
        None => system_roots(),
    };
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = match protocol {
        UpstreamProtocol::Http1 => vec![b"http/1.1".to_vec()],
        UpstreamProtocol::Http2 => vec![b"h2".to_vec()],
    };
    Ok(Arc::new(config))
}
