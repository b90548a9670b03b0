//! A request's header fields as routing reads them: hyper's `HeaderMap`, or the field list of a
//! raw HTTP/1 head that is forwarded as bytes and never becomes a map.

use http::header::HeaderName;
use http::{HeaderMap, HeaderValue};

pub trait Fields {
    /// Every value of the field `name` (given lower-case, as `HeaderName`s are), in order.
    fn values<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a [u8]> + 'a;

    fn first<'a>(&'a self, name: &'a HeaderName) -> Option<&'a [u8]> {
        self.values(name).next()
    }
}

/// Up to this many names, a scan tells whether a field is present for less than hashing it.
const SCAN_MAX: usize = 16;

impl Fields for HeaderMap {
    fn values<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a [u8]> + 'a {
        // Most requests lack the field a header rule names. Comparing the few names present
        // settles that without hashing the wanted one (a standard name is a tag, a custom one
        // mostly fails on its length); only a field that is there is looked up.
        let present = self.keys_len() > SCAN_MAX || self.keys().any(|k| k == name);
        present
            .then(|| self.get_all(name))
            .into_iter()
            .flatten()
            .map(HeaderValue::as_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scanned or looked up, the same values in the same order.
    #[test]
    fn small_and_large_maps_agree() {
        for fillers in [0, SCAN_MAX] {
            let mut map = HeaderMap::new();
            map.append("x-canary", HeaderValue::from_static("a"));
            for i in 0..fillers {
                if let Ok(name) = HeaderName::from_bytes(format!("x-filler-{i}").as_bytes()) {
                    map.append(name, HeaderValue::from_static("f"));
                }
            }
            map.append("accept", HeaderValue::from_static("*/*"));
            map.append("x-canary", HeaderValue::from_static("b"));
            assert_eq!(map.keys_len() > SCAN_MAX, fillers > 0);
            let canary = HeaderName::from_static("x-canary");
            let values: Vec<&[u8]> = Fields::values(&map, &canary).collect();
            assert_eq!(values, [&b"a"[..], &b"b"[..]], "{} names", map.keys_len());
            let accept = &http::header::ACCEPT;
            assert_eq!(Fields::first(&map, accept), Some(&b"*/*"[..]));
            assert_eq!(Fields::first(&map, &http::header::COOKIE), None);
            let absent = HeaderName::from_static("x-canarx");
            assert_eq!(Fields::first(&map, &absent), None);
        }
    }
}
