//! Compiled header rules. Regexes are compiled once, at table compile time.

use http::header::HeaderName;
use regex::Regex;

use super::fields::Fields;

use crate::table_spec::{HeaderMatchSpec, ValueMatch};

#[derive(Debug)]
pub enum ValueMatcher {
    Exact(String),
    Prefix(String),
    Regex(Regex),
}

impl ValueMatcher {
    pub fn compile(spec: &ValueMatch) -> Result<Self, String> {
        Ok(match spec {
            ValueMatch::Exact(s) => ValueMatcher::Exact(s.clone()),
            ValueMatch::Prefix(s) => ValueMatcher::Prefix(s.clone()),
            ValueMatch::Regex(s) => {
                // Anchored both ends, as Argo's header routes are.
                let re = Regex::new(&format!("^(?:{s})$"))
                    .map_err(|e| format!("invalid regex `{s}`: {e}"))?;
                ValueMatcher::Regex(re)
            }
        })
    }

    pub fn matches(&self, value: &[u8]) -> bool {
        match self {
            ValueMatcher::Exact(s) => value == s.as_bytes(),
            ValueMatcher::Prefix(p) => value.starts_with(p.as_bytes()),
            ValueMatcher::Regex(re) => std::str::from_utf8(value).is_ok_and(|v| re.is_match(v)),
        }
    }
}

#[derive(Debug)]
pub struct HeaderMatcher {
    name: HeaderName,
    value: ValueMatcher,
}

impl HeaderMatcher {
    pub fn compile(spec: &HeaderMatchSpec) -> Result<Self, String> {
        let name = HeaderName::from_bytes(spec.name.as_bytes())
            .map_err(|_| format!("`{}` is not a valid header name", spec.name))?;
        let value = ValueMatcher::compile(&spec.value)?;
        Ok(HeaderMatcher { name, value })
    }

    /// Any value of a repeated header may match.
    pub fn matches<F: Fields + ?Sized>(&self, headers: &F) -> bool {
        headers.values(&self.name).any(|v| self.value.matches(v))
    }
}

/// All of them must match; an empty list matches everything.
#[inline]
pub fn all_match<F: Fields + ?Sized>(rules: &[HeaderMatcher], headers: &F) -> bool {
    // Most routes have no header rules: decided without a call.
    rules.is_empty() || rules.iter().all(|r| r.matches(headers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderMap;

    #[test]
    fn header_rules() {
        let mut h = HeaderMap::new();
        h.insert("x-canary", "always".parse().unwrap());
        let spec = |v| HeaderMatchSpec {
            name: "X-Canary".into(),
            value: v,
        };
        assert!(
            HeaderMatcher::compile(&spec(ValueMatch::Exact("always".into())))
                .unwrap()
                .matches(&h)
        );
        assert!(
            HeaderMatcher::compile(&spec(ValueMatch::Prefix("alw".into())))
                .unwrap()
                .matches(&h)
        );
        assert!(
            HeaderMatcher::compile(&spec(ValueMatch::Regex("a.*s".into())))
                .unwrap()
                .matches(&h)
        );
        // Anchored: a partial match is no match.
        assert!(
            !HeaderMatcher::compile(&spec(ValueMatch::Regex("lway".into())))
                .unwrap()
                .matches(&h)
        );
        assert!(HeaderMatcher::compile(&spec(ValueMatch::Regex("(".into()))).is_err());
    }
}
