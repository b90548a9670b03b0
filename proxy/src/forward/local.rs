//! Responses weir writes itself: short, plain text, naming the cause.

use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Response, StatusCode};

use super::body::ResponseBody;

pub fn local_response(status: StatusCode, cause: &str) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::text(format!("weir: {cause}\n")));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
