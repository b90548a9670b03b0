//! An HTTPRoute rule's `RequestRedirect` and `URLRewrite` filters → the table's redirect and
//! rewrite specs. Pure: what the spec allows is checked here, so a value weir cannot carry
//! out makes that route not Accepted (`UnsupportedValue`) instead of failing the whole table.

use weir_proxy::table::spec::{MatchSpec, PathModifier, RedirectSpec, RewriteSpec};
use weir_proxy::table::{check_hostname, check_path_modifier};

use super::httproute::{PathModifierView, RedirectView, UrlRewriteView};

/// The statuses the Gateway API allows a redirect (301 and 302 Core, the rest Extended).
const STATUSES: [u16; 5] = [301, 302, 303, 307, 308];

/// A RequestRedirect on a rule whose matches are `matches`. `listener_port` is left None here:
/// `gateway::translate` fills in the port of the Gateway listeners the route attached to.
pub fn redirect(view: &RedirectView, matches: &[MatchSpec]) -> Result<RedirectSpec, String> {
    let scheme = match view.scheme.as_deref() {
        None => None,
        Some(s @ ("http" | "https")) => Some(s.to_string()),
        Some(other) => {
            return Err(format!(
                "RequestRedirect scheme {other:?} is not supported (http or https)"
            ))
        }
    };
    let hostname = view
        .hostname
        .as_deref()
        .map(|h| check_hostname(h).map_err(|e| format!("RequestRedirect hostname: {e}")))
        .transpose()?;
    let port = match view.port {
        None => None,
        Some(p) => Some(
            u16::try_from(p)
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("RequestRedirect port {p} is not 1..65535"))?,
        ),
    };
    let status = match view.status_code {
        None => 302,
        Some(code) => u16::try_from(code)
            .ok()
            .filter(|c| STATUSES.contains(c))
            .ok_or_else(|| {
                format!("RequestRedirect statusCode {code} is not supported (301, 302, 303, 307 or 308)")
            })?,
    };
    let path = view
        .path
        .as_ref()
        .map(|p| path(p, matches, "RequestRedirect"))
        .transpose()?;
    Ok(RedirectSpec {
        scheme,
        hostname,
        port,
        path,
        status,
        listener_port: None,
    })
}

/// A URLRewrite on a rule whose matches are `matches`.
pub fn rewrite(view: &UrlRewriteView, matches: &[MatchSpec]) -> Result<RewriteSpec, String> {
    let hostname = view
        .hostname
        .as_deref()
        .map(|h| check_hostname(h).map_err(|e| format!("URLRewrite hostname: {e}")))
        .transpose()?;
    let path = view
        .path
        .as_ref()
        .map(|p| path(p, matches, "URLRewrite"))
        .transpose()?;
    Ok(RewriteSpec { hostname, path })
}

fn path(
    view: &PathModifierView,
    matches: &[MatchSpec],
    filter: &str,
) -> Result<PathModifier, String> {
    let modifier = match (
        view.kind.as_str(),
        &view.replace_full_path,
        &view.replace_prefix_match,
    ) {
        ("ReplaceFullPath", Some(full), None) => PathModifier::ReplaceFullPath(full.clone()),
        ("ReplacePrefixMatch", None, Some(with)) => PathModifier::ReplacePrefixMatch(with.clone()),
        ("ReplaceFullPath" | "ReplacePrefixMatch", _, _) => {
            return Err(format!(
                "{filter} path: type {} needs its own value and only it",
                view.kind
            ))
        }
        (other, _, _) => {
            return Err(format!(
            "{filter} path type {other:?} is not supported (ReplaceFullPath or ReplacePrefixMatch)"
        ))
        }
    };
    check_path_modifier(&modifier, matches).map_err(|(_, why)| format!("{filter} path: {why}"))?;
    Ok(modifier)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_proxy::table::spec::PathMatch;

    fn modifier(kind: &str, full: Option<&str>, prefix: Option<&str>) -> Option<PathModifierView> {
        Some(PathModifierView {
            kind: kind.into(),
            replace_full_path: full.map(String::from),
            replace_prefix_match: prefix.map(String::from),
        })
    }

    #[test]
    fn redirect_defaults_and_values() {
        let any = [MatchSpec::default()];
        let spec = redirect(&RedirectView::default(), &any).unwrap();
        assert_eq!(spec, RedirectSpec::found());
        let view = RedirectView {
            scheme: Some("https".into()),
            hostname: Some("example.org".into()),
            port: Some(8443),
            status_code: Some(301),
            path: modifier("ReplaceFullPath", Some("/x"), None),
        };
        let spec = redirect(&view, &any).unwrap();
        assert_eq!(
            spec,
            RedirectSpec {
                scheme: Some("https".into()),
                hostname: Some("example.org".into()),
                port: Some(8443),
                path: Some(PathModifier::ReplaceFullPath("/x".into())),
                status: 301,
                listener_port: None,
            }
        );
        for status in [303, 307, 308] {
            let view = RedirectView {
                status_code: Some(status),
                ..Default::default()
            };
            assert_eq!(redirect(&view, &any).unwrap().status, status as u16);
        }
    }

    #[test]
    fn redirect_values_outside_the_spec_are_refused() {
        let any = [MatchSpec::default()];
        for (view, words) in [
            (
                RedirectView {
                    status_code: Some(300),
                    ..Default::default()
                },
                "statusCode 300",
            ),
            (
                RedirectView {
                    scheme: Some("ftp".into()),
                    ..Default::default()
                },
                "scheme \"ftp\"",
            ),
            (
                RedirectView {
                    port: Some(70000),
                    ..Default::default()
                },
                "port 70000",
            ),
            (
                RedirectView {
                    hostname: Some("*.example.org".into()),
                    ..Default::default()
                },
                "hostname",
            ),
            (
                RedirectView {
                    path: modifier("ReplaceQuery", None, None),
                    ..Default::default()
                },
                "type \"ReplaceQuery\"",
            ),
        ] {
            let err = redirect(&view, &any).unwrap_err();
            assert!(err.contains(words), "{words} in {err}");
        }
    }

    #[test]
    fn prefix_replacement_needs_prefix_matches() {
        let exact = MatchSpec {
            path: PathMatch::Exact("/a".into()),
            ..MatchSpec::default()
        };
        let view = UrlRewriteView {
            hostname: None,
            path: modifier("ReplacePrefixMatch", None, Some("/b")),
        };
        let err = rewrite(&view, &[exact]).unwrap_err();
        assert!(
            err.starts_with("URLRewrite path: replace_prefix_match needs"),
            "{err}"
        );
        let spec = rewrite(&view, &[MatchSpec::prefix("/a")]).unwrap();
        assert_eq!(
            spec.path,
            Some(PathModifier::ReplacePrefixMatch("/b".into()))
        );
        // The type's value missing, or the other's given.
        let view = UrlRewriteView {
            hostname: None,
            path: modifier("ReplacePrefixMatch", Some("/x"), None),
        };
        assert!(rewrite(&view, &[MatchSpec::prefix("/a")]).is_err());
    }

    #[test]
    fn rewrite_hostname() {
        let view = UrlRewriteView {
            hostname: Some("one.example.org".into()),
            path: None,
        };
        let spec = rewrite(&view, &[MatchSpec::default()]).unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("one.example.org"));
        let view = UrlRewriteView {
            hostname: Some("one.example.org:80".into()),
            path: None,
        };
        assert!(rewrite(&view, &[MatchSpec::default()]).is_err());
    }
}
