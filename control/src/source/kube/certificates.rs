//! The certificates of the Gateway's HTTPS listeners: each listener's `tls.certificateRefs`
//! → its `kubernetes.io/tls` Secret → a certificate chain and key, served for the listener's
//! hostname (by SNI) on weir's listeners that take the Gateway's certificates
//! (`tls: {from_gateway: true}`). Pure: the Gateway and the Secrets seen in; the certificates
//! and, per listener, why none could be had, out. Turning them into what rustls serves is
//! [`certified`], for the source's I/O side to install.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustls::crypto::ring::sign::any_supported_type;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use weir_proxy::sni::{SniCertificate, SniCertificates};

use super::gateway_view::GatewayView;

/// A `kubernetes.io/tls` Secret's two keys.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretView {
    pub namespace: String,
    pub name: String,
    pub kind: String,
    pub cert_pem: Option<Vec<u8>>,
    pub key_pem: Option<Vec<u8>>,
}

// Never print key material.
impl std::fmt::Debug for SecretView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret {}/{} ({})", self.namespace, self.name, self.kind)
    }
}

impl SecretView {
    pub fn from_secret(secret: &k8s_openapi::api::core::v1::Secret) -> Self {
        let data = |key: &str| {
            secret
                .data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|b| b.0.clone())
        };
        SecretView {
            namespace: secret.metadata.namespace.clone().unwrap_or_default(),
            name: secret.metadata.name.clone().unwrap_or_default(),
            kind: secret.type_.clone().unwrap_or_default(),
            cert_pem: data("tls.crt"),
            key_pem: data("tls.key"),
        }
    }
}

/// One listener's certificate, as PEM (compared to tell a change; made servable by
/// [`certified`]).
#[derive(Clone, PartialEq, Eq)]
pub struct ListenerCertificate {
    pub listener: String,
    pub hostname: Option<String>,
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for ListenerCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "certificate of listener {} ({:?})",
            self.listener, self.hostname
        )
    }
}

/// Each HTTPS listener's certificate, in the Gateway's order, and for each listener that has
/// none, why (`InvalidCertificateRef`, as the listener's ResolvedRefs says).
pub fn listener_certificates(
    gateway: &GatewayView,
    secrets: &BTreeMap<String, SecretView>,
) -> (Vec<ListenerCertificate>, BTreeMap<String, String>) {
    let mut out = Vec::new();
    let mut problems = BTreeMap::new();
    for l in gateway.listeners.iter().filter(|l| l.protocol == "HTTPS") {
        let tls = l.tls.clone().unwrap_or_default();
        if tls.mode.as_deref().is_some_and(|m| m != "Terminate") {
            problems.insert(
                l.name.clone(),
                "tls.mode Passthrough is not supported by weir".to_string(),
            );
            continue;
        }
        let Some(r) = tls.certificate_refs.first() else {
            problems.insert(l.name.clone(), "no tls.certificateRefs".to_string());
            continue;
        };
        let core = super::httproute::is_core_group(r.group.as_deref().unwrap_or(""));
        if !core || r.kind.as_deref().unwrap_or("Secret") != "Secret" {
            problems.insert(l.name.clone(), format!("{} is not a Secret", r.name));
            continue;
        }
        let namespace = r.namespace.as_deref().unwrap_or(&gateway.namespace);
        if namespace != gateway.namespace {
            problems.insert(
                l.name.clone(),
                format!("Secret {namespace}/{} is in another namespace", r.name),
            );
            continue;
        }
        let Some(secret) = secrets.get(&format!("{namespace}/{}", r.name)) else {
            problems.insert(
                l.name.clone(),
                format!("Secret {namespace}/{} not found", r.name),
            );
            continue;
        };
        let (Some(cert_pem), Some(key_pem)) = (&secret.cert_pem, &secret.key_pem) else {
            problems.insert(
                l.name.clone(),
                format!("Secret {namespace}/{} lacks tls.crt or tls.key", r.name),
            );
            continue;
        };
        let found = ListenerCertificate {
            listener: l.name.clone(),
            hostname: l.hostname.clone(),
            cert_pem: cert_pem.clone(),
            key_pem: key_pem.clone(),
        };
        match certified(&found) {
            Ok(_) => out.push(found),
            Err(e) => {
                problems.insert(
                    l.name.clone(),
                    format!("Secret {namespace}/{}: {e}", r.name),
                );
            }
        }
    }
    (out, problems)
}

