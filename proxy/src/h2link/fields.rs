//! A header or trailer section as HTTP/2 delivered it (`h2wire`'s `Fields`) made into the
//! `http::HeaderMap` the pipeline reads: both legs, a client's request and an upstream's
//! response. Values are slices of the section's one buffer, not a copy each (one allocation
//! a section, where copying took one a field).

use http::header::HeaderValue;
use http::HeaderMap;

use super::names::name_of;
use crate::h2wire::common::{spans, Fields};
use crate::h2wire::message::is_connection_specific;

/// The fields of `map` an HTTP/2 message may carry, in order, as (name, value) octets: names
/// lower case (`http`'s are), the connection-specific fields HTTP/2 forbids left out rather
/// than refused (RFC 9113 §8.2.2; the same rule weir holds what it receives to). Both legs: a
/// request to an upstream, a response or trailers to a client.
pub fn wire_fields(map: &HeaderMap) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
    map.iter()
        .map(|(name, value)| (name.as_str().as_bytes(), value.as_bytes()))
        .filter(|(name, value)| !is_connection_specific(name, value))
}

/// The fields as a header map, in order; those sent never-indexed stay sensitive (RFC 7541
/// §7.1.3: a proxy passes that on). The engine held them to RFC 9113 §8.2 already (lower-case
/// token names, no CR, LF or NUL in values), so a refusal here is a rule the two disagree on.
/// `room`: fields the pipeline will add, made room for now rather than by growing the map.
pub fn header_map(fields: Fields, room: usize) -> Result<HeaderMap, &'static str> {
    let mut map = super::maps::take(fields.len() + room);
    if fields.is_empty() {
        return Ok(map);
    }
    let count = fields.len();
    let bytes = fields.into_bytes();
    let mut found = 0;
    for (name, value, never_indexed) in spans(&bytes) {
        let name = bytes.get(name).ok_or("a field outside its section")?;
        let name = name_of(name)?;
        if value.end > bytes.len() {
            return Err("a field outside its section");
        }
        found += 1;
        let mut value = HeaderValue::from_maybe_shared(bytes.slice(value))
            .map_err(|_| "an unusable field value")?;
        value.set_sensitive(never_indexed);
        map.append(name, value);
    }
    if found != count {
        return Err("a field outside its section");
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2wire::hpack::Field;

    fn fields(list: &[(&str, &str, bool)]) -> Fields {
        let mut fields = Fields::default();
        for (name, value, never_indexed) in list {
            fields.push(Field {
                name: name.as_bytes(),
                value: value.as_bytes(),
                never_indexed: *never_indexed,
                memo: None,
            });
        }
        fields
    }

    #[test]
    fn fields_keep_their_order_repeats_and_sensitivity() {
        let map = header_map(
            fields(&[
                ("content-type", "application/grpc", false),
                ("set-cookie", "a=1", true),
                ("grpc-status", "0", false),
                ("set-cookie", "b=2", false),
                ("x-empty", "", false),
            ]),
            0,
        )
        .unwrap();
        assert_eq!(map.len(), 5);
        assert_eq!(map["content-type"], "application/grpc");
        assert_eq!(map["grpc-status"], "0");
        let cookies: Vec<_> = map.get_all("set-cookie").iter().collect();
        assert_eq!(cookies, ["a=1", "b=2"]);
        assert!(cookies[0].is_sensitive());
        assert!(!cookies[1].is_sensitive());
        assert_eq!(map["x-empty"], "");
        assert!(header_map(Fields::default(), 0).unwrap().is_empty());
    }

    #[test]
    fn values_are_slices_of_one_buffer_not_copies() {
        let map = header_map(fields(&[("a", "first", false), ("b", "second", false)]), 0).unwrap();
        let first = map["a"].as_bytes().as_ptr() as usize;
        let second = map["b"].as_bytes().as_ptr() as usize;
        // "first", then the second field's record and its name "b", then "second": in the
        // one buffer, that far apart.
        let record = 9;
        assert_eq!(second - first, "first".len() + record + "b".len());
    }

    #[test]
    fn connection_specific_fields_are_left_out() {
        let resp = http::Response::builder()
            .header("content-type", "text/plain")
            .header("connection", "keep-alive")
            .header("keep-alive", "timeout=5")
            .header("proxy-connection", "close")
            .header("transfer-encoding", "chunked")
            .header("upgrade", "h2c")
            .header("te", "gzip")
            .header("X-Mixed", "Case")
            .body(())
            .expect("response");
        let names: Vec<_> = wire_fields(resp.headers()).collect();
        assert_eq!(
            names,
            [
                (&b"content-type"[..], &b"text/plain"[..]),
                (b"x-mixed", b"Case")
            ]
        );
        let te = http::Response::builder()
            .header("te", "trailers")
            .body(())
            .expect("response");
        assert_eq!(wire_fields(te.headers()).count(), 1);
    }

    #[test]
    fn a_map_has_room_for_the_fields_the_pipeline_adds() {
        let three = || fields(&[("a", "1", false), ("b", "2", false), ("c", "3", false)]);
        let map = header_map(three(), crate::forward::ADDED_FIELDS).unwrap();
        assert!(map.capacity() >= map.len() + crate::forward::ADDED_FIELDS);
        // Without the room a three-field map is full as built.
        assert!(header_map(three(), 0).unwrap().capacity() < 3 + crate::forward::ADDED_FIELDS);
    }

    #[test]
    fn names_are_made_once_and_shared() {
        let map = header_map(
            fields(&[
                ("grpc-status", "0", false),
                ("grpc-message", "ok", false),
                ("grpc-x", "1", false),
                ("x-other", "2", false),
            ]),
            0,
        )
        .unwrap();
        let names: Vec<_> = map.keys().map(|n| n.as_str()).collect();
        assert_eq!(names, ["grpc-status", "grpc-message", "grpc-x", "x-other"]);
        // Made once a thread, then shared (`names`): the next section's names are the same
        // octets, not a copy of them.
        let again = header_map(fields(&[("grpc-status", "0", false)]), 0).unwrap();
        let first = map.keys().next().unwrap().as_str().as_ptr();
        assert_eq!(again.keys().next().unwrap().as_str().as_ptr(), first);
    }

    #[test]
    fn a_name_http_refuses_is_an_error_not_a_panic() {
        assert!(header_map(fields(&[("Upper Case", "v", false)]), 0).is_err());
    }
}
