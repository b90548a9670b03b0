//! A route's redirect and URL rewrite, checked and put in the shape the hyper engine uses per
//! request (`crate::pipeline::url` computes with them). Every problem is reported against the
//! route's config path, so a bad filter keeps the last good table serving.

use http::uri::Authority;
use http::{HeaderValue, StatusCode};

use super::error::TableErrors;
use crate::table_spec::{MatchSpec, PathMatch, PathModifier, RedirectSpec, RewriteSpec};

/// A compiled `RedirectSpec`.
#[derive(Debug)]
pub struct Redirect {
    pub scheme: Option<&'static str>,
    /// Lower-case, checked as a DNS name.
    pub hostname: Option<String>,
    pub port: Option<u16>,
    pub path: Option<PathEdit>,
    pub status: StatusCode,
    pub listener_port: Option<u16>,
}

/// A compiled `RewriteSpec`.
#[derive(Debug)]
pub struct Rewrite {
    /// The new `:authority` and the same as a Host value, made once.
    pub hostname: Option<(Authority, HeaderValue)>,
    pub path: Option<PathEdit>,
}

/// A path modifier with what it needs at request time.
#[derive(Debug, PartialEq, Eq)]
pub enum PathEdit {
    Full(String),
    Prefix {
        /// The route's prefixes, longest first: the longest that matches is the one replaced.
        prefixes: Box<[String]>,
        /// The replacement, its trailing `/` dropped (the spec ignores it: `/xyz/` for `/foo`
        /// turns `/foo/bar` into `/xyz/bar`, not `/xyz//bar`).
        with: String,
    },
}

/// The redirect statuses the Gateway API allows.
const REDIRECT_STATUSES: [u16; 5] = [301, 302, 303, 307, 308];

pub(super) fn redirect(
    spec: &RedirectSpec,
    matches: &[MatchSpec],
    path: &str,
    errors: &mut TableErrors,
) -> Option<Redirect> {
    let at = format!("{path}.redirect");
    let before = errors.0.len();
    let scheme = match spec.scheme.as_deref() {
        None => None,
        Some(s) if s.eq_ignore_ascii_case("http") => Some("http"),
        Some(s) if s.eq_ignore_ascii_case("https") => Some("https"),
        Some(other) => {
            errors.push(
                format!("{at}.scheme"),
                format!("`{other}` is not http or https"),
            );
            None
        }
    };
    let hostname = spec.hostname.as_deref().and_then(|h| {
        check_hostname(h)
            .map_err(|msg| errors.push(format!("{at}.hostname"), msg))
            .ok()
    });
    if spec.port == Some(0) {
        errors.push(format!("{at}.port"), "must be 1..65535");
    }
    if spec.listener_port == Some(0) {
        errors.push(format!("{at}.listener_port"), "must be 1..65535");
    }
    let status = match StatusCode::from_u16(spec.status) {
        Ok(s) if REDIRECT_STATUSES.contains(&spec.status) => Some(s),
        _ => {
            errors.push(
                format!("{at}.status"),
                format!(
                    "{} is not a redirect status (301, 302, 303, 307 or 308)",
                    spec.status
                ),
            );
            None
        }
    };
    let edit = spec
        .path
        .as_ref()
        .and_then(|m| path_edit(m, matches, &format!("{at}.path"), errors));
    if errors.0.len() > before {
        return None;
    }
    Some(Redirect {
        scheme,
        hostname,
        port: spec.port,
        path: edit,
        status: status?,
        listener_port: spec.listener_port,
    })
}

pub(super) fn rewrite(
    spec: &RewriteSpec,
    matches: &[MatchSpec],
    path: &str,
    errors: &mut TableErrors,
) -> Option<Rewrite> {
    let at = format!("{path}.rewrite");
    let before = errors.0.len();
    let hostname = spec.hostname.as_deref().and_then(|h| {
        let checked = check_hostname(h).and_then(|lower| {
            let authority = Authority::try_from(lower.as_str())
                .map_err(|e| format!("`{h}` is not a host: {e}"))?;
            let value = HeaderValue::from_str(&lower)
                .map_err(|e| format!("`{h}` is not a header value: {e}"))?;
            Ok((authority, value))
        });
        checked
            .map_err(|msg| errors.push(format!("{at}.hostname"), msg))
            .ok()
    });
    let edit = spec
        .path
        .as_ref()
        .and_then(|m| path_edit(m, matches, &format!("{at}.path"), errors));
    if errors.0.len() > before {
        return None;
    }
    Some(Rewrite {
        hostname,
        path: edit,
    })
}

fn path_edit(
    modifier: &PathModifier,
    matches: &[MatchSpec],
    at: &str,
    errors: &mut TableErrors,
) -> Option<PathEdit> {
    if let Err((field, msg)) = check_path_modifier(modifier, matches) {
        errors.push(format!("{at}{field}"), msg);
        return None;
    }
    Some(match modifier {
        PathModifier::ReplaceFullPath(full) => PathEdit::Full(full.clone()),
        PathModifier::ReplacePrefixMatch(with) => {
            let mut prefixes: Vec<String> =
                matches.iter().map(|m| m.path.value().to_string()).collect();
            prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
            PathEdit::Prefix {
                prefixes: prefixes.into_boxed_slice(),
                with: with.trim_end_matches('/').to_string(),
            }
        }
    })
}

