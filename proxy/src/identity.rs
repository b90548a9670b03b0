//! Identities in certificates (mutual TLS), one rule for both legs. Who a peer is: its
//! certificate's first URI SAN (a SPIFFE ID, `spiffe://trust-domain/ns/shop/sa/web`), else its
//! first DNS SAN, else its subject's common name — the order Envoy's and Linkerd's identities
//! take. Which identities a rule admits ([`Pattern`]: exact, or a prefix ending in `*`). And
//! why a handshake was refused, in the words the metrics and logs use.

use std::io;

use rustls::CertificateError;
use rustls_pki_types::CertificateDer;

/// The identity of a verified client certificate; None when it names none of the three.
pub fn of_certificate(der: &CertificateDer<'_>) -> Option<String> {
    let cert = webpki::EndEntityCert::try_from(der).ok()?;
    if let Some(uri) = cert.valid_uri_names().next() {
        return Some(uri.to_owned());
    }
    if let Some(dns) = cert.valid_dns_names().next() {
        return Some(dns.to_owned());
    }
    common_name(cert.subject()).map(|cn| format!("CN={cn}"))
}

/// Every identity a certificate gives (its URI SANs, then its DNS SANs): an upstream's
/// certificate is admitted when any of them matches.
pub fn all_of_certificate(der: &CertificateDer<'_>) -> Vec<String> {
    let Ok(cert) = webpki::EndEntityCert::try_from(der) else {
        return Vec::new();
    };
    cert.valid_uri_names()
        .chain(cert.valid_dns_names())
        .map(str::to_owned)
        .collect()
}

/// One admitted identity: exactly this, or (written with a trailing `*`) any that starts so.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    Exact(String),
    Prefix(String),
}

impl Pattern {
    /// `spiffe://prod/ns/shop/*` is a prefix; a `*` elsewhere, or an empty pattern, is an error.
    pub fn parse(text: &str) -> Result<Self, &'static str> {
        let (body, prefix) = match text.strip_suffix('*') {
            Some(body) => (body, true),
            None => (text, false),
        };
        if body.contains('*') {
            return Err("`*` may only end an identity (a prefix)");
        }
        if text.is_empty() {
            return Err("an empty identity");
        }
        Ok(if prefix {
            Pattern::Prefix(body.to_owned())
        } else {
            Pattern::Exact(body.to_owned())
        })
    }

    pub fn admits(&self, identity: &str) -> bool {
        match self {
            Pattern::Exact(e) => e == identity,
            Pattern::Prefix(p) => identity.starts_with(p.as_str()),
        }
    }
}

/// Why a TLS handshake failed: `no_certificate`, `expired`, `not_yet_valid`,
/// `unknown_issuer`, `revoked`, `bad_certificate` (a client's certificate refused), else
/// `protocol` (any other TLS error) or `io` (the connection failed).
pub fn refusal_reason(err: &io::Error) -> &'static str {
    let Some(tls) = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    else {
        return "io";
    };
    match tls {
        rustls::Error::NoCertificatesPresented => "no_certificate",
        rustls::Error::InvalidCertificate(why) => match why {
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => "expired",
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "not_yet_valid"
            }
            CertificateError::UnknownIssuer => "unknown_issuer",
            CertificateError::Revoked => "revoked",
            _ => "bad_certificate",
        },
        _ => "protocol",
    }
}

/// The first common name (OID 2.5.4.3) in a DER Name's contents (the RDN sequence, its
/// outer SEQUENCE's tag and length already off, as webpki gives it).
fn common_name(mut rdns: &[u8]) -> Option<String> {
    const CN: &[u8] = &[0x55, 0x04, 0x03];
    while !rdns.is_empty() {
        let (tag, set, rest) = tlv(rdns)?;
        rdns = rest;
        if tag != 0x31 {
            return None;
        }
        let mut attributes = set;
        while !attributes.is_empty() {
            let (tag, pair, rest) = tlv(attributes)?;
            attributes = rest;
            if tag != 0x30 {
                return None;
            }
            let (oid_tag, oid, value) = tlv(pair)?;
            if oid_tag != 0x06 || oid != CN {
                continue;
            }
            let (string_tag, text, _) = tlv(value)?;
            // UTF8String, PrintableString, IA5String, TeletexString (read as Latin-1-ish
            // ASCII): a name weir shows, not one it verifies.
            return match string_tag {
                0x0c | 0x13 | 0x16 | 0x14 => String::from_utf8(text.to_vec()).ok(),
                _ => None,
            };
        }
    }
    None
}

/// One DER tag-length-value: (tag, contents, what follows).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| acc << 8 | usize::from(b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let (contents, after) = rest.split_at(len);
    Some((tag, contents, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(params: rcgen::CertificateParams) -> CertificateDer<'static> {
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    #[test]
    fn a_spiffe_id_comes_first_then_a_dns_name_then_the_common_name() {
        let mut both = rcgen::CertificateParams::new(vec!["web.shop.svc".to_string()]).unwrap();
        both.subject_alt_names.push(rcgen::SanType::URI(
            "spiffe://prod/ns/shop/sa/web".try_into().unwrap(),
        ));
        assert_eq!(
            of_certificate(&certificate(both)).as_deref(),
            Some("spiffe://prod/ns/shop/sa/web")
        );

        let dns = rcgen::CertificateParams::new(vec!["web.shop.svc".to_string()]).unwrap();
        assert_eq!(
            of_certificate(&certificate(dns)).as_deref(),
            Some("web.shop.svc")
        );

        let mut named = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        named
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Shop");
        named
            .distinguished_name
            .push(rcgen::DnType::CommonName, "billing-batch");
        assert_eq!(
            of_certificate(&certificate(named)).as_deref(),
            Some("CN=billing-batch")
        );

        let nameless = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut nameless = nameless;
        nameless.distinguished_name = rcgen::DistinguishedName::new();
        assert_eq!(of_certificate(&certificate(nameless)), None);
    }

    #[test]
    fn truncated_der_is_no_name_not_a_panic() {
        assert_eq!(common_name(&[0x31, 0x05, 0x30]), None);
        assert_eq!(tlv(&[0x30, 0x84, 0xff]), None);
        assert_eq!(tlv(&[0x30, 0x82, 0x00, 0x03, 1, 2]), None);
    }

    #[test]
    fn refusals_are_named_from_the_tls_error() {
        let wrap = |e: rustls::Error| io::Error::new(io::ErrorKind::InvalidData, e);
        assert_eq!(
            refusal_reason(&wrap(rustls::Error::NoCertificatesPresented)),
            "no_certificate"
        );
        assert_eq!(
            refusal_reason(&wrap(rustls::Error::InvalidCertificate(
                CertificateError::Expired
            ))),
            "expired"
        );
        assert_eq!(
            refusal_reason(&wrap(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer
            ))),
            "unknown_issuer"
        );
        assert_eq!(
            refusal_reason(&io::Error::from(io::ErrorKind::ConnectionReset)),
            "io"
        );
    }
}
