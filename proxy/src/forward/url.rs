//! A route's redirect and URL rewrite carried out on `http`'s types: the redirect's answer,
//! and the rewritten target and host of the request that goes upstream. What the URL becomes
//! is decided in `crate::pipeline::url`; this is only where it is put.

use http::header::{CONTENT_LENGTH, HOST, LOCATION};
use http::request::Parts;
use http::uri::PathAndQuery;
use http::{HeaderValue, Response, Uri};

use super::body::ResponseBody;
use crate::pipeline::url::{edited, location, RequestUrl};
use crate::table::{Redirect, Rewrite, Route};

/// The redirect's answer: its status, `Location`, no body, and the route's response edits.
/// Err: the Location is not a header value (a Host with bytes a URL cannot carry).
pub fn redirect_response(
    route: &Route,
    redirect: &Redirect,
    request: RequestUrl<'_>,
) -> Result<Response<ResponseBody>, &'static str> {
    let target = location(redirect, request);
    let value = HeaderValue::try_from(target)
        .map_err(|_| "the redirect's Location is not a valid header value")?;
    let mut resp = Response::new(ResponseBody::Empty);
    *resp.status_mut() = redirect.status;
    let headers = resp.headers_mut();
    headers.insert(LOCATION, value);
    headers.insert(CONTENT_LENGTH, HeaderValue::from_static("0"));
    route.response_edits.apply(headers);
    Ok(resp)
}

/// Rewrites the request's target and host for the upstream. Call it after X-Forwarded-Host
/// was set: that field keeps the host the client asked for.
pub fn rewrite(parts: &mut Parts, rewrite: &Rewrite) -> Result<(), &'static str> {
    let path = match &rewrite.path {
        Some(edit) => {
            let target = parts.uri.path_and_query().map_or("/", PathAndQuery::as_str);
            Some(
                PathAndQuery::try_from(edited(edit, target))
                    .map_err(|_| "the rewritten path is not a valid request target")?,
            )
        }
        None => None,
    };
    let authority = match &rewrite.hostname {
        // An HTTP/2 client's (or an absolute-form) target names the host in the URI too.
        Some((authority, _)) if parts.uri.authority().is_some() => Some(authority.clone()),
        _ => None,
    };
    if path.is_some() || authority.is_some() {
        let mut uri = std::mem::take(&mut parts.uri).into_parts();
        if let Some(path) = path {
            uri.path_and_query = Some(path);
        }
        if let Some(authority) = authority {
            uri.authority = Some(authority);
        }
        parts.uri = Uri::from_parts(uri).map_err(|_| "the rewritten URI is not valid")?;
    }
    if let Some((_, host)) = &rewrite.hostname {
        // The Host field where there is one, and always for an origin-form target, which
        // has nothing else naming the host.
        if parts.headers.contains_key(HOST) || parts.uri.authority().is_none() {
            parts.headers.insert(HOST, host.clone());
        }
    }
    Ok(())
}
