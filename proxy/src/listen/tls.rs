//! TLS termination: a rustls server config from PEM files, swappable when the config reloads,
//! with session resumption that outlives reloads.

use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::server::{ProducesTickets, ServerSessionMemoryCache, StoresServerSessions};
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};

use super::spec::{ClientAuthSpec, ListenerTls, ServerTlsSpec};
use crate::sni::CertificateStore;
use crate::upstream::tls::roots_from_file;
use crate::upstream::tls_provider;

/// TLS 1.2 session IDs remembered for clients that take no ticket (TLS 1.3 resumes by ticket).
const SESSION_CACHE_ENTRIES: usize = 4096;

/// Reads the certificate chain and key; the error names the file and what is wrong with it.
/// (Session resumption is the listener's: `ReloadableTls` adds it.)
pub fn server_config(spec: &ServerTlsSpec) -> Result<ServerConfig, String> {
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
    let builder = ServerConfig::builder_with_provider(tls_provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let builder = match &spec.client_auth {
        None => builder.with_no_client_auth(),
        Some(auth) => builder.with_client_cert_verifier(client_verifier(auth)?),
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("certificate {cert_file} does not fit its key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Mutual TLS: a client's certificate must chain to the CA file's certificates (and not be
/// revoked by a CRL file) — checked by rustls at the handshake, which a client that fails it
/// never gets past. `optional` lets a client without a certificate through, unidentified.
fn client_verifier(auth: &ClientAuthSpec) -> Result<Arc<dyn ClientCertVerifier>, String> {
    let roots = roots_from_file(&auth.ca_file)?;
    let mut crls = Vec::new();
    for file in &auth.crl_files {
        let found: Vec<CertificateRevocationListDer<'static>> =
            CertificateRevocationListDer::pem_file_iter(file)
                .map_err(|e| format!("cannot read CRL file {}: {e}", file.display()))?
                .collect::<Result<_, _>>()
                .map_err(|e| format!("bad PEM in CRL file {}: {e}", file.display()))?;
        if found.is_empty() {
            return Err(format!("CRL file {} holds no CRL", file.display()));
        }
        crls.extend(found);
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), tls_provider())
        .with_crls(crls);
    let builder = if auth.required {
        builder
    } else {
        builder.allow_unauthenticated()
    };
    builder
        .build()
        .map_err(|e| format!("client_auth with CA file {}: {e}", auth.ca_file.display()))
}

/// How a returning client skips the full handshake: session tickets (stateless; the key
/// rotates every 6 hours, a ticket lives 12) and, for TLS 1.2 clients without tickets, a
/// bounded cache of session IDs. Made once per listener and kept across reloads: a reload
/// (a routing change, a rotated certificate) must not send every client back to a full
/// handshake. A resumed TLS 1.3 session still does a fresh key exchange (rustls offers only
/// psk_dhe_ke), so forward secrecy holds.
struct Resumption {
    tickets: Arc<dyn ProducesTickets>,
    sessions: Arc<dyn StoresServerSessions>,
}

impl Resumption {
    fn new() -> Result<Self, String> {
        Ok(Resumption {
            tickets: rustls::crypto::ring::Ticketer::new()
                .map_err(|e| format!("TLS session tickets: {e}"))?,
            sessions: ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES),
        })
    }

    fn apply(&self, mut config: ServerConfig) -> Arc<ServerConfig> {
        config.ticketer = self.tickets.clone();
        config.session_storage = self.sessions.clone();
        Arc::new(config)
    }
}

/// The config a listener hands each new TLS connection; a reload replaces it (its session
/// resumption stays).
pub struct ReloadableTls {
    current: ArcSwap<ServerConfig>,
    resumption: Resumption,
}

impl ReloadableTls {
    /// Terminates TLS with the certificates of `spec`: its files, or the ones installed in
    /// `store` (chosen by SNI), which the control plane swaps without this listener reloading.
    pub fn for_listener(spec: &ListenerTls, store: &Arc<CertificateStore>) -> Result<Self, String> {
        match spec {
            ListenerTls::Files(files) => Self::load(files),
            ListenerTls::Installed => {
                let mut config = ServerConfig::builder_with_provider(tls_provider())
                    .with_safe_default_protocol_versions()
                    .map_err(|e| format!("TLS setup: {e}"))?
                    .with_no_client_auth()
                    .with_cert_resolver(store.clone());
                config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
                let resumption = Resumption::new()?;
                Ok(ReloadableTls {
                    current: ArcSwap::new(resumption.apply(config)),
                    resumption,
                })
            }
        }
    }

    pub fn load(spec: &ServerTlsSpec) -> Result<Self, String> {
        let resumption = Resumption::new()?;
        Ok(ReloadableTls {
            current: ArcSwap::new(resumption.apply(server_config(spec)?)),
            resumption,
        })
    }

    /// New connections get `config`; connections already open keep theirs.
    pub fn install(&self, config: ServerConfig) {
        self.current.store(self.resumption.apply(config));
    }

    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.load_full())
    }
}
