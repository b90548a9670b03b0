//! Field names made into `HeaderName`s once per thread rather than once per field.
//!
//! Why: `HeaderName::from_bytes` maps and matches every name against http's standard ones
//! (some 130 instructions a name, seven names a gRPC call), and copies any other name — a
//! gRPC name, `x-request-id`, `traceparent` — into an allocation of its own, every time. A
//! connection's messages carry the same names again and again, so each thread keeps the names
//! it made last in a small table (2 ways, `SETS` sets, names up to `LONGEST` octets): a name
//! found there is a clone, which for a name of weir's own shares its bytes.
//!
//! What a hostile client can do to it: make names miss (each then costs what it cost before)
//! and replace what is kept; the table never holds more than `2 × SETS` names.

use std::cell::RefCell;

use http::header::HeaderName;

const SETS: usize = 32;
/// Longer names are made each time: rare, and not worth the room.
const LONGEST: usize = 64;

/// Per set, the name made last first.
type Seen = [[Option<HeaderName>; 2]; SETS];

thread_local! {
    static SEEN: RefCell<Seen> = const { RefCell::new([const { [None, None] }; SETS]) };
}

/// `name` (lower case, as HTTP/2 sends it and weir's engine checked) as a `HeaderName`.
pub fn name_of(name: &[u8]) -> Result<HeaderName, &'static str> {
    let Some(set) = set_of(name) else {
        return made(name);
    };
    let found = SEEN.try_with(|seen| {
        let mut seen = seen.try_borrow_mut().ok()?;
        let ways = seen.get_mut(set)?;
        if let Some(hit) = ways
            .iter()
            .flatten()
            .find(|n| n.as_str().as_bytes() == name)
        {
            return Some(Ok(hit.clone()));
        }
        let made = made(name);
        if let Ok(made) = &made {
            ways.swap(0, 1);
            ways[0] = Some(made.clone());
        }
        Some(made)
    });
    found.ok().flatten().unwrap_or_else(|| made(name))
}

fn made(name: &[u8]) -> Result<HeaderName, &'static str> {
    HeaderName::from_bytes(name).map_err(|_| "an unusable field name")
}

/// Where a name is kept: from its length and three of its octets, which tell the usual names
/// apart well enough for two ways. None for a name not kept.
fn set_of(name: &[u8]) -> Option<usize> {
    if name.len() > LONGEST {
        return None;
    }
    let (first, last) = (*name.first()?, *name.last()?);
    let middle = *name.get(name.len() / 2)?;
    let mixed = name.len() * 7 + usize::from(first) * 3 + usize::from(middle) * 5;
    Some((mixed + usize::from(last)) % SETS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_http_makes_of_them_found_or_not() {
        for name in [
            "content-type",
            "grpc-status",
            "x-request-id",
            "te",
            "grpc-status-details-bin",
            "a",
        ] {
            let made = HeaderName::from_bytes(name.as_bytes()).unwrap();
            assert_eq!(name_of(name.as_bytes()).unwrap(), made, "first: {name}");
            assert_eq!(name_of(name.as_bytes()).unwrap(), made, "again: {name}");
        }
        let long = "x".repeat(LONGEST + 1);
        assert_eq!(name_of(long.as_bytes()).unwrap().as_str(), long);
        assert!(name_of(b"").is_err());
        assert!(name_of(b"bad name").is_err());
        assert!(name_of(b"bad name").is_err(), "a refusal is not kept");
    }

    #[test]
    fn a_kept_custom_name_shares_its_bytes() {
        let first = name_of(b"x-kept-name").unwrap();
        let again = name_of(b"x-kept-name").unwrap();
        assert_eq!(first.as_str().as_ptr(), again.as_str().as_ptr(), "no copy");
    }

    #[test]
    fn a_set_keeps_its_last_two_names() {
        // Names of one length, first, middle and last octet: all in one set.
        let names: Vec<String> = ["xa-b-x", "xc-b-x", "xd-b-x"]
            .iter()
            .map(|n| n.to_string())
            .collect();
        let set = set_of(names[0].as_bytes());
        assert!(names.iter().all(|n| set_of(n.as_bytes()) == set));
        for n in &names {
            assert_eq!(name_of(n.as_bytes()).unwrap().as_str(), n);
        }
        let kept = SEEN.with(|seen| {
            let seen = seen.borrow();
            let ways = &seen[set.unwrap()];
            ways.iter()
                .flatten()
                .map(|n| n.as_str().to_owned())
                .collect::<Vec<_>>()
        });
        assert_eq!(kept, ["xd-b-x", "xc-b-x"], "the last two, the latest first");
    }
}
