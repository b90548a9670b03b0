//! TLS towards upstreams: rustls client configs, one per (CA source, ALPN).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::PrivateKeyDer;

use super::TlsKey;
use crate::identity::{self, Pattern};
use crate::table_spec::{ClientCertSpec, UpstreamProtocol};

/// A certificate chain and its key from PEM files; errors name the file.
fn read_certificate(
    files: &ClientCertSpec,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let cert_file = files.cert_file.display();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert_file)
        .map_err(|e| format!("cannot read certificate file {cert_file}: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("bad PEM in certificate file {cert_file}: {e}"))?;
    if chain.is_empty() {
        return Err(format!("certificate file {cert_file} holds no certificate"));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key_file).map_err(|e| {
        format!(
            "cannot read a private key from {}: {e}",
            files.key_file.display()
        )
    })?;
    Ok((chain, key))
}

/// An upstream's certificate must chain to the roots (webpki, as always) and name one of the
/// admitted identities (a URI SAN such as a SPIFFE ID, or a DNS SAN). The identities stand in
/// for the server-name check: a certificate webpki finds good in every way but its name is
/// admitted by identity.
#[derive(Debug)]
struct IdentityVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    identities: Vec<Pattern>,
}

impl ServerCertVerifier for IdentityVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(_)
            | Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => {}
            Err(other) => return Err(other),
        }
        let names = identity::all_of_certificate(end_entity);
        if names
            .iter()
            .any(|name| self.identities.iter().any(|p| p.admits(name)))
        {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

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

/// The client config of one TLS upstream (`TlsKey`): its roots, the name or identities its
/// certificate must have, and the certificate weir presents (mutual TLS).
pub fn client_config(
    tls: &TlsKey,
    protocol: UpstreamProtocol,
) -> Result<Arc<ClientConfig>, String> {
    let roots = match &tls.ca_file {
        Some(path) => Arc::new(roots_from_file(path)?),
        None => system_roots(),
    };
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let builder = if tls.identities.is_empty() {
        builder.with_root_certificates(roots)
    } else {
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider())
            .build()
            .map_err(|e| format!("TLS setup: {e}"))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(IdentityVerifier {
                webpki,
                identities: tls.identities.clone(),
            }))
    };
    let mut config = match &tls.client_cert {
        None => builder.with_no_client_auth(),
        Some((files, _)) => {
            let (chain, key) = read_certificate(files)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("{}: {e}", files.cert_file.display()))?
        }
    };
    config.alpn_protocols = match protocol {
        UpstreamProtocol::Http1 => vec![b"http/1.1".to_vec()],
        UpstreamProtocol::Http2 => vec![b"h2".to_vec()],
    };
    Ok(Arc::new(config))
}
