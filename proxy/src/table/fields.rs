//! A request's header fields as routing reads them: hyper's `HeaderMap`, or the field list of a
//! raw HTTP/1 head that is forwarded as bytes and never becomes a map.

use http::header::HeaderName;
use http::HeaderMap;

pub trait Fields {
    /// Every value of the field `name` (given lower-case, as `HeaderName`s are), in order.
    fn values<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a [u8]> + 'a;

    fn first<'a>(&'a self, name: &'a HeaderName) -> Option<&'a [u8]> {
        self.values(name).next()
    }
}

impl Fields for HeaderMap {
    fn values<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.get_all(name).iter().map(|v| v.as_bytes())
    }
}
