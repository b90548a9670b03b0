//! The live rollout page: `GET /ui` (one HTML file with its script and styles, built into the
//! binary: nothing is loaded from the network) and `GET /ui/history` (what it charts). It reads
//! the same admin API as the CLI and changes the rollout through it, with its header.

use http::{Method, StatusCode};
use weir_control::history::Sampler;
use weir_proxy::admin::{AdminRequest, AdminResponse};

/// The page, as shipped.
pub const PAGE: &str = include_str!("index.html");

/// The page's answer to `req`, or None when the request is not the page's.
pub fn answer(req: &AdminRequest, history: &Sampler) -> Option<AdminResponse> {
    let path = req.target.split('?').next().unwrap_or("");
    if !matches!(path, "/ui" | "/ui/" | "/ui/history") {
        return None;
    }
    if req.method != Method::GET {
        return Some(AdminResponse {
            status: StatusCode::METHOD_NOT_ALLOWED,
            content_type: "text/plain",
            body: "only GET here\n".into(),
        });
    }
    Some(match path {
        "/ui/history" => {
            let history = history.lock().unwrap_or_else(|p| p.into_inner());
            AdminResponse {
                status: StatusCode::OK,
                content_type: "application/json",
                body: serde_json::to_string(&*history).unwrap_or_else(|_| "{}".into()),
            }
        }
        _ => AdminResponse {
            status: StatusCode::OK,
            content_type: "text/html; charset=utf-8",
            body: PAGE.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::PAGE;

    /// The bound: the page and its assets weigh at most 200 KiB; and nothing is fetched
    /// from anywhere but this admin listener.
    #[test]
    fn the_page_is_small_and_self_contained() {
        assert!(PAGE.len() <= 200 * 1024, "{} bytes", PAGE.len());
        for outside in ["http://", "https://", "//cdn", "src=\"http"] {
            let uses: Vec<&str> = PAGE
                .lines()
                .filter(|l| l.contains(outside) && !l.contains("www.w3.org/2000/svg"))
                .collect();
            assert!(uses.is_empty(), "{outside}: {uses:?}");
        }
    }
}
