//! Finds the line of a field path (`routes[1].canary.addresses[0]`,
//! `spec.strategy.canary.steps[2].setWeight`) in YAML text, for config and manifest errors.
//!
//! serde_yaml_ng has no spanned values, but it stamps every error raised while a node is being
//! deserialized with that node's position. So we walk the document along the path, skipping
//! everything else, and fail on purpose at the target; the error's location is the answer.
//! A key is located at the key itself, a list element at its first line.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Appears in the deliberate error so it cannot be confused with a real one.
const MARKER: &str = "weir-config-locate-marker";

enum Segment {
    Key(String),
    Index(usize),
}

/// The 1-based line of `path` in `text`, or of its nearest ancestor that is present (a
/// defaulted field has no node of its own). None for "." or when nothing can be found.
pub fn line_of(text: &str, path: &str) -> Option<usize> {
    line_in(text, 0, path)
}

/// Like `line_of`, in the `document`th (0-based) document of a multi-document stream; the line
/// counts from the top of the whole text.
pub fn line_in(text: &str, document: usize, path: &str) -> Option<usize> {
    let segments = parse_path(path)?;
    (1..=segments.len())
        .rev()
        .find_map(|len| find(text, document, &segments[..len]))
}

fn find(text: &str, document: usize, segments: &[Segment]) -> Option<usize> {
    let deserializer = serde_yaml_ng::Deserializer::from_str(text).nth(document)?;
    match (Seek { rest: segments }).deserialize(deserializer) {
        Err(err) if err.to_string().contains(MARKER) => err.location().map(|at| at.line()),
        _ => None,
    }
}

/// `routes[1].canary.addresses[0]` -> [Key(routes), Index(1), Key(canary), ...].
fn parse_path(path: &str) -> Option<Vec<Segment>> {
    if path.is_empty() || path == "." {
        return None;
    }
    let mut segments = Vec::new();
    for part in path.split('.') {
        let (key, mut indexes) = match part.find('[') {
            Some(at) => part.split_at(at),
            None => (part, ""),
        };
        if !key.is_empty() {
            segments.push(Segment::Key(key.to_string()));
        }
        while let Some(rest) = indexes.strip_prefix('[') {
            let (index, after) = rest.split_once(']')?;
            segments.push(Segment::Index(index.parse().ok()?));
            indexes = after;
        }
    }
    Some(segments)
}

/// Walks one level down the path; Ok(()) means "not there".
struct Seek<'a> {
    rest: &'a [Segment],
}

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.rest.is_empty() {
            // The target node: any visit fails with an error that mentions `expecting`.
            deserializer.deserialize_any(Target).map(|_| ())
        } else {
            deserializer.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((Segment::Key(want), rest)) = self.rest.split_first() else {
            return drain_map(map);
        };
        let seed = KeySeed {
            want,
            is_target: rest.is_empty(),
        };
        while let Some(found) = map.next_key_seed(seed.clone())? {
            if found {
                return map.next_value_seed(Seek { rest });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((&Segment::Index(want), rest)) = self.rest.split_first() else {
            return drain_seq(seq);
        };
        for _ in 0..want {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        seq.next_element_seed(Seek { rest }).map(|_| ())
    }

    // Scalars cannot contain the rest of the path.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Reads a map key; true when it is the one wanted. When that key is the target itself, fails
/// instead, so the error carries the key's position.
#[derive(Clone)]
struct KeySeed<'a> {
    want: &'a str,
    is_target: bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        match (key == self.want, self.is_target) {
            (true, true) => Err(E::custom(MARKER)),
            (found, _) => Ok(found),
        }
    }
}

/// Rejects every node; serde's default rejection message includes `expecting`, i.e. the marker.
struct Target;

impl Visitor<'_> for Target {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MARKER)
    }
}

#[cfg(test)]
mod tests {
    use super::line_of;

    const DOC: &str = "\
listeners:
  - address: 0.0.0.0:8080
routes:
  - name: a
    stable:
      addresses: [127.0.0.1:1]
  - name: b
    stable: {addresses: [127.0.0.1:2, bad]}
    canary_weight: 101
";

    #[test]
    fn finds_keys_elements_and_flow_nodes() {
        assert_eq!(line_of(DOC, "listeners"), Some(1));
        assert_eq!(line_of(DOC, "listeners[0]"), Some(2));
        assert_eq!(line_of(DOC, "routes[0].stable"), Some(5));
        assert_eq!(line_of(DOC, "routes[0].stable.addresses[0]"), Some(6));
        assert_eq!(line_of(DOC, "routes[1]"), Some(7));
        assert_eq!(line_of(DOC, "routes[1].stable.addresses[1]"), Some(8));
        assert_eq!(line_of(DOC, "routes[1].canary_weight"), Some(9));
    }

    #[test]
    fn falls_back_to_the_nearest_present_ancestor() {
        assert_eq!(line_of(DOC, "routes[1].canary"), Some(7));
        assert_eq!(line_of(DOC, "admin.address"), None);
        assert_eq!(line_of(DOC, "."), None);
    }
}
