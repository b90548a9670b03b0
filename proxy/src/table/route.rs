//! A compiled route: how to match it, and how it chooses among its weighted backends.

use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderName, COOKIE};
use http::Method;

use super::backend::Backend;
use super::edits::Edits;
use super::fields::Fields;
use super::identity::IdentityRules;
use super::matcher::{all_match, HeaderMatcher, Match, ValueMatcher};
use super::split::{sticky_bucket, Rotation, Split};
use super::url_filters::{Redirect, Rewrite};
use crate::stats::pairs::PairLog;
use crate::table_spec::RouteSpec;

pub struct HeaderRoute {
    pub(super) matches: Vec<HeaderMatcher>,
    pub(super) backend: usize,
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
    /// Whether the rule's own conditions name a method: its match is then the route's
    /// opting in to copying that method (Argo's setMirrorRoute `method`).
    fn names_method(&self) -> bool {
        self.method.is_some()
    }

    fn matches<F: Fields + ?Sized>(&self, method: &[u8], path: &[u8], headers: &F) -> bool {
        self.method.as_ref().is_none_or(|m| m.matches(method))
            && self.path.as_ref().is_none_or(|p| p.matches(path))
            && all_match(&self.headers, headers)
    }
}

pub struct Mirror {
    pub(super) matches: Vec<HeaderMatcher>,
    pub(super) rules: Vec<MirrorRule>,
    pub(super) percent_bp: u16,
    pub(super) rotation: Rotation,
    /// The backend that receives the copies.
    pub(super) to: usize,
    /// Unsafe methods the route opts in to copying.
    pub(super) methods: Vec<Method>,
    /// Set to `1` on every copy.
    pub(super) header: HeaderName,
    /// Where the client's answer and the copy's are put side by side.
    pub(super) pairs: Arc<PairLog>,
}

impl Mirror {
    /// GET, HEAD and OPTIONS are copied; any other method only when the route opted in (its
    /// `methods`, or `explicit`: a matching rule that names the method).
    fn copies(&self, method: &[u8], explicit: bool) -> bool {
        explicit
            || matches!(method, b"GET" | b"HEAD" | b"OPTIONS")
            || self.methods.iter().any(|m| m.as_str().as_bytes() == method)
    }

    /// Whether this request is of those the mirror copies (its share aside): `path` without
    /// the query.
    fn takes<F: Fields + ?Sized>(&self, method: &[u8], path: &[u8], headers: &F) -> bool {
        all_match(&self.matches, headers)
            && if self.rules.is_empty() {
                self.copies(method, false)
            } else {
                self.rules.iter().any(|r| {
                    r.matches(method, path, headers) && self.copies(method, r.names_method())
                })
            }
    }
}

pub struct Route {
    pub name: Arc<str>,
    /// As compiled, for the admin API.
    pub spec: RouteSpec,
    /// Any one must match.
    pub(super) matches: Vec<Match>,
    /// In the spec's order; `split` says which buckets each owns.
    pub backends: Vec<Backend>,
    pub(super) split: Split,
    /// Each backend's buckets of 10000, by index (from `split`).
    pub(super) shares: Vec<u16>,
    /// Every endpoint speaks HTTP/1, nothing is redirected or rewritten and no header is
    /// edited: an HTTP/1 request may be forwarded as bytes (`crate::h1`; one with a body a
    /// mirror would copy is not).
    pub h1_passthrough: bool,
    pub(super) rotation: Rotation,
    pub(super) header_routes: Vec<HeaderRoute>,
    pub(super) sticky: Option<Sticky>,
    pub(super) mirror: Option<Mirror>,
    pub timeout: Option<Duration>,
    pub request_edits: Edits,
    pub response_edits: Edits,
    /// Some: every request is answered with this redirect, no backend contacted.
    pub redirect: Option<Redirect>,
    /// Some: the host and path sent upstream are changed.
    pub rewrite: Option<Rewrite>,
    /// Some: callers are admitted, and named upstream, by their certificate's identity.
    pub identity: Option<IdentityRules>,
}

