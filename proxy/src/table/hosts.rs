//! Which routes a request's host can reach: exact hosts through a case-insensitive hash table,
//! `*.suffix` wildcards longest first, then the routes with no host rule.
//!
//! A Host header is read as it came, port and capitals included: one pass hashes it without
//! lower-casing a copy, and the compare that confirms a hit ignores ASCII case.

use hashbrown::HashTable;

struct ExactHost {
    hash: u64,
    /// Lower-case, as compiled.
    host: Box<str>,
    routes: Vec<usize>,
}

#[derive(Default)]
pub(super) struct HostIndex {
    exact: HashTable<ExactHost>,
    /// `.suffix` (lower-case) → routes; longest suffix first.
    wildcard: Vec<(Box<str>, Vec<usize>)>,
    /// Routes with no host rule.
    any: Vec<usize>,
}

impl HostIndex {
    /// Hosts lower-case; each route list already in match order.
    pub(super) fn new(
        exact: impl IntoIterator<Item = (String, Vec<usize>)>,
        mut wildcard: Vec<(String, Vec<usize>)>,
        any: Vec<usize>,
    ) -> Self {
        let mut table = HashTable::new();
        for (host, routes) in exact {
            let hash = host_hash(host.as_bytes());
            table.insert_unique(
                hash,
                ExactHost {
                    hash,
                    host: host.into(),
                    routes,
                },
                |e| e.hash,
            );
        }
        wildcard.sort_by_key(|(suffix, _)| std::cmp::Reverse(suffix.len()));
        HostIndex {
            exact: table,
            wildcard: wildcard
                .into_iter()
                .map(|(s, routes)| (s.into(), routes))
                .collect(),
            any,
        }
    }

    /// The routes of an exact host (`host` lower- or upper-case, port already stripped).
    pub(super) fn exact(&self, host: &[u8]) -> Option<&[usize]> {
        // Without hostnames (a sidecar's usual table) there is nothing to hash the host for.
        if self.exact.is_empty() {
            return None;
        }
        self.exact
            .find(host_hash(host), |e| {
                // Hosts mostly arrive lower-case already: try the plain compare first.
                e.host.as_bytes() == host || e.host.as_bytes().eq_ignore_ascii_case(host)
            })
            .map(|e| e.routes.as_slice())
    }

    /// The routes of each wildcard `host` ends with, longest suffix first.
    pub(super) fn wildcards<'a>(&'a self, host: &'a [u8]) -> impl Iterator<Item = &'a [usize]> {
        self.wildcard.iter().filter_map(move |(suffix, routes)| {
            let at = host.len().checked_sub(suffix.len()).filter(|&at| at > 0)?;
            host[at..]
                .eq_ignore_ascii_case(suffix.as_bytes())
                .then_some(routes.as_slice())
        })
    }

    /// The routes with no host rule.
    pub(super) fn any(&self) -> &[usize] {
        &self.any
    }
}

/// A word-at-a-time hash in which every byte has its 0x20 bit set first, so an upper-case letter
/// hashes as its lower-case self. The keys come from the config: a client's Host can only probe
/// a table it cannot grow, so a keyed hash buys nothing here.
fn host_hash(host: &[u8]) -> u64 {
    const CASE: u64 = 0x2020_2020_2020_2020;
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    // Multiply to 128 bits and fold, so both ends of the result depend on every input bit.
    let mix = |a: u64| {
        let p = u128::from(a) * u128::from(K);
        (p as u64) ^ ((p >> 64) as u64)
    };
    let mut h = host.len() as u64;
    let mut words = host.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        h = mix(h ^ (u64::from_le_bytes(w) | CASE));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = mix(h ^ (u64::from_le_bytes(w) | CASE));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::host_bytes;

    fn index() -> HostIndex {
        HostIndex::new(
            [
                ("api.example.com".to_string(), vec![0]),
                (
                    "a-very-long-host-name.internal.example.com".to_string(),
                    vec![1],
                ),
                ("127.0.0.1".to_string(), vec![2]),
                ("::1".to_string(), vec![3]),
            ],
            vec![
                (".example.com".to_string(), vec![4]),
                (".internal.example.com".to_string(), vec![5]),
            ],
            vec![6],
        )
    }

    /// The lists in the order `RouteTable::find` tries them.
    fn lists(index: &HostIndex, authority: Option<&str>) -> Vec<Vec<usize>> {
        let mut lists = Vec::new();
        if let Some(host) = authority.map(|a| host_bytes(a.as_bytes())) {
            lists.extend(index.exact(host).map(<[usize]>::to_vec));
            lists.extend(index.wildcards(host).map(<[usize]>::to_vec));
        }
        lists.push(index.any().to_vec());
        lists
    }

    #[test]
    fn exact_then_longest_wildcard_then_any() {
        let index = index();
        assert_eq!(
            lists(&index, Some("api.example.com")),
            [vec![0], vec![4], vec![6]]
        );
        assert_eq!(
            lists(&index, Some("x.internal.example.com")),
            [vec![5], vec![4], vec![6]]
        );
        // A wildcard needs at least one label before its suffix.
        assert_eq!(lists(&index, Some("example.com")), [vec![6]]);
        assert_eq!(lists(&index, Some(".example.com")), [vec![6]]);
        assert_eq!(lists(&index, None), [vec![6]]);
    }

    #[test]
    fn case_and_port_do_not_matter() {
        let index = index();
        for authority in [
            "API.Example.COM",
            "api.example.com:8443",
            "Api.Example.Com:",
        ] {
            assert_eq!(lists(&index, Some(authority))[0], [0], "{authority}");
        }
        assert_eq!(
            lists(
                &index,
                Some("A-VERY-LONG-HOST-NAME.internal.example.com:80")
            )[0],
            [1]
        );
        assert_eq!(lists(&index, Some("127.0.0.1:9000"))[0], [2]);
        assert_eq!(lists(&index, Some("[::1]:80"))[0], [3]);
        assert_eq!(lists(&index, Some("WWW.EXAMPLE.COM"))[0], [4]);
        // Same length and the same bytes but one: no false hit from the case-folded hash.
        assert_eq!(lists(&index, Some("apj.example.com"))[0], [4]);
    }

    #[test]
    fn hash_folds_case_only() {
        assert_eq!(
            host_hash(b"Shop.Example.COM"),
            host_hash(b"shop.example.com")
        );
        assert_ne!(
            host_hash(b"shop.example.com"),
            host_hash(b"shop.example.co")
        );
        assert_ne!(host_hash(b"a"), host_hash(b"a\0"));
    }
}
