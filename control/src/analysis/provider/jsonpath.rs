//! The subset of Kubernetes JSONPath that Argo's web provider templates use:
//! `{$.data.ok}`, `{$.items[0].value}`, `{$['odd key']}`, `{$.items[*].value}`.

use serde_json::Value as Json;

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    /// `[*]`: every element of a list (or value of a map); the result becomes a list.
    All,
}

/// A parsed path; parsing happens once, when a run starts.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    source: String,
    steps: Vec<Step>,
}

impl JsonPath {
    pub fn parse(source: &str) -> Result<JsonPath, String> {
        let bad = |why: String| format!("jsonPath {source:?}: {why}");
        let mut text = source.trim();
        // The braces are Kubernetes template syntax around one expression.
        if let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            text = inner.trim();
        }
        text = text.strip_prefix('$').unwrap_or(text);
        let mut steps = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                if after.starts_with('.') {
                    return Err(bad("recursive descent (..) is not supported".into()));
                }
                let end = after.find(['.', '[']).unwrap_or(after.len());
                let name = &after[..end];
                if name.is_empty() {
                    return Err(bad("empty field name".into()));
                }
                steps.push(if name == "*" {
                    Step::All
                } else {
                    Step::Field(name.into())
                });
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after.find(']').ok_or_else(|| bad("unclosed [".into()))?;
                steps.push(bracket(after[..end].trim()).map_err(bad)?);
                rest = &after[end + 1..];
            } else {
                return Err(bad(format!("unexpected {rest:?}")));
            }
        }
        Ok(JsonPath {
            source: source.to_string(),
            steps,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The value at the path; a list of values when the path holds `[*]`.
    pub fn find(&self, root: &Json) -> Result<Json, String> {
        let bad = |why: String| format!("jsonPath {:?}: {why}", self.source);
        let mut nodes = vec![root.clone()];
        let mut many = false;
        for step in &self.steps {
            let mut next = Vec::with_capacity(nodes.len());
            for node in nodes {
                match (step, node) {
                    (Step::Field(name), Json::Object(mut fields)) => match fields.remove(name) {
                        Some(value) => next.push(value),
                        None => return Err(bad(format!("field {name:?} not found"))),
                    },
                    (Step::Index(i), Json::Array(mut items)) => {
                        let len = items.len() as i64;
                        let at = if *i < 0 { len + i } else { *i };
                        if !(0..len).contains(&at) {
                            return Err(bad(format!("index {i} out of range (list of {len})")));
                        }
                        next.push(items.swap_remove(at as usize));
                    }
                    (Step::All, Json::Array(items)) => next.extend(items),
                    (Step::All, Json::Object(fields)) => {
                        next.extend(fields.into_iter().map(|(_, v)| v))
                    }
                    (step, node) => {
                        return Err(bad(format!(
                            "cannot apply {} to {}",
                            describe(step),
                            kind(&node)
                        )))
                    }
                }
            }
            many |= *step == Step::All;
            nodes = next;
        }
        if many {
            return Ok(Json::Array(nodes));
        }
        nodes.pop().ok_or_else(|| bad("no result".into()))
    }
}

fn bracket(inner: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::All);
    }
    for quote in ['\'', '"'] {
        if let Some(name) = inner
            .strip_prefix(quote)
            .and_then(|t| t.strip_suffix(quote))
        {
            return Ok(Step::Field(name.to_string()));
        }
    }
    inner
        .parse()
        .map(Step::Index)
        .map_err(|_| format!("unsupported selector [{inner}] (use [N], ['name'] or [*])"))
}

fn describe(step: &Step) -> String {
    match step {
        Step::Field(name) => format!("field {name:?}"),
        Step::Index(i) => format!("index [{i}]"),
        Step::All => "[*]".into(),
    }
}

fn kind(json: &Json) -> &'static str {
    match json {
        Json::Null => "null",
        Json::Bool(_) => "a bool",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn find(path: &str, doc: &Json) -> Result<Json, String> {
        JsonPath::parse(path)?.find(doc)
    }

    #[test]
    fn argo_forms() {
        let doc = json!({
            "data": {"ok": true, "rate": 0.99},
            "items": [{"value": 1}, {"value": 2}],
            "odd key": "x",
            "result": "pass"
        });
        assert_eq!(find("{$.data.ok}", &doc), Ok(json!(true)));
        assert_eq!(find("{$.items[0].value}", &doc), Ok(json!(1)));
        assert_eq!(find("{$.items[-1].value}", &doc), Ok(json!(2)));
        assert_eq!(find("{$['odd key']}", &doc), Ok(json!("x")));
        assert_eq!(find("{$.result}", &doc), Ok(json!("pass")));
        assert_eq!(find("$.data[\"rate\"]", &doc), Ok(json!(0.99)));
        assert_eq!(find("{.data.rate}", &doc), Ok(json!(0.99)));
        assert_eq!(find("{$}", &doc), Ok(doc.clone()));
        assert_eq!(find("{$.items[*].value}", &doc), Ok(json!([1, 2])));
    }

    #[test]
    fn errors_name_the_path_and_the_problem() {
        let doc = json!({"data": {"ok": true}, "items": [1]});
        let err = find("{$.data.nope}", &doc).unwrap_err();
        assert!(
            err.contains("{$.data.nope}") && err.contains("\"nope\" not found"),
            "{err}"
        );
        let err = find("{$.items[3]}", &doc).unwrap_err();
        assert!(err.contains("out of range"), "{err}");
        let err = find("{$.data[0]}", &doc).unwrap_err();
        assert!(err.contains("cannot apply index [0] to an object"), "{err}");
        assert!(JsonPath::parse("{$..x}").is_err());
        assert!(JsonPath::parse("{$.items[?(@.a)]}").is_err());
        assert!(JsonPath::parse("{$.items[0}").is_err());
    }
}
