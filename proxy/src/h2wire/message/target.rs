//! What a request's pseudo-headers must look like (RFC 9113 §8.3.1): each one's syntax as it
//! arrives, and the form of `:path` against the method and scheme once all are known.

use super::malformed::Malformed;
use super::rules::is_token;
use crate::authority::is_authority;

pub(super) fn check_method(value: &[u8]) -> Result<(), Malformed> {
    if is_token(value) {
        Ok(())
    } else {
        Err(Malformed::BadMethod)
    }
}

/// RFC 8441 §4 names the protocol as Upgrade does: a token (RFC 9110 §7.8).
pub(super) fn check_protocol(value: &[u8]) -> Result<(), Malformed> {
    if is_token(value) {
        Ok(())
    } else {
        Err(Malformed::BadProtocol)
    }
}

/// RFC 3986 §3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
pub(super) fn check_scheme(value: &[u8]) -> Result<(), Malformed> {
    let ok = value.split_first().is_some_and(|(first, rest)| {
        first.is_ascii_alphabetic()
            && rest
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    });
    if ok {
        Ok(())
    } else {
        Err(Malformed::BadScheme)
    }
}

/// An `:authority` (or a Host standing for it): host and port only. §8.3.1 forbids userinfo,
/// which would name one host to some readers and route to another. An empty one is refused
/// too: a request whose target has no authority carries no `:authority` at all (§8.3.1), and
/// an http(s) URI with an empty host is invalid (RFC 9110 §4.2.1).
pub(super) fn check_authority(value: &[u8]) -> Result<(), Malformed> {
    if value.contains(&b'@') {
        return Err(Malformed::Userinfo);
    }
    if value.is_empty() || !is_authority(value) {
        return Err(Malformed::BadAuthority);
    }
    Ok(())
}

/// The bytes weir's HTTP/1 parser takes in a request target (visible ASCII and bytes from
/// 0x80), less `#`: the fragment is never sent (RFC 9110 §7.1) and `h1::strict` refuses it too.
/// A space or a control character would split the request line of an HTTP/1 upstream.
pub(super) fn check_path(value: &[u8]) -> Result<(), Malformed> {
    if value.is_empty() {
        // §8.3.1: never empty; an http(s) URI without a path is sent as `/`.
        return Err(Malformed::EmptyPath);
    }
    // Folded without an early exit, so it compiles to vector compares (see `rules`).
    let bad = value.iter().fold(false, |bad, &b| {
        bad | (b <= b' ') | (b == 0x7f) | (b == b'#')
    });
    if bad {
        return Err(Malformed::BadPathChar);
    }
    Ok(())
}

/// §8.3.1: `*` is OPTIONS' alone (the asterisk form, RFC 9112 §3.2.4), whatever the scheme;
/// otherwise an http or https `:path` is absolute, starting with `/`.
pub(super) fn check_path_form(method: &[u8], scheme: &[u8], path: &[u8]) -> Result<(), Malformed> {
    if path == b"*" {
        // Methods are case-sensitive (RFC 9110 §9.1); schemes are not (RFC 3986 §3.1).
        return if method == b"OPTIONS" {
            Ok(())
        } else {
            Err(Malformed::AsteriskNotOptions)
        };
    }
    let web = scheme.eq_ignore_ascii_case(b"http") || scheme.eq_ignore_ascii_case(b"https");
    if web && path.first() != Some(&b'/') {
        return Err(Malformed::PathNotAbsolute);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes() {
        for good in [&b"https"[..], b"http", b"HTTPS", b"coap+tcp", b"a1.-"] {
            assert_eq!(check_scheme(good), Ok(()), "{good:?}");
        }
        for bad in [&b""[..], b"1http", b"ht tp", b"http:", b"-a"] {
            assert_eq!(check_scheme(bad), Err(Malformed::BadScheme), "{bad:?}");
        }
    }

    #[test]
    fn authorities() {
        for good in [
            &b"a.example"[..],
            b"a.example:8443",
            b"[::1]:443",
            b"xn--bcher-kva.example",
        ] {
            assert_eq!(check_authority(good), Ok(()), "{good:?}");
        }
        assert_eq!(check_authority(b"user@a.example"), Err(Malformed::Userinfo));
        assert_eq!(
            check_authority(b"u:p@a.example:1"),
            Err(Malformed::Userinfo)
        );
        for bad in [&b""[..], b"a.example/x", b"a b", b"a?b", b"a#b", b"a\"b"] {
            assert_eq!(
                check_authority(bad),
                Err(Malformed::BadAuthority),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn paths() {
        for good in [&b"/"[..], b"/a?b=c&d", b"*", b"/%20/\xc3\xa9", b"/a|b{c}"] {
            assert_eq!(check_path(good), Ok(()), "{good:?}");
        }
        assert_eq!(check_path(b""), Err(Malformed::EmptyPath));
        for bad in [&b"/a b"[..], b"/a\tb", b"/a#frag", b"/\x7f", b"/\x01"] {
            assert_eq!(check_path(bad), Err(Malformed::BadPathChar), "{bad:?}");
        }
    }

    #[test]
    fn path_forms() {
        assert_eq!(check_path_form(b"GET", b"https", b"/x"), Ok(()));
        assert_eq!(check_path_form(b"OPTIONS", b"http", b"*"), Ok(()));
        assert_eq!(check_path_form(b"GET", b"foo", b"bar"), Ok(()));
        let not_options = Err(Malformed::AsteriskNotOptions);
        assert_eq!(check_path_form(b"GET", b"https", b"*"), not_options);
        assert_eq!(check_path_form(b"options", b"https", b"*"), not_options);
        let relative = Err(Malformed::PathNotAbsolute);
        assert_eq!(check_path_form(b"GET", b"https", b"x"), relative);
        assert_eq!(check_path_form(b"GET", b"HTTP", b"?q"), relative);
        assert_eq!(check_path_form(b"OPTIONS", b"http", b"**"), relative);
    }
}
