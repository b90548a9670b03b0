//! Reading a `serde_yaml_ng::Value` tree by hand, so that every problem is collected with its
//! field path instead of stopping at the first one (as serde derive would).

use std::path::Path;

use serde_yaml_ng::{Mapping, Value};

use super::error::ManifestError;

/// Problems and notices for one object, with the names needed to report them.
pub(crate) struct Ctx {
    pub file: std::path::PathBuf,
    pub object: String,
    pub problems: Vec<ManifestError>,
    pub notices: Vec<String>,
}

impl Ctx {
    pub fn new(file: &Path, object: String) -> Ctx {
        Ctx {
            file: file.to_path_buf(),
            object,
            problems: Vec::new(),
            notices: Vec::new(),
        }
    }

    pub fn problem(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push(ManifestError {
            file: self.file.clone(),
            object: self.object.clone(),
            path: path.to_string(),
            line: None,
            message: message.into(),
        });
    }

    /// An accepted-but-ignored field; one notice per field, whatever the step index.
    pub fn notice(&mut self, path: &str, reason: &str) {
        let text = format!("{}: {} {}, ignoring it", self.object, generic(path), reason);
        if !self.notices.contains(&text) {
            self.notices.push(text);
        }
    }

    /// Problems so far; compare before and after reading a part to know if it was clean.
    pub fn count(&self) -> usize {
        self.problems.len()
    }
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `steps[3].setCanaryScale` → `steps[..].setCanaryScale`, so repeated notices collapse.
fn generic(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push_str("[..]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// What a mapping may hold: fields weir reads, fields it accepts and ignores (with the reason),
/// and fields it refuses (with what to do instead).
pub(crate) struct Fields<'a> {
    pub used: &'a [&'a str],
    pub ignored: &'a [(&'a str, &'a str)],
    pub refused: &'a [(&'a str, &'a str)],
}

/// Expects a mapping at `path` and checks its keys against `fields`.
pub(crate) fn object<'v>(
    cx: &mut Ctx,
    v: &'v Value,
    path: &str,
    fields: &Fields,
) -> Option<&'v Mapping> {
    let m = mapping(cx, v, path)?;
    for key in m.keys() {
        let Some(key) = key.as_str() else {
            cx.problem(
                path,
                format!("keys must be strings, found {}", type_name(key)),
            );
            continue;
        };
        let at = join(path, key);
        if fields.used.contains(&key) {
            continue;
        }
        if let Some((_, why)) = fields.ignored.iter().find(|(k, _)| *k == key) {
            cx.notice(&at, why);
        } else if let Some((_, msg)) = fields.refused.iter().find(|(k, _)| *k == key) {
            cx.problem(&at, *msg);
        } else {
            cx.problem(
                &at,
                format!("unknown field; weir reads {} here", fields.used.join(", ")),
            );
        }
    }
    Some(m)
}

pub(crate) fn mapping<'v>(cx: &mut Ctx, v: &'v Value, path: &str) -> Option<&'v Mapping> {
    match v {
        Value::Mapping(m) => Some(m),
        other => {
            cx.problem(
                path,
                format!("expected a mapping, found {}", type_name(other)),
            );
            None
        }
    }
}

pub(crate) fn seq<'v>(cx: &mut Ctx, v: &'v Value, path: &str) -> Option<&'v [Value]> {
    match v {
        Value::Sequence(s) => Some(s),
        other => {
            cx.problem(path, format!("expected a list, found {}", type_name(other)));
            None
        }
    }
}

/// A field's value; an explicit `null` counts as absent, as Kubernetes treats it.
pub(crate) fn field<'v>(m: &'v Mapping, key: &str) -> Option<&'v Value> {
    m.get(key).filter(|v| !v.is_null())
}

pub(crate) fn string(cx: &mut Ctx, v: &Value, path: &str) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        other => {
            cx.problem(
                path,
                format!("expected a string, found {} (quote it)", type_name(other)),
            );
            None
        }
    }
}

pub(crate) fn int(cx: &mut Ctx, v: &Value, path: &str) -> Option<i64> {
    match v.as_i64() {
        Some(n) => Some(n),
        None => {
            cx.problem(path, format!("expected an integer, found {}", describe(v)));
            None
        }
    }
}

/// An integer within `lo..=hi`.
pub(crate) fn int_in(cx: &mut Ctx, v: &Value, path: &str, lo: i64, hi: i64) -> Option<i64> {
    let n = int(cx, v, path)?;
    if n < lo || n > hi {
        cx.problem(path, format!("{n} is out of range; expected {lo}..={hi}"));
        return None;
    }
    Some(n)
}

pub(crate) fn number(cx: &mut Ctx, v: &Value, path: &str) -> Option<f64> {
    match v.as_f64() {
        Some(n) => Some(n),
        None => {
            cx.problem(path, format!("expected a number, found {}", describe(v)));
            None
        }
    }
}

pub(crate) fn boolean(cx: &mut Ctx, v: &Value, path: &str) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        other => {
            cx.problem(
                path,
                format!("expected true or false, found {}", describe(other)),
            );
            None
        }
    }
}

/// A required field: reports it missing when absent.
pub(crate) fn required<'v>(
    cx: &mut Ctx,
    m: &'v Mapping,
    key: &str,
    path: &str,
) -> Option<&'v Value> {
    let v = field(m, key);
    if v.is_none() {
        cx.problem(&join(path, key), "required field is missing");
    }
    v
}

pub(crate) fn req_string(cx: &mut Ctx, m: &Mapping, key: &str, path: &str) -> Option<String> {
    let v = required(cx, m, key, path)?;
    string(cx, v, &join(path, key))
}

pub(crate) fn opt_string(cx: &mut Ctx, m: &Mapping, key: &str, path: &str) -> Option<String> {
    let v = field(m, key)?;
    string(cx, v, &join(path, key))
}

/// A value for a message: short scalars are quoted as found, others by type.
fn describe(v: &Value) -> String {
    match v {
        Value::String(s) if s.len() <= 40 => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => type_name(other).to_string(),
    }
}
