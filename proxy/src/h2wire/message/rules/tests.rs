//! The common field rules, one by one.

use super::*;

#[test]
fn names_are_lower_case_tokens_or_known_pseudo_headers() {
    assert_eq!(field(b"x-trace_id.1", b"a"), Ok(Name::Regular(Kind::Other)));
    assert_eq!(field(b"host", b"a"), Ok(Name::Regular(Kind::Host)));
    assert_eq!(field(b":path", b"/"), Ok(Name::Pseudo(Pseudo::Path)));
    assert_eq!(field(b"", b"a"), Err(Malformed::EmptyName));
    assert_eq!(field(b"X-Trace", b"a"), Err(Malformed::UppercaseName));
    assert_eq!(field(b"x-tracE", b"a"), Err(Malformed::UppercaseName));
    for bad in [
        &b"a b"[..],
        b"a:b",
        b"a\x00",
        b"a\"",
        b"a/b",
        b"a\xc3\xa9",
        b"a\x7f",
    ] {
        assert_eq!(field(bad, b"v"), Err(Malformed::BadNameChar), "{bad:?}");
    }
    for bad in [&b":"[..], b":foo", b":Path", b"::path", b":path "] {
        assert_eq!(field(bad, b"/"), Err(Malformed::UnknownPseudo), "{bad:?}");
    }
}

#[test]
fn values_hold_no_control_characters_and_no_outer_whitespace() {
    for good in [&b""[..], b"a", b"a b\tc", b"\x80\xff", b"!~"] {
        assert_eq!(
            field(b"x", good),
            Ok(Name::Regular(Kind::Other)),
            "{good:?}"
        );
    }
    for bad in [
        &b"a\x00b"[..],
        b"a\rb",
        b"a\nb",
        b"\x01",
        b"a\x1f",
        b"a\x7f",
    ] {
        assert_eq!(field(b"x", bad), Err(Malformed::BadValueChar), "{bad:?}");
    }
    for bad in [&b" a"[..], b"a ", b"\ta", b"a\t", b" "] {
        assert_eq!(field(b"x", bad), Err(Malformed::ValueWhitespace), "{bad:?}");
    }
    // Pseudo-headers' values too.
    assert_eq!(field(b":path", b"/a "), Err(Malformed::ValueWhitespace));
}

#[test]
fn connection_specific_fields_are_malformed() {
    use ConnectionField as C;
    for (name, which) in [
        (&b"connection"[..], C::Connection),
        (b"proxy-connection", C::ProxyConnection),
        (b"keep-alive", C::KeepAlive),
        (b"transfer-encoding", C::TransferEncoding),
        (b"upgrade", C::Upgrade),
    ] {
        let got = field(name, b"x");
        assert_eq!(got, Err(Malformed::ConnectionSpecific(which)), "{name:?}");
    }
    assert_eq!(
        field(b"http2-settings", b"AAMAAABkAAQAAP__"),
        Ok(Name::Regular(Kind::HopByHop))
    );
}

#[test]
fn te_says_trailers_or_nothing() {
    assert_eq!(field(b"te", b"trailers"), Ok(Name::Regular(Kind::Te)));
    assert_eq!(field(b"te", b"Trailers"), Ok(Name::Regular(Kind::Te)));
    for bad in [&b"gzip"[..], b"trailers, gzip", b"", b"trailers,trailers"] {
        assert_eq!(field(b"te", bad), Err(Malformed::TeNotTrailers), "{bad:?}");
    }
}

#[test]
fn content_length_is_one_number() {
    let mut seen = None;
    assert_eq!(content_length(b"42", &mut seen, Repeats::Refused), Ok(()));
    assert_eq!(seen, Some(42));
    // A second field, even of the same number, in a request; in a response only the same one.
    assert_eq!(
        content_length(b"42", &mut seen, Repeats::Refused),
        Err(Malformed::ManyContentLengths)
    );
    assert_eq!(
        content_length(b"42", &mut seen, Repeats::OfTheSameNumber),
        Ok(())
    );
    assert_eq!(
        content_length(b"43", &mut seen, Repeats::OfTheSameNumber),
        Err(Malformed::ManyContentLengths)
    );
    assert_eq!(seen, Some(42));
    for bad in [
        &b"42, 42"[..],
        b"",
        b"+1",
        b"-1",
        b"1 2",
        b"0x10",
        b"1,",
        b"1,,1",
        b"18446744073709551616",
    ] {
        let got = content_length(bad, &mut None, Repeats::Refused);
        assert_eq!(got, Err(Malformed::BadContentLength), "{bad:?}");
    }
    let mut max = None;
    assert_eq!(
        content_length(b"18446744073709551615", &mut max, Repeats::Refused),
        Ok(())
    );
    assert_eq!(max, Some(u64::MAX));
}

#[test]
fn tokens() {
    assert!(is_token(b"GET"));
    assert!(is_token(b"websocket"));
    assert!(is_token(b"M-SEARCH"));
    for bad in [&b""[..], b"GE T", b"GET/", b"G\xc3\x89T", b"(GET)"] {
        assert!(!is_token(bad), "{bad:?}");
    }
}

#[test]
fn every_name_survives_its_memo_word_and_zero_is_none() {
    for pseudo in PSEUDOS {
        let word = Name::Pseudo(pseudo).to_memo().expect("numbered");
        assert_ne!(word, 0);
        assert_eq!(Name::from_memo(word), Some(Name::Pseudo(pseudo)));
    }
    for kind in KINDS {
        let word = Name::Regular(kind).to_memo().expect("numbered");
        assert_ne!(word, 0);
        assert_eq!(Name::from_memo(word), Some(Name::Regular(kind)));
    }
    assert_eq!(Name::from_memo(0), None);
    assert_eq!(Name::from_memo(3 << 8), None);
    assert_eq!(Name::from_memo(1 << 8 | 200), None);
}

#[test]
fn an_entry_is_judged_once_and_a_refusal_is_not_remembered() {
    let memo = Memo::default();
    assert_eq!(
        remembered(b"content-type", b"text/plain", Some(&memo)),
        Ok(Name::Regular(Kind::ContentType))
    );
    let word = memo.get();
    assert_ne!(word, 0, "the judgement is kept");
    // What the memo says is believed without looking at the field again: an entry's name
    // and value never change, so the memo is all there is to know.
    memo.set(Name::Pseudo(Pseudo::Status).to_memo().expect("numbered"));
    assert_eq!(
        remembered(b"content-type", b"text/plain", Some(&memo)),
        Ok(Name::Pseudo(Pseudo::Status))
    );
    // A refusal leaves the memo as it was, so the next use judges again.
    let refused = Memo::default();
    assert_eq!(
        remembered(b"connection", b"close", Some(&refused)),
        Err(Malformed::ConnectionSpecific(ConnectionField::Connection))
    );
    assert_eq!(refused.get(), 0);
    // Without a memo (a literal field) every call judges.
    assert_eq!(
        remembered(b"te", b"gzip", None),
        Err(Malformed::TeNotTrailers)
    );
}
