//! Compiled header rules. Regexes are compiled once, at table compile time.

use http::header::HeaderName;
use regex::Regex;

use super::fields::Fields;

use crate::table_spec::{HeaderMatchSpec, MatchSpec, PathMatch, QueryMatchSpec, ValueMatch};

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

/// One compiled way to match a route: path, method, headers and query parameters all hold.
#[derive(Debug)]
pub struct Match {
    pub(super) path: PathMatcher,
    pub(super) method: Option<Box<[u8]>>,
    pub(super) headers: Vec<HeaderMatcher>,
    pub(super) query: Vec<QueryMatcher>,
}

impl Match {
    /// `target` is the request target, its query included. Always inlined: the table's walk
    /// has two copies (with and without request ports), and a call here costs the usual
    /// request ~40 instructions, measured by callgrind (benches/load/instructions.sh).
    #[inline(always)]
    pub fn matches<F: Fields + ?Sized>(&self, method: &[u8], target: &[u8], headers: &F) -> bool {
        self.path.matches(target)
            && self.method.as_deref().is_none_or(|m| m == method)
            && all_match(&self.headers, headers)
            && (self.query.is_empty() || {
                let query = query_of(target);
                self.query.iter().all(|q| q.matches(query))
            })
    }

    /// Gateway API precedence, most specific first: an exact path, then a regex (weir's choice;
    /// the spec leaves it to implementations), then the longest prefix; then a method, then
    /// more header rules, then more query rules. Ties keep table order.
    pub(super) fn precedence(&self) -> impl Ord {
        use std::cmp::Reverse;
        let (kind, len) = match &self.path {
            PathMatcher::Exact(p) => (0u8, p.len()),
            PathMatcher::Regex(_, source_len) => (1, *source_len),
            PathMatcher::Prefix(p) => (2, p.len()),
        };
        (
            kind,
            Reverse(len),
            self.method.is_none(),
            Reverse(self.headers.len()),
            Reverse(self.query.len()),
        )
    }

    pub fn compile(spec: &MatchSpec) -> Result<Self, Vec<(String, String)>> {
        let mut errors = Vec::new();
        let path = PathMatcher::compile(&spec.path).map_err(|e| errors.push(("path".into(), e)));
        let mut headers = Vec::with_capacity(spec.headers.len());
        for (j, h) in spec.headers.iter().enumerate() {
            match HeaderMatcher::compile(h) {
                Ok(m) => headers.push(m),
                Err(e) => errors.push((format!("headers[{j}]"), e)),
            }
        }
        let mut query = Vec::with_capacity(spec.query.len());
        for (j, q) in spec.query.iter().enumerate() {
            match QueryMatcher::compile(q) {
                Ok(m) => query.push(m),
                Err(e) => errors.push((format!("query[{j}]"), e)),
            }
        }
        let method = spec.method.as_deref().map(|m| {
            if m.is_empty() || !m.bytes().all(|b| b.is_ascii_uppercase()) {
                errors.push((
                    "method".into(),
                    format!("`{m}` is not an upper-case method"),
                ));
            }
            m.as_bytes().into()
        });
        match path {
            Ok(path) if errors.is_empty() => Ok(Match {
                path,
                method,
                headers,
                query,
            }),
            _ => Err(errors),
        }
    }
}

#[derive(Debug)]
pub enum PathMatcher {
    Prefix(String),
    Exact(String),
    /// The regex, and the length of its source (for precedence).
    Regex(Regex, usize),
}

impl PathMatcher {
    fn compile(spec: &PathMatch) -> Result<Self, String> {
        let value = spec.value();
        if !value.starts_with('/') && !matches!(spec, PathMatch::Regex(_)) {
            return Err(format!("`{value}` must start with `/`"));
        }
        if value.contains(['?', '#']) && !matches!(spec, PathMatch::Regex(_)) {
            return Err(format!(
                "`{value}` has a query or fragment: a path match sees the path only"
            ));
        }
        Ok(match spec {
            PathMatch::Prefix(p) => PathMatcher::Prefix(p.clone()),
            PathMatch::Exact(p) => PathMatcher::Exact(p.clone()),
            PathMatch::Regex(r) => PathMatcher::Regex(
                Regex::new(&format!("^(?:{r})$"))
                    .map_err(|e| format!("invalid regex `{r}`: {e}"))?,
                r.len(),
            ),
        })
    }

