//! The hostnames a route is served for on a listener: the intersection of the listener's
//! hostname and the route's hostnames, as the Gateway API defines it. Computed when the
//! table is compiled, so a request pays nothing for it.
//!
//! A wildcard `*.example.com` stands for one or more labels before `.example.com` (not for
//! `example.com` itself). Of two names that intersect, the more specific is kept: an exact
//! name over a wildcard, the longer of two wildcards.

/// The hosts a route serves on a listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hosts {
    /// Every host (neither the listener nor the route names one).
    Any,
    /// These, lower-case (never empty).
    Only(Vec<String>),
    /// No hostname of the route intersects the listener's.
    Disjoint,
}

/// `listener`: the listener's hostname (lower-case) if it has one; `route`: the route's
/// hostnames as written (empty: every host).
pub fn intersect(listener: Option<&str>, route: &[String]) -> Hosts {
    let route: Vec<String> = route.iter().map(|h| h.to_ascii_lowercase()).collect();
    match (listener, route.is_empty()) {
        (None, true) => Hosts::Any,
        (None, false) => Hosts::Only(route),
        (Some(l), true) => Hosts::Only(vec![l.to_string()]),
        (Some(l), false) => {
            let mut out: Vec<String> = Vec::new();
            for r in &route {
                if let Some(kept) = narrower(l, r) {
                    if !out.iter().any(|o| o == kept) {
                        out.push(kept.to_string());
                    }
                }
            }
            if out.is_empty() {
                Hosts::Disjoint
            } else {
                Hosts::Only(out)
            }
        }
    }
}

/// The more specific of two names when they intersect.
fn narrower<'a>(a: &'a str, b: &'a str) -> Option<&'a str> {
    match (a.strip_prefix('*'), b.strip_prefix('*')) {
        (None, None) => (a == b).then_some(a),
        (Some(suffix), None) => (b.len() > suffix.len() && b.ends_with(suffix)).then_some(b),
        (None, Some(suffix)) => (a.len() > suffix.len() && a.ends_with(suffix)).then_some(a),
        (Some(sa), Some(sb)) => {
            if sa.ends_with(sb) {
                Some(a)
            } else if sb.ends_with(sa) {
                Some(b)
            } else {
                None
            }
        }
    }
}

impl Hosts {
    /// The union of two listeners' hosts for one route.
    pub fn union(self, other: Hosts) -> Hosts {
        match (self, other) {
            (Hosts::Any, _) | (_, Hosts::Any) => Hosts::Any,
            (Hosts::Disjoint, h) | (h, Hosts::Disjoint) => h,
            (Hosts::Only(mut a), Hosts::Only(b)) => {
                for h in b {
                    if !a.contains(&h) {
                        a.push(h);
                    }
                }
                Hosts::Only(a)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(hosts: &[&str]) -> Hosts {
        Hosts::Only(hosts.iter().map(|h| h.to_string()).collect())
    }

    fn route(hosts: &[&str]) -> Vec<String> {
        hosts.iter().map(|h| h.to_string()).collect()
    }

    #[test]
    fn the_specs_examples() {
        // From the HTTPRoute `hostnames` documentation and the conformance suite's
        // httproute-hostname-intersection manifests.
        let l = Some("very.specific.com");
        assert_eq!(
            intersect(l, &route(&["very.specific.com"])),
            only(&["very.specific.com"])
        );
        assert_eq!(
            intersect(l, &route(&["*.specific.com"])),
            only(&["very.specific.com"])
        );
        assert_eq!(
            intersect(l, &route(&["non.matching.com", "*.nonmatchingwildcard.io"])),
            Hosts::Disjoint
        );
        let w = Some("*.wildcard.io");
        assert_eq!(
            intersect(w, &route(&["bar.wildcard.io", "foo.bar.wildcard.io"])),
            only(&["bar.wildcard.io", "foo.bar.wildcard.io"])
        );
        assert_eq!(
            intersect(w, &route(&["*.wildcard.io"])),
            only(&["*.wildcard.io"])
        );
        assert_eq!(
            intersect(w, &route(&["*.foo.wildcard.io"])),
            only(&["*.foo.wildcard.io"])
        );
        assert_eq!(intersect(w, &route(&["wildcard.io"])), Hosts::Disjoint);
        assert_eq!(
            intersect(
                Some("*.anotherwildcard.io"),
                &route(&["*.anotherwildcard.io"])
            ),
            only(&["*.anotherwildcard.io"])
        );
        assert_eq!(intersect(None, &route(&[])), Hosts::Any);
        assert_eq!(
            intersect(None, &route(&["A.example.com"])),
            only(&["a.example.com"])
        );
        assert_eq!(intersect(Some("bar.com"), &route(&[])), only(&["bar.com"]));
    }

    #[test]
    fn listeners_add_up() {
        let a = intersect(Some("*.bar.com"), &route(&[]));
        let b = intersect(Some("*.foo.com"), &route(&[]));
        assert_eq!(a.union(b), only(&["*.bar.com", "*.foo.com"]));
        assert_eq!(Hosts::Disjoint.union(Hosts::Disjoint), Hosts::Disjoint);
        assert_eq!(only(&["x"]).union(Hosts::Any), Hosts::Any);
    }
}
