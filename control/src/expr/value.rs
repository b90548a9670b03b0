//! The values conditions compute with: what providers return, converted once.

use std::collections::BTreeMap;
use std::fmt;

/// A value a provider returns and a condition computes with.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// All numbers are f64: Prometheus results are floats, and NaN must survive.
    Number(f64),
    String(String),
    List(Vec<Value>),
    Map(BTreeMap<String, Value>),
}

impl Value {
    /// The type's name as error messages spell it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "nil",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "map",
        }
    }

    /// "number 0.5", "string \"ok\"", "nil": for messages, cut to a readable length.
    pub fn describe(&self) -> String {
        const LIMIT: usize = 80;
        let mut shown = String::new();
        // Nested formatting quotes strings, so the type and the text are unambiguous.
        let _ = write_nested(&mut shown, self);
        if shown.chars().count() > LIMIT {
            shown = shown.chars().take(LIMIT).collect();
            shown.push('…');
        }
        match self {
            Value::Null => "nil".to_string(),
            _ => format!("{} {}", self.type_name(), shown),
        }
    }
}

/// Structural equality with number semantics: NaN equals nothing, values of different types
/// are unequal (never an error, as in expr-lang).
pub(super) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && equal(vx, vy))
        }
        _ => false,
    }
}

impl From<&serde_json::Value> for Value {
    /// JSON numbers become f64; strings stay strings even when they look like numbers
    /// (Argo's web provider does the same, hence `asFloat`).
    fn from(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(items) => Value::List(items.iter().map(Value::from).collect()),
            serde_json::Value::Object(fields) => Value::Map(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(v)))
                    .collect(),
            ),
        }
    }
}

impl From<f64> for Value {
    fn from(n: f64) -> Value {
        Value::Number(n)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::List(items)
    }
}

/// Numbers print without a trailing `.0` (`3`, `0.25`), NaN as `NaN`, infinities as
/// `+Inf`/`-Inf` like Prometheus. A top-level string prints bare; strings inside lists and
/// maps are quoted.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::String(s) => f.write_str(s),
            other => write_nested(f, other),
        }
    }
}

/// Writes to a `String` or a `Formatter`, so one printer serves Display and describe.
fn write_nested(out: &mut impl fmt::Write, value: &Value) -> fmt::Result {
    match value {
        Value::Null => out.write_str("nil"),
        Value::Bool(b) => write!(out, "{b}"),
        Value::Number(n) => write_number(out, *n),
        Value::String(s) => write!(out, "{s:?}"),
        Value::List(items) => {
            out.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_str(", ")?;
                }
                write_nested(out, item)?;
            }
            out.write_char(']')
        }
        Value::Map(fields) => {
            out.write_char('{')?;
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.write_str(", ")?;
                }
                write!(out, "{k:?}: ")?;
                write_nested(out, v)?;
            }
            out.write_char('}')
        }
    }
}

fn write_number(out: &mut impl fmt::Write, n: f64) -> fmt::Result {
    if n.is_nan() {
        out.write_str("NaN")
    } else if n.is_infinite() {
        out.write_str(if n > 0.0 { "+Inf" } else { "-Inf" })
    } else if n == 0.0 {
        // Rust prints -0.0 as "-0"; a status message should not.
        out.write_char('0')
    } else {
        // Rust's f64 Display is the shortest round-trip form and drops a zero fraction.
        write!(out, "{n}")
    }
}
