//! A compiled route: how to match it, and how it chooses between stable and canary.

use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderName, COOKIE};
use http::{HeaderMap, Method};

use super::backend::Backend;
use super::fields::Fields;
use super::matcher::{all_match, HeaderMatcher, ValueMatcher};
use super::split::{sticky_bucket, Rotation};
use crate::stats::Role;
use crate::table_spec::{RouteSpec, MAX_WEIGHT_BP};

pub struct HeaderRoute {
    pub(super) matches: Vec<HeaderMatcher>,
    pub(super) role: Role,
}

pub enum Sticky {
    Cookie(String),
    Header(HeaderName),
}

pub struct MirrorRule {
    pub(super) method: Option<ValueMatcher>,
    pub(super) path: Option<ValueMatcher>,
    pub(super) headers: Vec<HeaderMatcher>,
}

impl MirrorRule {
    fn matches(&self, method: &Method, path: &str, headers: &HeaderMap) -> bool {
        self.method
            .as_ref()
            .is_none_or(|m| m.matches(method.as_str().as_bytes()))
            && self
                .path
                .as_ref()
                .is_none_or(|p| p.matches(path.as_bytes()))
            && all_match(&self.headers, headers)
    }
}

pub struct Mirror {
    pub(super) matches: Vec<HeaderMatcher>,
    pub(super) rules: Vec<MirrorRule>,
    pub(super) percent_bp: u16,
    pub(super) rotation: Rotation,
}

pub struct Route {
    pub name: Arc<str>,
    /// As compiled, for the admin API.
    pub spec: RouteSpec,
    pub(super) path_prefix: String,
    pub(super) headers: Vec<HeaderMatcher>,
    pub stable: Backend,
    pub canary: Option<Backend>,
    /// Every endpoint speaks HTTP/1 and nothing is mirrored: an HTTP/1 request may be forwarded
    /// as bytes (`crate::h1`).
    pub h1_passthrough: bool,
    pub(super) weight_bp: u16,
    pub(super) rotation: Rotation,
    pub(super) header_routes: Vec<HeaderRoute>,
    pub(super) sticky: Option<Sticky>,
    pub(super) mirror: Option<Mirror>,
    pub timeout: Option<Duration>,
}

impl Route {
    pub fn canary_weight_bp(&self) -> u16 {
        self.weight_bp
    }

    /// Segment-aware: `/api` matches `/api`, `/api/x` and `/api?q`, not `/apix`. `path` may
    /// still carry its query: a prefix has no `?` (compilation refuses one), so it can only
    /// match within the path.
    pub(super) fn path_matches(&self, path: &[u8]) -> bool {
        let p = self.path_prefix.as_bytes();
        path.starts_with(p)
            && (p.ends_with(b"/") || matches!(path.get(p.len()), None | Some(b'/' | b'?')))
    }

    pub(super) fn headers_match<F: Fields + ?Sized>(&self, headers: &F) -> bool {
        all_match(&self.headers, headers)
    }

    /// Header routes first, then the sticky bucket, then the weight.
    pub fn choose<F: Fields + ?Sized>(&self, headers: &F) -> Role {
        if self.canary.is_none() {
            return Role::Stable;
        }
        for rule in &self.header_routes {
            if all_match(&rule.matches, headers) {
                return rule.role;
            }
        }
        if self.weight_bp == 0 {
            return Role::Stable;
        }
        if self.weight_bp >= MAX_WEIGHT_BP {
            return Role::Canary;
        }
        let bucket = match self.sticky.as_ref().and_then(|s| sticky_key(s, headers)) {
            Some(key) => sticky_bucket(key),
            None => self.rotation.next_bucket(),
        };
        if bucket < self.weight_bp {
            Role::Canary
        } else {
            Role::Stable
        }
    }

    pub fn backend(&self, role: Role) -> &Backend {
        match role {
            Role::Canary => self.canary.as_ref().unwrap_or(&self.stable),
            Role::Stable => &self.stable,
        }
    }

    /// The other side, for the one retry after a failed connect.
    pub fn fallback(&self, role: Role) -> Option<&Backend> {
        match role {
            Role::Stable => self.canary.as_ref(),
            Role::Canary => Some(&self.stable),
        }
    }

    /// Whether this request should also be copied to canary.
    pub fn should_mirror(&self, method: &Method, path: &str, headers: &HeaderMap) -> bool {
        match &self.mirror {
            Some(m) if self.canary.is_some() && m.percent_bp > 0 => {
                all_match(&m.matches, headers)
                    && (m.rules.is_empty()
                        || m.rules.iter().any(|r| r.matches(method, path, headers)))
                    && m.rotation.next_bucket() < m.percent_bp
            }
            _ => false,
        }
    }
}

fn sticky_key<'h, F: Fields + ?Sized>(sticky: &'h Sticky, headers: &'h F) -> Option<&'h [u8]> {
    match sticky {
        Sticky::Header(name) => headers.first(name),
        Sticky::Cookie(name) => headers.values(&COOKIE).find_map(|v| cookie_value(v, name)),
    }
}

fn cookie_value<'h>(header: &'h [u8], name: &str) -> Option<&'h [u8]> {
    header.split(|&b| b == b';').find_map(|pair| {
        let pair = pair.trim_ascii();
        let (k, v) = pair.split_at(pair.iter().position(|&b| b == b'=')?);
        (k == name.as_bytes()).then_some(&v[1..])
    })
}

#[cfg(test)]
mod tests {
    use super::cookie_value;

    #[test]
    fn cookies() {
        assert_eq!(
            cookie_value(b"a=1; session=abc; b=2", "session"),
            Some(&b"abc"[..])
        );
        assert_eq!(cookie_value(b"sessionx=1", "session"), None);
        assert_eq!(cookie_value(b"session=", "session"), Some(&b""[..]));
        assert_eq!(cookie_value(b"junk", "session"), None);
    }
}
