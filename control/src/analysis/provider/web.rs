//! Argo's web provider: call a URL, require a 2xx answer, read JSON, pick a value by jsonPath.

use super::http::{self, snippet, Call};
use super::{JsonPath, Reading};
use crate::expr::Value;

pub async fn measure(call: &Call<'_>, json_path: Option<&JsonPath>) -> Result<Reading, String> {
    let answer = http::send(call).await?;
    if !answer.status.is_success() {
        return Err(format!(
            "{} {}: received non-2xx status {}: {}",
            call.method,
            call.url,
            answer.status,
            snippet(&answer.body)
        ));
    }
    let json: serde_json::Value = serde_json::from_slice(&answer.body).map_err(|e| {
        format!(
            "{} {}: answer is not JSON ({e}): {}",
            call.method,
            call.url,
            snippet(&answer.body)
        )
    })?;
    let picked = match json_path {
        Some(path) => path.find(&json)?,
        None => json,
    };
    Ok(Reading::Value(Value::from(&picked)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::test_server::serve;
    use super::*;

    fn call<'a>(method: &'a str, url: &'a str, headers: &'a [(String, String)]) -> Call<'a> {
        Call {
            method,
            url,
            headers,
            body: None,
            timeout: Duration::from_secs(5),
        }
    }

    #[tokio::test]
    async fn picks_a_value_by_json_path() {
        let server = serve(|_| {
            (
                200,
                r#"{"data":{"ok":true,"rate":0.995},"items":[{"v":"x"}]}"#.into(),
            )
        })
        .await;
        let url = format!("{}/health?svc=web", server.base);
        let headers = vec![("Authorization".to_string(), "Bearer t".to_string())];
        let path = JsonPath::parse("{$.data.rate}").unwrap();
        let reading = measure(&call("GET", &url, &headers), Some(&path)).await;
        assert_eq!(reading, Ok(Reading::Value(Value::Number(0.995))));
        let seen = server.last();
        assert_eq!(seen.target, "/health?svc=web");
        assert!(seen
            .headers
            .contains(&("authorization".into(), "Bearer t".into())));

        let path = JsonPath::parse("{$.items[0].v}").unwrap();
        let reading = measure(&call("GET", &url, &[]), Some(&path)).await;
        assert_eq!(reading, Ok(Reading::Value(Value::String("x".into()))));
    }

    #[tokio::test]
    async fn without_json_path_the_whole_document() {
        let server = serve(|_| (200, "[1, 2]".into())).await;
        let reading = measure(&call("GET", &server.base, &[]), None).await;
        assert_eq!(
            reading,
            Ok(Reading::Value(Value::List(vec![
                Value::Number(1.0),
                Value::Number(2.0)
            ])))
        );
    }

    #[tokio::test]
    async fn posts_the_body() {
        let server = serve(|seen| (200, format!("{{\"echo\":{:?}}}", seen.body))).await;
        let url = format!("{}/check", server.base);
        let mut post = call("POST", &url, &[]);
        post.body = Some("{\"q\":1}");
        let path = JsonPath::parse("{$.echo}").unwrap();
        let reading = measure(&post, Some(&path)).await;
        assert_eq!(
            reading,
            Ok(Reading::Value(Value::String("{\"q\":1}".into())))
        );
        assert_eq!(server.last().method, "POST");
    }

    #[tokio::test]
    async fn non_2xx_and_non_json_are_errors() {
        let server = serve(|seen| match seen.target.as_str() {
            "/down" => (503, "upstream unavailable".into()),
            _ => (200, "<html>hi</html>".into()),
        })
        .await;
        let url = format!("{}/down", server.base);
        let err = measure(&call("GET", &url, &[]), None).await.unwrap_err();
        assert!(
            err.contains("non-2xx status 503") && err.contains("upstream unavailable"),
            "{err}"
        );
        let url = format!("{}/page", server.base);
        let err = measure(&call("GET", &url, &[]), None).await.unwrap_err();
        assert!(err.contains("not JSON"), "{err}");
        let path = JsonPath::parse("{$.missing}").unwrap();
        let server = serve(|_| (200, "{}".into())).await;
        let err = measure(&call("GET", &server.base, &[]), Some(&path))
            .await
            .unwrap_err();
        assert!(err.contains("\"missing\" not found"), "{err}");
    }

    #[tokio::test]
    async fn timeout_is_an_error() {
        // Accept the connection, never answer.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/slow", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _held = listener.accept().await;
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        let mut slow = call("GET", &url, &[]);
        slow.timeout = Duration::from_millis(200);
        let err = measure(&slow, None).await.unwrap_err();
        assert!(err.contains("no answer within 200ms"), "{err}");
    }
}