/// A certificate as rustls serves it; Err says what is wrong with the PEM.
pub fn certified(c: &ListenerCertificate) -> Result<Arc<CertifiedKey>, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&c.cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tls.crt: {e}"))?;
    if chain.is_empty() {
        return Err("tls.crt holds no certificate".to_string());
    }
    let key = PrivateKeyDer::from_pem_slice(&c.key_pem).map_err(|e| format!("tls.key: {e}"))?;
    let signer = any_supported_type(&key).map_err(|e| format!("tls.key: {e}"))?;
    let key = CertifiedKey::new(chain, signer);
    key.keys_match()
        .map_err(|e| format!("tls.crt does not fit tls.key: {e}"))?;
    Ok(Arc::new(key))
}

/// What the listeners serve: every certificate that is good, for its hostname.
pub fn servable(certificates: &[ListenerCertificate]) -> SniCertificates {
    SniCertificates::new(
        certificates
            .iter()
            .filter_map(|c| {
                Some(SniCertificate {
                    hostname: c.hostname.clone(),
                    key: certified(c).ok()?,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(name: &str, hosts: &[&str]) -> SecretView {
        let cert = rcgen::generate_simple_self_signed(
            hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
        )
        .unwrap();
        SecretView {
            namespace: "infra".into(),
            name: name.into(),
            kind: "kubernetes.io/tls".into(),
            cert_pem: Some(cert.cert.pem().into_bytes()),
            key_pem: Some(cert.key_pair.serialize_pem().into_bytes()),
        }
    }

    #[test]
    fn https_listeners_get_their_secrets_certificate_or_say_why_not() {
        let gw = GatewayView::parse(&json!({
            "metadata": {"name": "gw", "namespace": "infra"},
            "spec": {"gatewayClassName": "weir", "listeners": [
                {"name": "http", "port": 80, "protocol": "HTTP"},
                {"name": "https", "port": 443, "protocol": "HTTPS",
                 "tls": {"certificateRefs": [{"group": "", "kind": "Secret", "name": "good"}]}},
                {"name": "named", "port": 443, "protocol": "HTTPS", "hostname": "second-example.org",
                 "tls": {"certificateRefs": [{"name": "good"}]}},
                {"name": "missing", "port": 443, "protocol": "HTTPS", "hostname": "x.org",
                 "tls": {"certificateRefs": [{"name": "nope"}]}},
                {"name": "broken", "port": 443, "protocol": "HTTPS", "hostname": "y.org",
                 "tls": {"certificateRefs": [{"name": "broken"}]}},
            ]}
        }))
        .unwrap();
        let mut broken = secret("broken", &["y.org"]);
        broken.key_pem = Some(b"not a key".to_vec());
        let secrets = BTreeMap::from([
            ("infra/good".to_string(), secret("good", &["example.org"])),
            ("infra/broken".to_string(), broken),
        ]);
        let (certs, problems) = listener_certificates(&gw, &secrets);
        let listeners: Vec<(&str, Option<&str>)> = certs
            .iter()
            .map(|c| (c.listener.as_str(), c.hostname.as_deref()))
            .collect();
        assert_eq!(
            listeners,
            [("https", None), ("named", Some("second-example.org"))]
        );
        assert!(
            problems["missing"].contains("infra/nope not found"),
            "{problems:?}"
        );
        assert!(problems["broken"].contains("tls.key"), "{problems:?}");
        assert!(!problems.contains_key("http"));
        let store = servable(&certs);
        assert!(store.choose(Some("second-example.org")).is_some());
        assert!(store.choose(Some("anything.example")).is_some());
    }
}
