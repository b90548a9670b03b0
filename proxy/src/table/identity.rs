//! A route's rules on its callers' identities (mutual TLS, `listen::identity`): who may use it,
//! and the header that tells the upstream who called. Carried out by the hyper engine alone,
//! as header edits are (`Route::h1_passthrough`).

use http::{HeaderMap, HeaderName, HeaderValue};

use super::error::TableErrors;
use crate::identity::Pattern;
use crate::table_spec::ClientIdentitySpec;

#[derive(Debug)]
pub struct IdentityRules {
    /// Empty: every caller, with an identity or without.
    allow: Vec<Pattern>,
    header: Option<HeaderName>,
}

impl IdentityRules {
    /// None when the spec asks for nothing.
    pub(super) fn compile(
        spec: &ClientIdentitySpec,
        path: &str,
        errors: &mut TableErrors,
    ) -> Option<Self> {
        if spec.allow.is_empty() && spec.header.is_none() {
            return None;
        }
        let mut allow = Vec::with_capacity(spec.allow.len());
        for (i, entry) in spec.allow.iter().enumerate() {
            match Pattern::parse(entry) {
                Ok(pattern) => allow.push(pattern),
                Err(why) => errors.push(format!("{path}.allow[{i}]"), why),
            }
        }
        let header = match &spec.header {
            None => None,
            Some(name) => match HeaderName::from_bytes(name.as_bytes()) {
                Ok(name) => Some(name),
                Err(_) => {
                    errors.push(
                        format!("{path}.header"),
                        format!("{name:?} is no header name"),
                    );
                    None
                }
            },
        };
        Some(IdentityRules { allow, header })
    }

    /// Whether a caller with `identity` (None: no certificate) may use the route.
    pub fn admits(&self, identity: Option<&str>) -> bool {
        if self.allow.is_empty() {
            return true;
        }
        let Some(identity) = identity else {
            return false;
        };
        self.allow.iter().any(|p| p.admits(identity))
    }

    /// The route's identity header: whatever the client sent under that name goes (never
    /// believed), and the verified identity takes its place when there is one.
    pub fn stamp(&self, headers: &mut HeaderMap, identity: Option<&str>) {
        let Some(name) = &self.header else {
            return;
        };
        headers.remove(name);
        if let Some(value) = identity.and_then(|i| HeaderValue::from_str(i).ok()) {
            headers.insert(name.clone(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], header: Option<&str>) -> IdentityRules {
        let spec = ClientIdentitySpec {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            header: header.map(str::to_owned),
        };
        let mut errors = TableErrors::default();
        let rules = IdentityRules::compile(&spec, "routes[0].client_identity", &mut errors);
        assert!(errors.is_empty(), "{errors}");
        rules.expect("rules")
    }

    #[test]
    fn exact_and_prefix_identities_are_admitted_and_others_not() {
        let r = rules(
            &[
                "spiffe://prod/ns/shop/*",
                "spiffe://prod/ns/web/sa/frontend",
            ],
            None,
        );
        assert!(r.admits(Some("spiffe://prod/ns/shop/sa/cart")));
        assert!(r.admits(Some("spiffe://prod/ns/web/sa/frontend")));
        assert!(!r.admits(Some("spiffe://prod/ns/web/sa/frontend2")));
        // The prefix is `spiffe://prod/ns/shop/`: a namespace that merely starts alike is not in.
        assert!(!r.admits(Some("spiffe://prod/ns/shopping/sa/x")));
        assert!(!r.admits(Some("spiffe://staging/ns/shop/sa/cart")));
        assert!(!r.admits(None), "no certificate, no entry");
        // No list: anyone.
        assert!(rules(&[], Some("x-client-identity")).admits(None));
    }

    #[test]
    fn the_header_is_never_the_clients() {
        let r = rules(&[], Some("x-client-identity"));
        let mut h = HeaderMap::new();
        h.insert(
            "x-client-identity",
            HeaderValue::from_static("spiffe://forged"),
        );
        r.stamp(&mut h, None);
        assert!(h.get("x-client-identity").is_none());
        h.insert(
            "x-client-identity",
            HeaderValue::from_static("spiffe://forged"),
        );
        r.stamp(&mut h, Some("spiffe://prod/ns/shop/sa/cart"));
        assert_eq!(
            h.get_all("x-client-identity").iter().collect::<Vec<_>>(),
            ["spiffe://prod/ns/shop/sa/cart"]
        );
    }

    #[test]
    fn a_star_inside_an_identity_is_an_error() {
        let spec = ClientIdentitySpec {
            allow: vec!["spiffe://*/ns/shop".into(), String::new()],
            header: Some("bad header".into()),
        };
        let mut errors = TableErrors::default();
        IdentityRules::compile(&spec, "r", &mut errors);
        let text = errors.to_string();
        assert!(
            text.contains("r.allow[0]") && text.contains("r.allow[1]") && text.contains("r.header"),
            "{text}"
        );
    }
}
