//! The host of an authority (`host[:port]`, `[v6]:port`): what routing matches on and what
//! upstream TLS names. A leaf, so the table and the upstreams share it without importing each
//! other.

/// Characters an authority (host and port) may hold: unreserved, sub-delims, `:`, `[`, `]`
/// and percent-encoding. No space, `/`, `?`, `#` or `@`.
pub(crate) fn is_authority(value: &[u8]) -> bool {
    // A table: asked of every request's Host, byte by byte.
    value.iter().all(|&b| AUTHORITY[usize::from(b)])
}

const AUTHORITY: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = matches!(
            b as u8,
            b'a'..=b'z'
                | b'A'..=b'Z'
                | b'0'..=b'9'
                | b'-'
                | b'.'
                | b'_'
                | b'~'
                | b'%'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
        );
        b += 1;
    }
    table
};

/// The host of an authority, as bytes. Only the trailing digits are looked at, not the whole
/// name.
pub(crate) fn host_bytes(authority: &[u8]) -> &[u8] {
    if let Some(rest) = authority.strip_prefix(b"[") {
        // IPv6 literal: keep the brackets' content.
        return rest.split(|&b| b == b']').next().unwrap_or(rest);
    }
    let digits = authority
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    match authority.len().checked_sub(digits + 1) {
        Some(colon) if authority[colon] == b':' => &authority[..colon],
        _ => authority,
    }
}

/// The port a request was addressed to: its authority's (`host:8080`, `[::1]:8080`), else the
/// scheme's default. A number past 65535 is port 0, which no Service has.
pub(crate) fn request_port(authority: Option<&[u8]>, tls: bool) -> u16 {
    let default = if tls { 443 } else { 80 };
    let Some(authority) = authority else {
        return default;
    };
    let digits = authority
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let Some(colon) = authority.len().checked_sub(digits + 1) else {
        return default;
    };
    // `[::1]` ends in no port; `[::1]:80` does, its colon just after the bracket.
    let after_v6 =
        !authority.starts_with(b"[") || colon.checked_sub(1).map(|b| authority[b]) == Some(b']');
    if authority[colon] != b':' || !after_v6 || digits == 0 {
        return default;
    }
    authority[colon + 1..]
        .iter()
        .try_fold(0u32, |n, d| {
            let n = n * 10 + u32::from(d - b'0');
            (n <= u32::from(u16::MAX)).then_some(n)
        })
        .and_then(|n| u16::try_from(n).ok())
        .unwrap_or(0)
}

/// The host of `host[:port]` or `[v6]:port`, for upstream TLS names.
pub(crate) fn strip_port(authority: &str) -> &str {
    // Cut next to ASCII bytes only, so still UTF-8.
    std::str::from_utf8(host_bytes(authority.as_bytes())).unwrap_or(authority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_strip_only_when_all_digits() {
        assert_eq!(strip_port("example.com:8080"), "example.com");
        assert_eq!(strip_port("example.com"), "example.com");
        assert_eq!(strip_port("127.0.0.1"), "127.0.0.1");
        assert_eq!(strip_port("example.com:80x"), "example.com:80x");
        assert_eq!(strip_port("example.com:"), "example.com");
        assert_eq!(strip_port("[::1]:80"), "::1");
        assert_eq!(strip_port("80"), "80");
        assert_eq!(host_bytes(b"Example.com:80"), b"Example.com");
    }

    #[test]
    fn request_ports_from_the_authority_else_the_scheme() {
        let port = |a: &str, tls| request_port(Some(a.as_bytes()), tls);
        assert_eq!(port("echo:8080", false), 8080);
        assert_eq!(port("echo", false), 80);
        assert_eq!(port("echo", true), 443);
        assert_eq!(port("echo:", false), 80);
        assert_eq!(port("[::1]:9090", true), 9090);
        assert_eq!(port("[::1]", false), 80);
        assert_eq!(port("[::1:80]", false), 80);
        assert_eq!(port("10.0.0.1:7070", false), 7070);
        assert_eq!(port("echo:65535", false), 65535);
        assert_eq!(port("echo:65536", false), 0);
        assert_eq!(port("echo:00000000000000000000080", false), 80);
        assert_eq!(port("echo:99999999999999999999999", false), 0);
        assert_eq!(request_port(None, false), 80);
        assert_eq!(request_port(None, true), 443);
    }

    #[test]
    fn authorities_hold_only_their_characters() {
        let allowed: Vec<u8> = (0..=255u8).filter(|&b| is_authority(&[b])).collect();
        assert_eq!(
            allowed,
            b"!$%&'()*+,-.0123456789:;=ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz~"
        );
        assert!(is_authority(b"[::1]:8080") && is_authority(b""));
        assert!(!is_authority(b"a b") && !is_authority(b"u@h") && !is_authority(b"a/b"));
    }
}