/// Whether a path modifier can be carried out on a route with `matches`; Err holds the field
/// under the modifier's path (`""` or `.replace_full_path`, ...) and why not. Public so that
/// a source can refuse one object's filter by the same rule instead of failing a whole table.
pub fn check_path_modifier(
    modifier: &PathModifier,
    matches: &[MatchSpec],
) -> Result<(), (&'static str, String)> {
    match modifier {
        PathModifier::ReplaceFullPath(full) => {
            let field = ".replace_full_path";
            if !full.starts_with('/') {
                return Err((field, format!("`{full}` must start with `/`")));
            }
            check_path(full).map_err(|msg| (field, msg))
        }
        PathModifier::ReplacePrefixMatch(with) => {
            let field = ".replace_prefix_match";
            // Empty is allowed: the spec's own table strips the prefix with it.
            if !with.is_empty() && !with.starts_with('/') {
                return Err((field, format!("`{with}` must be empty or start with `/`")));
            }
            check_path(with).map_err(|msg| (field, msg))?;
            // Only a prefix can be replaced: with an exact or regex match beside it, a request
            // could arrive with no prefix to replace (the spec refuses such a rule too).
            if matches.is_empty() {
                return Err(("", "replace_prefix_match needs a path prefix match".into()));
            }
            for m in matches {
                let kind = match &m.path {
                    PathMatch::Prefix(_) => continue,
                    PathMatch::Exact(_) => "an exact",
                    PathMatch::Regex(_) => "a regex",
                };
                return Err((
                    "",
                    format!(
                        "replace_prefix_match needs every match of the route to be a path \
                         prefix, and `{}` is {kind} match",
                        m.path.value()
                    ),
                ));
            }
            Ok(())
        }
    }
}

/// A path of a URI, without query or fragment (the request's query is kept after it).
fn check_path(path: &str) -> Result<(), String> {
    if path.contains(['?', '#']) {
        return Err(format!(
            "`{path}` has a query or fragment: only a path is replaced"
        ));
    }
    if !path.is_empty() && http::uri::PathAndQuery::try_from(path).is_err() {
        return Err(format!("`{path}` is not a valid URI path"));
    }
    Ok(())
}

/// A DNS name as the Gateway API's `PreciseHostname` (RFC 1123 labels, no wildcard, no port),
/// returned lower-case.
pub fn check_hostname(host: &str) -> Result<String, String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(format!(
            "`{host}` is not a host name (letters, digits, `-` and `.`; no port, no wildcard)"
        ));
    }
    Ok(host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(f: impl FnOnce(&mut TableErrors)) -> Vec<String> {
        let mut errors = TableErrors::default();
        f(&mut errors);
        errors.0.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn refuses_bad_status_scheme_hostname_and_port() {
        let spec = RedirectSpec {
            scheme: Some("ftp".into()),
            hostname: Some("bad host".into()),
            port: Some(0),
            path: None,
            status: 200,
            listener_port: None,
        };
        let errors = errors_of(|e| {
            assert!(redirect(&spec, &[MatchSpec::default()], "routes[2]", e).is_none());
        });
        let joined = errors.join("\n");
        for field in ["scheme", "hostname", "port", "status"] {
            assert!(
                joined.contains(&format!("routes[2].redirect.{field}:")),
                "{field} in {joined}"
            );
        }
    }

    #[test]
    fn prefix_replacement_needs_only_prefix_matches() {
        let exact = MatchSpec {
            path: PathMatch::Exact("/a".into()),
            ..MatchSpec::default()
        };
        let spec = RewriteSpec {
            hostname: None,
            path: Some(PathModifier::ReplacePrefixMatch("/b".into())),
        };
        let errors = errors_of(|e| {
            assert!(rewrite(&spec, &[MatchSpec::prefix("/x"), exact], "routes[0]", e).is_none());
        });
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("routes[0].rewrite.path: "),
            "{errors:?}"
        );

        let errors = errors_of(|e| {
            let r = rewrite(
                &spec,
                &[MatchSpec::prefix("/x"), MatchSpec::prefix("/x/y")],
                "r",
                e,
            )
            .unwrap();
            assert_eq!(
                r.path,
                Some(PathEdit::Prefix {
                    prefixes: vec!["/x/y".to_string(), "/x".to_string()].into(),
                    with: "/b".into()
                })
            );
        });
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn replacement_paths_are_checked() {
        for (modifier, field) in [
            (
                PathModifier::ReplaceFullPath("x".into()),
                "replace_full_path",
            ),
            (
                PathModifier::ReplaceFullPath("/a?b".into()),
                "replace_full_path",
            ),
            (
                PathModifier::ReplacePrefixMatch("/a b".into()),
                "replace_prefix_match",
            ),
        ] {
            let spec = RewriteSpec {
                hostname: None,
                path: Some(modifier),
            };
            let errors = errors_of(|e| {
                assert!(rewrite(&spec, &[MatchSpec::default()], "r", e).is_none());
            });
            assert!(
                errors[0].starts_with(&format!("r.rewrite.path.{field}: ")),
                "{errors:?}"
            );
        }
        // Empty strips the prefix: allowed.
        let spec = RewriteSpec {
            hostname: Some("Example.ORG".into()),
            path: Some(PathModifier::ReplacePrefixMatch(String::new())),
        };
        let errors = errors_of(|e| {
            let r = rewrite(&spec, &[MatchSpec::default()], "r", e).unwrap();
            assert_eq!(r.hostname.unwrap().1, "example.org");
        });
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn hostnames() {
        assert_eq!(check_hostname("A.example.org").unwrap(), "a.example.org");
        for bad in ["", "a..b", "-a.b", "a:80", "*.a", "a_b", "é.org"] {
            assert!(check_hostname(bad).is_err(), "{bad}");
        }
    }
}
