//! The HTTP/1 request head parser with its strict rules, the body framing that follows it, and
//! the response head parser. Beyond not crashing: a head accepted is one the rules allow (every
//! line ends in CRLF, one Host for HTTP/1.1, ranges inside the input), and framing never takes
//! more bytes than it is given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_proxy::h1::head::{Parsed, ParsedResponse, RequestHead, ResponseHead};
use weir_proxy::h1::{BodyCursor, Framing};

fuzz_target!(|data: &[u8]| {
    let mut head = RequestHead::default();
    match head.parse(data, 100) {
        Parsed::Complete | Parsed::Hyper => {
            assert!(head.len <= data.len());
            let bytes = &data[..head.len];
            assert!(bytes.ends_with(b"\r\n\r\n"));
            assert!(
                bytes.windows(2).all(|w| w[1] != b'\n' || w[0] == b'\r') && bytes[0] != b'\n',
                "a bare LF was accepted"
            );
            for f in &head.list.fields {
                assert!(f.name.end <= head.len && f.value.end <= head.len);
            }
            if let Some(host) = &head.host {
                assert!(host.end <= head.len);
            }
            assert!(head.method.end <= head.len && head.target.end <= head.len);
            let mut body = BodyCursor::new(head.framing);
            let rest = &data[head.len..];
            // In two pieces, as bytes arrive.
            let cut = rest.len() / 2;
            if let Ok(a) = body.take(&rest[..cut]) {
                assert!(a <= cut);
                if a == cut {
                    if let Ok(b) = body.take(&rest[cut..]) {
                        assert!(b <= rest.len() - cut);
                    }
                }
            }
            if head.framing == Framing::Empty {
                assert!(body.is_done());
            }
        }
        Parsed::Partial | Parsed::Refused(_) => {}
    }
    let mut resp = ResponseHead::default();
    if let ParsedResponse::Complete = resp.parse(data, data.first() == Some(&b'H')) {
        assert!(resp.len <= data.len());
        let mut body = BodyCursor::new(resp.framing);
        if let Ok(n) = body.take(&data[resp.len..]) {
            assert!(n <= data.len() - resp.len);
        }
    }
});
