//! Header match rules, shared by route matches, header routes and mirrors.

use weir_proxy::table::spec::{HeaderMatchSpec, ValueMatch};

use crate::config::check::Checker;
use crate::config::model::RawHeaderMatch;

/// `path` is the list's path, e.g. `routes[0].match.headers`.
pub fn header_matches(
    raw: &[RawHeaderMatch],
    path: &str,
    check: &mut Checker,
) -> Vec<HeaderMatchSpec> {
    raw.iter()
        .enumerate()
        .map(|(i, rule)| header_match(rule, &format!("{path}[{i}]"), check))
        .collect()
}

fn header_match(raw: &RawHeaderMatch, path: &str, check: &mut Checker) -> HeaderMatchSpec {
    check.token(&format!("{path}.name"), "header", &raw.name);
    let value = match (&raw.exact, &raw.prefix, &raw.regex) {
        (Some(exact), None, None) => ValueMatch::Exact(exact.clone()),
        (None, Some(prefix), None) => ValueMatch::Prefix(prefix.clone()),
        (None, None, Some(regex)) => {
            if let Err(err) = regex::Regex::new(regex) {
                check.report(format!("{path}.regex"), regex_message(&err));
            }
            ValueMatch::Regex(regex.clone())
        }
        _ => {
            check.report(path, "set exactly one of exact, prefix, regex");
            ValueMatch::Exact(String::new())
        }
    };
    // Header names are case-insensitive; one spelling keeps matching and duplicate checks simple.
    HeaderMatchSpec {
        name: raw.name.to_ascii_lowercase(),
        value,
    }
}

/// regex's syntax errors span several lines (pattern, caret, reason); keep the reason so that
/// each config error stays on one line.
fn regex_message(err: &regex::Error) -> String {
    let text = err.to_string();
    let reason = text
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    format!(
        "invalid regex: {}",
        reason.trim().trim_start_matches("error: ")
    )
}
