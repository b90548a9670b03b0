//! Compiled header edits (HTTPRoute's RequestHeaderModifier and ResponseHeaderModifier):
//! names and values checked once, when the table is compiled.

use http::header::{HeaderName, HeaderValue};
use http::HeaderMap;

use crate::table_spec::HeaderEdits;

#[derive(Debug, Default)]
pub struct Edits {
    set: Vec<(HeaderName, HeaderValue)>,
    add: Vec<(HeaderName, HeaderValue)>,
    remove: Vec<HeaderName>,
}

impl Edits {
    /// Every problem as (field, message), e.g. `("set[0].name", "...")`.
    pub fn compile(spec: &HeaderEdits) -> Result<Self, Vec<(String, String)>> {
        let mut errors = Vec::new();
        let mut pairs = |list: &[(String, String)], field: &str| {
            let mut out = Vec::with_capacity(list.len());
            for (j, (name, value)) in list.iter().enumerate() {
                let n = HeaderName::from_bytes(name.as_bytes());
                let v = HeaderValue::from_str(value);
                match (n, v) {
                    (Ok(n), Ok(v)) => out.push((n, v)),
                    (Err(_), _) => errors.push((
                        format!("{field}[{j}].name"),
                        format!("`{name}` is not a valid header name"),
                    )),
                    (_, Err(_)) => errors.push((
                        format!("{field}[{j}].value"),
                        format!("the value of `{name}` is not a valid header value"),
                    )),
                }
            }
            out
        };
        let set = pairs(&spec.set, "set");
        let add = pairs(&spec.add, "add");
        let mut remove = Vec::with_capacity(spec.remove.len());
        for (j, name) in spec.remove.iter().enumerate() {
            match HeaderName::from_bytes(name.as_bytes()) {
                Ok(n) => remove.push(n),
                Err(_) => errors.push((
                    format!("remove[{j}]"),
                    format!("`{name}` is not a valid header name"),
                )),
            }
        }
        if errors.is_empty() {
            Ok(Edits { set, add, remove })
        } else {
            Err(errors)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.add.is_empty() && self.remove.is_empty()
    }

    /// Remove, then set, then add.
    pub fn apply(&self, headers: &mut HeaderMap) {
        for name in &self.remove {
            headers.remove(name);
        }
        for (name, value) in &self.set {
            headers.insert(name.clone(), value.clone());
        }
        for (name, value) in &self.add {
            headers.append(name.clone(), value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_set_add() {
        let spec = HeaderEdits {
            set: vec![("x-env".into(), "canary".into())],
            add: vec![("set-cookie".into(), "a=1".into())],
            remove: vec!["x-secret".into()],
        };
        let edits = Edits::compile(&spec).unwrap();
        let mut h = HeaderMap::new();
        h.insert("x-secret", HeaderValue::from_static("s"));
        h.append("x-env", HeaderValue::from_static("one"));
        h.append("x-env", HeaderValue::from_static("two"));
        h.insert("set-cookie", HeaderValue::from_static("b=2"));
        edits.apply(&mut h);
        assert!(h.get("x-secret").is_none());
        assert_eq!(h.get_all("x-env").iter().collect::<Vec<_>>(), ["canary"]);
        assert_eq!(h.get_all("set-cookie").iter().count(), 2);
        let bad = HeaderEdits {
            set: vec![("bad name".into(), "v".into())],
            add: vec![("ok".into(), "line\nbreak".into())],
            remove: vec![],
        };
        let errors = Edits::compile(&bad).unwrap_err();
        assert_eq!(errors[0].0, "set[0].name");
        assert_eq!(errors[1].0, "add[0].value");
    }
}
