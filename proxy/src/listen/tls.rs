//! TLS termination: a rustls server config from PEM files, swappable when the config reloads.

use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::spec::ServerTlsSpec;
use crate::upstream::tls_provider;

/// Reads the certificate chain and key; the error names the file and what is wrong with it.
pub fn server_config(spec: &ServerTlsSpec) -> Result<Arc<ServerConfig>, String> {
    let cert_file = spec.cert_file.display();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&spec.cert_file)
        .map_err(|e| format!("cannot read certificate file {cert_file}: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("bad PEM in certificate file {cert_file}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("certificate file {cert_file} holds no certificate"));
    }
    let key = PrivateKeyDer::from_pem_file(&spec.key_file).map_err(|e| {
        format!(
            "cannot read a private key from {}: {e}",
            spec.key_file.display()
        )
    })?;
    // TLS 1.2 and 1.3 only: rustls offers nothing older.
    let mut config = ServerConfig::builder_with_provider(tls_provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("certificate {cert_file} does not fit its key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The config a listener hands each new TLS connection; a reload replaces it whole.
pub struct ReloadableTls {
    current: ArcSwap<ServerConfig>,
}

impl ReloadableTls {
    pub fn load(spec: &ServerTlsSpec) -> Result<Self, String> {
        Ok(ReloadableTls {
            current: ArcSwap::new(server_config(spec)?),
        })
    }

    /// New connections get `config`; connections already open keep theirs.
    pub fn install(&self, config: Arc<ServerConfig>) {
        self.current.store(config);
    }

    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.load_full())
    }
}
