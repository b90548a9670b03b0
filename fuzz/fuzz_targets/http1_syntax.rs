//! weir's HTTP/1 head reader against httparse on any bytes: the same answer — partial,
//! malformed, too many fields, or complete with the same length, line and field ranges — as
//! a request head and as a response head.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_proxy::h1::syntax_reference::{
    httparse_request, httparse_response, request, response,
};

fuzz_target!(|data: &[u8]| {
    assert_eq!(request(data), httparse_request(data));
    assert_eq!(response(data), httparse_response(data));
});
