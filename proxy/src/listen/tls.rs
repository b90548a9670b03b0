//! TLS termination: a rustls server config from PEM files, swappable when the config reloads,
//! with session resumption that outlives reloads — but not a change of whom the listener
//! trusts to be a client.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

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

/// A listener's TLS as its files say, with a digest of what it trusts of clients: the client
/// CA, the CRLs and the mode (0 without client auth).
pub struct ServerTls {
    config: ServerConfig,
    client_trust: u64,
}

/// Reads the certificate chain and key (and the client CA and CRLs); the error names the file
/// and what is wrong with it. (Session resumption is the listener's: `ReloadableTls` adds it.)
pub fn server_config(spec: &ServerTlsSpec) -> Result<ServerTls, String> {
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
    let (builder, client_trust) = match &spec.client_auth {
        None => (builder.with_no_client_auth(), 0),
        Some(auth) => {
            let (verifier, trust) = client_verifier(auth)?;
            (builder.with_client_cert_verifier(verifier), trust)
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("certificate {cert_file} does not fit its key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(ServerTls {
        config,
        client_trust,
    })
}

/// Mutual TLS: a client's certificate must chain to the CA file's certificates (and not be
/// revoked by a CRL file) — checked by rustls at the handshake, which a client that fails it
/// never gets past. `optional` lets a client without a certificate through, unidentified.
/// With it, a digest of the trust: the CA certificates, the CRLs and the mode.
fn client_verifier(auth: &ClientAuthSpec) -> Result<(Arc<dyn ClientCertVerifier>, u64), String> {
    let roots = roots_from_file(&auth.ca_file)?;
    let mut trust = std::collections::hash_map::DefaultHasher::new();
    auth.required.hash(&mut trust);
    for root in roots.roots.iter() {
        root.subject.as_ref().hash(&mut trust);
        root.subject_public_key_info.as_ref().hash(&mut trust);
    }
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
        for crl in &found {
            crl.as_ref().hash(&mut trust);
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
    let verifier = builder
        .build()
        .map_err(|e| format!("client_auth with CA file {}: {e}", auth.ca_file.display()))?;
    Ok((verifier, trust.finish()))
}

/// How a returning client skips the full handshake: session tickets (stateless; the key
/// rotates every 6 hours, a ticket lives 12) and, for TLS 1.2 clients without tickets, a
/// bounded cache of session IDs. Made once per listener and kept across reloads: a reload
/// (a routing change, a rotated certificate) must not send every client back to a full
/// handshake. A resumed TLS 1.3 session still does a fresh key exchange (rustls offers only
/// psk_dhe_ke), so forward secrecy holds.
///
/// But a resumed session skips the client's certificate: it stands for the one verified when
/// it began. So when what the listener trusts of clients changes (a CA dropped, a CRL that
/// revokes more), resumption starts afresh: a session begun under the old trust would
/// otherwise carry a certificate the new one refuses for the ticket's whole life.
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
/// resumption stays while the client trust does).
pub struct ReloadableTls {
    current: ArcSwap<ServerConfig>,
    /// The client trust's digest, and the resumption made under it.
    resumption: Mutex<(u64, Resumption)>,
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
                    resumption: Mutex::new((0, resumption)),
                })
            }
        }
    }

    pub fn load(spec: &ServerTlsSpec) -> Result<Self, String> {
        let tls = server_config(spec)?;
        let resumption = Resumption::new()?;
        Ok(ReloadableTls {
            current: ArcSwap::new(resumption.apply(tls.config)),
            resumption: Mutex::new((tls.client_trust, resumption)),
        })
    }

    /// New connections get `tls`; connections already open keep theirs. Sessions resume
    /// across it unless the client trust changed.
    pub fn install(&self, tls: ServerTls) {
        let mut resumption = self.resumption.lock().unwrap_or_else(|p| p.into_inner());
        if resumption.0 != tls.client_trust {
            match Resumption::new() {
                Ok(fresh) => *resumption = (tls.client_trust, fresh),
                Err(err) => {
                    // Without a new ticket key no session may resume under the new trust
                    // from the old: none resumes at all until one can be made.
                    tracing::error!(error = %err, "TLS session tickets: cannot make a new key; resumption is off");
                    let mut config = tls.config;
                    config.ticketer = Arc::new(NoTickets);
                    config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
                    self.current.store(Arc::new(config));
                    return;
                }
            }
        }
        self.current.store(resumption.1.apply(tls.config));
    }

    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.load_full())
    }
}

/// Issues no ticket: resumption off, for when no fresh ticket key could be made.
#[derive(Debug)]
struct NoTickets;

impl ProducesTickets for NoTickets {
    fn enabled(&self) -> bool {
        false
    }

    fn lifetime(&self) -> u32 {
        0
    }

    fn encrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }

    fn decrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
}
