//! Certificates the control plane installs — a Gateway's HTTPS listeners', from their Secrets —
//! chosen per handshake by the name the client asks for (SNI). One store per process, swapped
//! whole (an `ArcSwap`, like the routing table): a listener that serves from it never reloads,
//! and a handshake costs one load and a lookup.

use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// One certificate and the hostname it serves (None: any name, and clients that send none).
#[derive(Clone, Debug)]
pub struct SniCertificate {
    /// Lower-case; `*.example.com` for a wildcard.
    pub hostname: Option<String>,
    pub key: Arc<CertifiedKey>,
}

/// The certificates in force, in the order they were given (the first of equals wins).
#[derive(Debug, Default)]
pub struct SniCertificates {
    entries: Vec<SniCertificate>,
}

impl SniCertificates {
    pub fn new(entries: Vec<SniCertificate>) -> Self {
        SniCertificates { entries }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The certificate for `name`: an exact hostname, else the longest wildcard that covers it
    /// (one or more labels before its suffix), else one with no hostname.
    pub fn choose(&self, name: Option<&str>) -> Option<&Arc<CertifiedKey>> {
        let any = || self.entries.iter().find(|e| e.hostname.is_none());
        let Some(name) = name.map(str::to_ascii_lowercase) else {
            return any().map(|e| &e.key);
        };
        let exact = self
            .entries
            .iter()
            .find(|e| e.hostname.as_deref() == Some(name.as_str()));
        let wildcard = || {
            self.entries
                .iter()
                .filter_map(|e| {
                    let suffix = e.hostname.as_deref()?.strip_prefix('*')?;
                    (name.len() > suffix.len() && name.ends_with(suffix)).then_some((suffix, e))
                })
                .max_by_key(|(suffix, _)| suffix.len())
                .map(|(_, e)| e)
        };
        exact.or_else(wildcard).or_else(any).map(|e| &e.key)
    }
}

/// The store the control plane installs into and handshakes read from.
#[derive(Debug, Default)]
pub struct CertificateStore {
    current: ArcSwap<SniCertificates>,
}

impl CertificateStore {
    /// New handshakes use `certificates`; connections already open keep theirs.
    pub fn install(&self, certificates: SniCertificates) {
        self.current.store(Arc::new(certificates));
    }

    pub fn current(&self) -> Arc<SniCertificates> {
        self.current.load_full()
    }
}

impl ResolvesServerCert for CertificateStore {
    /// None (no certificate for the name, or none installed yet) fails the handshake.
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.load().choose(hello.server_name()).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::crypto::ring::sign::any_supported_type;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

    fn key(name: &str) -> Arc<CertifiedKey> {
        let cert = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
        let signer = any_supported_type(&der).unwrap();
        Arc::new(CertifiedKey::new(
            vec![CertificateDer::from(cert.cert.der().to_vec())],
            signer,
        ))
    }

    #[test]
    fn exact_then_longest_wildcard_then_any() {
        let (any, exact, wild, deeper) = (
            key("default"),
            key("a.example.org"),
            key("*.example.org"),
            key("*.x.example.org"),
        );
        let store = SniCertificates::new(vec![
            SniCertificate {
                hostname: None,
                key: any.clone(),
            },
            SniCertificate {
                hostname: Some("*.example.org".into()),
                key: wild.clone(),
            },
            SniCertificate {
                hostname: Some("*.x.example.org".into()),
                key: deeper.clone(),
            },
            SniCertificate {
                hostname: Some("a.example.org".into()),
                key: exact.clone(),
            },
        ]);
        let chosen = |name| store.choose(name).map(Arc::as_ptr);
        assert_eq!(chosen(Some("A.example.org")), Some(Arc::as_ptr(&exact)));
        assert_eq!(chosen(Some("b.example.org")), Some(Arc::as_ptr(&wild)));
        assert_eq!(chosen(Some("c.x.example.org")), Some(Arc::as_ptr(&deeper)));
        assert_eq!(chosen(Some("example.org")), Some(Arc::as_ptr(&any)));
        assert_eq!(chosen(None), Some(Arc::as_ptr(&any)));
        assert!(SniCertificates::default()
            .choose(Some("a.example.org"))
            .is_none());
    }
}