impl Route {
    /// The share of the backend called `name`, in basis points (0 when there is none).
    pub fn weight_bp(&self, name: &str) -> u16 {
        self.backends
            .iter()
            .position(|b| &*b.name == name)
            .map_or(0, |i| self.shares[i])
    }

    /// Each backend's share, in basis points, in the spec's order.
    pub fn shares_bp(&self) -> &[u16] {
        &self.shares
    }

    /// Requests each backend took over the last `window` (60 s at most), by index, from the
    /// live windows: the split actually carried out, fallbacks included, mirrors not.
    pub fn observed(&self, window: Duration) -> Vec<u64> {
        self.backends
            .iter()
            .map(|b| b.stats.live.snapshot(window).requests)
            .collect()
    }

    /// The rollout's canary share, in basis points.
    pub fn canary_weight_bp(&self) -> u16 {
        self.weight_bp(crate::table_spec::CANARY)
    }

    pub(super) fn matches(&self, i: usize) -> &Match {
        &self.matches[i]
    }

    /// Header routes first, then the sticky bucket, then the weights. None when no backend
    /// has weight (the route answers 500).
    pub fn choose<F: Fields + ?Sized>(&self, headers: &F) -> Option<usize> {
        for rule in &self.header_routes {
            if all_match(&rule.matches, headers) {
                return Some(rule.backend);
            }
        }
        // One backend with weight (a rollout at 0 % or 100 %): no bucket needed.
        if let Some(only) = self.split.only() {
            return Some(only);
        }
        if self.split.is_empty() {
            return None;
        }
        let bucket = match self.sticky.as_ref().and_then(|s| sticky_key(s, headers)) {
            Some(key) => sticky_bucket(key),
            None => self.rotation.next_bucket(),
        };
        self.split.owner(bucket)
    }

    pub fn backend(&self, index: usize) -> &Backend {
        &self.backends[index]
    }

    /// Another backend, for the one retry after a failed connect: the next in the spec's
    /// order that has weight, else the next one (a rollout's stable falls back to its canary
    /// even at weight 0, and back).
    pub fn fallback(&self, index: usize) -> Option<usize> {
        let n = self.backends.len();
        let mut others = (1..n).map(|k| (index + k) % n);
        let first = others.clone().next();
        others.find(|&i| self.shares[i] > 0).or(first)
    }

    /// The backend this request should also be copied to, if any: its index, the header that
    /// marks the copy, and the log its pair goes to. `path` is without the query. Each call
    /// that finds the request is of those copied takes a turn of the mirror's share.
    pub fn mirror_to<F: Fields + ?Sized>(
        &self,
        method: &[u8],
        path: &[u8],
        headers: &F,
    ) -> Option<(usize, &HeaderName, &Arc<PairLog>)> {
        match &self.mirror {
            Some(m) if m.percent_bp > 0 => (m.takes(method, path, headers)
                && m.rotation.next_bucket() < m.percent_bp)
                .then_some((m.to, &m.header, &m.pairs)),
            _ => None,
        }
    }

    /// Whether the route mirrors at all: asked first, so that a route without a mirror (most)
    /// costs a request nothing more.
    #[inline(always)]
    pub fn mirrors(&self) -> bool {
        self.mirror.is_some()
    }

    /// Whether a request like this one may be copied, without taking a turn of the share.
    pub fn may_mirror<F: Fields + ?Sized>(&self, method: &[u8], path: &[u8], headers: &F) -> bool {
        self.mirror
            .as_ref()
            .is_some_and(|m| m.percent_bp > 0 && m.takes(method, path, headers))
    }

    /// Whether some request of this route may be sent to another backend after its first
    /// failed (a bodiless idempotent request left unanswered).
    pub fn has_fallback(&self) -> bool {
        self.backends.len() > 1
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