    /// `target` may still carry its query: it is cut off here.
    fn matches(&self, target: &[u8]) -> bool {
        match self {
            PathMatcher::Prefix(p) => prefix_matches(p.as_bytes(), target),
            PathMatcher::Exact(p) => path_of(target) == p.as_bytes(),
            PathMatcher::Regex(re, _) => {
                std::str::from_utf8(path_of(target)).is_ok_and(|path| re.is_match(path))
            }
        }
    }
}

/// Segment-aware: `/api` matches `/api`, `/api/x` and `/api?q`, not `/apix`. A prefix has no
/// `?` (compilation refuses one), so it can only match the path. One rule for matching and for
/// a redirect's or rewrite's ReplacePrefixMatch, which must find the same prefix.
#[inline]
pub(crate) fn prefix_matches(prefix: &[u8], target: &[u8]) -> bool {
    target.starts_with(prefix)
        && (prefix.ends_with(b"/") || matches!(target.get(prefix.len()), None | Some(b'/' | b'?')))
}

fn path_of(target: &[u8]) -> &[u8] {
    target.split(|&b| b == b'?').next().unwrap_or(target)
}

fn query_of(target: &[u8]) -> &[u8] {
    match target.iter().position(|&b| b == b'?') {
        Some(i) => &target[i + 1..],
        None => b"",
    }
}

/// A query parameter rule. Names are case-sensitive; values are compared as sent (not
/// percent-decoded); any one of a repeated parameter's values may match.
#[derive(Debug)]
pub struct QueryMatcher {
    name: String,
    value: ValueMatcher,
}

impl QueryMatcher {
    fn compile(spec: &QueryMatchSpec) -> Result<Self, String> {
        if spec.name.is_empty() {
            return Err("query parameter name must not be empty".into());
        }
        Ok(QueryMatcher {
            name: spec.name.clone(),
            value: ValueMatcher::compile(&spec.value)?,
        })
    }

    fn matches(&self, query: &[u8]) -> bool {
        query.split(|&b| b == b'&').any(|pair| {
            let (k, v) = match pair.iter().position(|&b| b == b'=') {
                Some(i) => (&pair[..i], &pair[i + 1..]),
                None => (pair, &b""[..]),
            };
            k == self.name.as_bytes() && self.value.matches(v)
        })
    }
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

    fn compiled(path: PathMatch, method: Option<&str>, query: &[(&str, &str)]) -> Match {
        let mut spec = MatchSpec::prefix("/");
        spec.path = path;
        spec.method = method.map(String::from);
        spec.query = query
            .iter()
            .map(|(k, v)| QueryMatchSpec {
                name: k.to_string(),
                value: ValueMatch::Exact(v.to_string()),
            })
            .collect();
        Match::compile(&spec).unwrap()
    }

    #[test]
    fn paths_methods_and_query() {
        let h = HeaderMap::new();
        let exact = compiled(PathMatch::Exact("/a".into()), None, &[]);
        assert!(exact.matches(b"GET", b"/a", &h));
        assert!(exact.matches(b"GET", b"/a?x=1", &h));
        assert!(!exact.matches(b"GET", b"/a/", &h));
        let prefix = compiled(PathMatch::Prefix("/a".into()), None, &[]);
        assert!(prefix.matches(b"GET", b"/a/b", &h));
        assert!(!prefix.matches(b"GET", b"/ab", &h));
        let regex = compiled(PathMatch::Regex("/v[0-9]+/.*".into()), None, &[]);
        assert!(regex.matches(b"GET", b"/v2/x?y", &h));
        assert!(!regex.matches(b"GET", b"/x/v2/x", &h));
        let post = compiled(PathMatch::Prefix("/".into()), Some("POST"), &[]);
        assert!(post.matches(b"POST", b"/", &h));
        assert!(!post.matches(b"GET", b"/", &h));
        let q = compiled(PathMatch::Prefix("/".into()), None, &[("v", "2")]);
        assert!(q.matches(b"GET", b"/?a=1&v=2", &h));
        assert!(q.matches(b"GET", b"/?v=1&v=2", &h));
        assert!(!q.matches(b"GET", b"/?V=2", &h));
        assert!(!q.matches(b"GET", b"/", &h));
        assert!(Match::compile(&MatchSpec::prefix("api")).is_err());
    }
}
