//! `{{args.NAME}}` placeholders, as Argo resolves them when an AnalysisRun starts.

use serde_yaml_ng::Value;

use super::model::Templated;
use super::node::{join, Ctx};

/// One `{{…}}` in a string: its byte range and the tag inside, trimmed.
struct Tag<'a> {
    start: usize,
    end: usize,
    tag: &'a str,
}

fn tags(s: &str) -> Vec<Tag<'_>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = s[from..].find("{{").map(|i| i + from) {
        let Some(close) = s[open + 2..].find("}}").map(|i| i + open + 2) else {
            break;
        };
        out.push(Tag {
            start: open,
            end: close + 2,
            tag: s[open + 2..close].trim(),
        });
        from = close + 2;
    }
    out
}

impl Templated {
    /// The NAMEs of the `{{args.NAME}}` placeholders, in order.
    pub fn arg_names(&self) -> Vec<&str> {
        tags(&self.0)
            .into_iter()
            .filter_map(|t| t.tag.strip_prefix("args."))
            .collect()
    }

    /// Replaces every `{{args.NAME}}` with `lookup(NAME)`; an unknown name is an error.
    pub fn resolve<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> Result<String, String> {
        let mut out = String::with_capacity(self.0.len());
        let mut last = 0;
        for t in tags(&self.0) {
            let value = t
                .tag
                .strip_prefix("args.")
                .and_then(&lookup)
                .ok_or_else(|| format!("cannot resolve {{{{{}}}}}", t.tag))?;
            out.push_str(&self.0[last..t.start]);
            out.push_str(value);
            last = t.end;
        }
        out.push_str(&self.0[last..]);
        Ok(out)
    }
}

pub(crate) fn has_placeholders(s: &str) -> bool {
    !tags(s).is_empty()
}

/// The source with each placeholder blanked to a `0` of the same width, so that a condition
/// like `result[0] >= {{args.min}}` can be parsed at load time and columns still match.
pub(crate) fn blank_placeholders(s: &str) -> String {
    let mut out = s.to_string();
    for t in tags(s).into_iter().rev() {
        let width = s[t.start..t.end].chars().count();
        out.replace_range(t.start..t.end, &format!("0{}", " ".repeat(width - 1)));
    }
    out
}

/// Checks every string under `v`: each placeholder must be `{{args.NAME}}` with NAME declared.
pub(crate) fn check_placeholders(cx: &mut Ctx, v: &Value, path: &str, declared: &[String]) {
    match v {
        Value::String(s) => {
            for t in tags(s) {
                match t.tag.strip_prefix("args.") {
                    Some(name) if declared.iter().any(|d| d == name) => {}
                    Some(name) => cx.problem(
                        path,
                        format!(
                            "{{{{args.{name}}}}} names no argument of this template; declared: {}",
                            list_or_none(declared)
                        ),
                    ),
                    None => cx.problem(
                        path,
                        format!(
                            "unknown placeholder {{{{{}}}}}; weir resolves {{{{args.NAME}}}} only",
                            t.tag
                        ),
                    ),
                }
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                check_placeholders(cx, item, &format!("{path}[{i}]"), declared);
            }
        }
        Value::Mapping(m) => {
            for (k, item) in m {
                let key = k.as_str().unwrap_or("?");
                check_placeholders(cx, item, &join(path, key), declared);
            }
        }
        Value::Tagged(t) => check_placeholders(cx, &t.value, path, declared),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none (add it under spec.args)".to_string()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_and_blanks() {
        let t = Templated("up{job=\"{{args.job}}\"} > {{ args.min }}".into());
        assert_eq!(t.arg_names(), vec!["job", "min"]);
        let got = t.resolve(|n| match n {
            "job" => Some("web"),
            "min" => Some("3"),
            _ => None,
        });
        assert_eq!(got.as_deref(), Ok("up{job=\"web\"} > 3"));
        assert!(Templated("{{args.x}}".into()).resolve(|_| None).is_err());
        assert_eq!(
            blank_placeholders("a > {{args.x}}"),
            format!("a > 0{}", " ".repeat(9))
        );
    }
}
