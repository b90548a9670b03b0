//! Argo's Prometheus provider: an instant (or range) query over the Prometheus HTTP API.
//!
//! Results take the shape Argo gives them, so that existing conditions keep working: a vector
//! is a list of its sample values (`result[0]`), a scalar a number, a matrix a list of lists.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value as Json;

use super::super::args::duration;
use super::http::{self, encode_query_value, snippet, Call};
use super::Reading;
use crate::argo::model::RangeQuery;
use crate::expr::Value;

pub async fn measure(
    address: &str,
    query: &str,
    range: Option<&RangeQuery>,
    extra_headers: &[(String, String)],
    timeout: Duration,
) -> Result<Reading, String> {
    let url = query_url(address, query, range, unix_now())?;
    // First, so that a template's own Accept header wins.
    let mut headers = vec![("Accept".to_string(), "application/json".to_string())];
    headers.extend_from_slice(extra_headers);
    let call = Call {
        method: "GET",
        url: &url,
        headers: &headers,
        body: None,
        timeout,
    };
    let answer = http::send(&call).await?;
    // Prometheus explains bad queries in JSON with a 4xx/5xx status, so read the body first.
    let json: Json = serde_json::from_slice(&answer.body).map_err(|_| {
        format!(
            "prometheus at {address} answered {} with no API response: {}",
            answer.status,
            snippet(&answer.body)
        )
    })?;
    parse_response(&json).map(Reading::Value)
}

fn query_url(
    address: &str,
    query: &str,
    range: Option<&RangeQuery>,
    now: f64,
) -> Result<String, String> {
    let base = address.trim_end_matches('/');
    let query = encode_query_value(query);
    let Some(range) = range else {
        return Ok(format!("{base}/api/v1/query?query={query}"));
    };
    let start = eval_time("rangeQuery.start", &range.start, now)?;
    let end = eval_time("rangeQuery.end", &range.end, now)?;
    let step = duration("rangeQuery.step", &range.step)?;
    if step.is_zero() {
        return Err("rangeQuery.step must be positive".into());
    }
    Ok(format!(
        "{base}/api/v1/query_range?query={query}&start={start:.3}&end={end:.3}&step={}",
        step.as_secs_f64()
    ))
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Argo's range bounds are expressions over `now()`; weir takes the forms people write:
/// `now()`, `now() - 5m`, `now() - duration("5m")` (and `+`).
fn eval_time(field: &str, expr: &str, now: f64) -> Result<f64, String> {
    let bad = || {
        format!("{field}: {expr:?} is not a supported time (use now(), now() - 5m or now() - duration(\"5m\"))")
    };
    let compact: String = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let rest = compact.strip_prefix("now()").ok_or_else(bad)?;
    if rest.is_empty() {
        return Ok(now);
    }
    let (sign, term) = match rest.split_at(1) {
        ("-", term) => (-1.0, term),
        ("+", term) => (1.0, term),
        _ => return Err(bad()),
    };
    let term = term
        .strip_prefix("duration(")
        .and_then(|t| t.strip_suffix(')'))
        .map(|t| t.trim_matches(|c| c == '"' || c == '\''))
        .unwrap_or(term);
    let offset = duration(field, term).map_err(|_| bad())?;
    Ok(now + sign * offset.as_secs_f64())
}

/// Reads the Prometheus HTTP API envelope into a value, or the error Prometheus gave.
fn parse_response(json: &Json) -> Result<Value, String> {
    match json.get("status").and_then(Json::as_str) {
        Some("success") => {}
        Some("error") => {
            let kind = json
                .get("errorType")
                .and_then(Json::as_str)
                .unwrap_or("unknown");
            let error = json
                .get("error")
                .and_then(Json::as_str)
                .unwrap_or("no message");
            return Err(format!("prometheus query failed: {kind}: {error}"));
        }
        _ => {
            return Err(format!(
                "prometheus answer has no status: {}",
                snippet(json.to_string().as_bytes())
            ))
        }
    }
    let data = json.get("data").ok_or("prometheus answer has no data")?;
    let kind = data.get("resultType").and_then(Json::as_str).unwrap_or("");
    let result = data
        .get("result")
        .ok_or("prometheus answer has no data.result")?;
    let list = |json: &Json| json.as_array().cloned().unwrap_or_default();
    match kind {
        "vector" => list(result)
            .iter()
            .map(|series| sample(series.get("value")).map(Value::Number))
            .collect::<Result<_, _>>()
            .map(Value::List),
        "matrix" => list(result)
            .iter()
            .map(|series| {
                list(series.get("values").unwrap_or(&Json::Null))
                    .iter()
                    .map(|point| sample(Some(point)).map(Value::Number))
                    .collect::<Result<_, _>>()
                    .map(Value::List)
            })
            .collect::<Result<_, _>>()
            .map(Value::List),
        "scalar" => sample(Some(result)).map(Value::Number),
        "string" => match result.get(1).and_then(Json::as_str) {
            Some(text) => Ok(Value::String(text.to_string())),
            None => Err(format!("malformed prometheus string result: {result}")),
        },
        other => Err(format!("prometheus result type {other:?} is not supported")),
    }
}

/// One `[timestamp, "value"]` pair; Prometheus spells values as strings, NaN and ±Inf included.
fn sample(pair: Option<&Json>) -> Result<f64, String> {
    let text = pair
        .and_then(|p| p.get(1))
        .and_then(Json::as_str)
        .ok_or_else(|| {
            format!(
                "malformed prometheus sample: {}",
                pair.unwrap_or(&Json::Null)
            )
        })?;
    match text {
        "NaN" => Ok(f64::NAN),
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => text
            .parse()
            .map_err(|_| format!("prometheus sample value {text:?} is not a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_server::serve;
    use super::*;

    fn vector(values: &[&str]) -> String {
        let series: Vec<String> = values
            .iter()
            .map(|v| format!(r#"{{"metric":{{"job":"web"}},"value":[1700000000.123,"{v}"]}}"#))
            .collect();
        format!(
            r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#,
            series.join(",")
        )
    }

    async fn query(base: &str, q: &str) -> Result<Reading, String> {
        measure(base, q, None, &[], Duration::from_secs(5)).await
    }

    #[tokio::test]
    async fn vector_scalar_and_special_values() {
        let server = serve(|seen| {
            let q = seen.target.split("query=").nth(1).unwrap_or("");
            match q {
                "rate" => (200, vector(&["0.962"])),
                "two" => (200, vector(&["1", "2.5"])),
                "empty" => (200, vector(&[])),
                "nan" => (200, vector(&["NaN", "+Inf", "-Inf"])),
                "scalar" => (200, r#"{"status":"success","data":{"resultType":"scalar","result":[1700000000,"42"]}}"#.into()),
                "str" => (200, r#"{"status":"success","data":{"resultType":"string","result":[1700000000,"ok"]}}"#.into()),
                "matrix" => (200, r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[2,"3"]]}]}}"#.into()),
                _ => (400, r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:1: parse error"}"#.into()),
            }
        })
        .await;
        let num = Value::Number;
        assert_eq!(
            query(&server.base, "rate").await,
            Ok(Reading::Value(Value::List(vec![num(0.962)])))
        );
        assert_eq!(
            query(&server.base, "two").await,
            Ok(Reading::Value(Value::List(vec![num(1.0), num(2.5)])))
        );
        assert_eq!(
            query(&server.base, "empty").await,
            Ok(Reading::Value(Value::List(vec![])))
        );
        match query(&server.base, "nan").await {
            Ok(Reading::Value(Value::List(v))) => {
                assert!(matches!(v[0], Value::Number(n) if n.is_nan()));
                assert_eq!(&v[1..], &[num(f64::INFINITY), num(f64::NEG_INFINITY)]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            query(&server.base, "scalar").await,
            Ok(Reading::Value(num(42.0)))
        );
        assert_eq!(
            query(&server.base, "str").await,
            Ok(Reading::Value(Value::String("ok".into())))
        );
        assert_eq!(
            query(&server.base, "matrix").await,
            Ok(Reading::Value(Value::List(vec![Value::List(vec![
                num(1.0),
                num(3.0)
            ])])))
        );
        let err = query(&server.base, "bad(").await.unwrap_err();
        assert_eq!(
            err,
            "prometheus query failed: bad_data: invalid parameter \"query\": 1:1: parse error"
        );
    }

    #[tokio::test]
    async fn sends_encoded_query_and_headers() {
        let server = serve(|_| (200, vector(&["1"]))).await;
        let headers = vec![("X-Scope-OrgID".to_string(), "team-a".to_string())];
        let q = "sum(rate(http_requests_total{code=~\"5..\"}[5m]))";
        let address = format!("{}/", server.base);
        measure(&address, q, None, &headers, Duration::from_secs(5))
            .await
            .unwrap();
        let seen = server.last();
        assert_eq!(
            seen.target,
            format!("/api/v1/query?query={}", encode_query_value(q))
        );
        assert!(seen
            .headers
            .contains(&("x-scope-orgid".into(), "team-a".into())));
    }

    #[tokio::test]
    async fn non_api_answers_are_errors() {
        let server = serve(|_| (502, "<html>Bad Gateway</html>".into())).await;
        let err = query(&server.base, "up").await.unwrap_err();
        assert!(err.contains("502") && err.contains("Bad Gateway"), "{err}");
    }

    #[tokio::test]
    async fn range_query_uses_now_relative_bounds() {
        let server = serve(|_| {
            (
                200,
                r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#.into(),
            )
        })
        .await;
        let range = RangeQuery {
            start: "now() - duration(\"5m\")".into(),
            end: "now()".into(),
            step: "1m".into(),
        };
        let reading = measure(
            &server.base,
            "up",
            Some(&range),
            &[],
            Duration::from_secs(5),
        )
        .await;
        assert_eq!(reading, Ok(Reading::Value(Value::List(vec![]))));
        let target = server.last().target;
        assert!(
            target.starts_with("/api/v1/query_range?query=up&start="),
            "{target}"
        );
        assert!(target.ends_with("&step=60"), "{target}");
    }

    #[test]
    fn time_expressions() {
        let now = 1_000_000.0;
        assert_eq!(eval_time("start", "now()", now), Ok(now));
        assert_eq!(eval_time("start", "now() - 5m", now), Ok(now - 300.0));
        assert_eq!(
            eval_time("start", "now()-duration('1h')", now),
            Ok(now - 3600.0)
        );
        assert_eq!(eval_time("start", " now() + 30s ", now), Ok(now + 30.0));
        assert!(eval_time("start", "yesterday", now).is_err());
        assert!(eval_time("start", "now() * 2", now).is_err());
        let url = query_url(
            "http://p",
            "up",
            Some(&RangeQuery {
                start: "now() - 10m".into(),
                end: "now()".into(),
                step: "30s".into(),
            }),
            now,
        );
        assert_eq!(
            url,
            Ok(
                "http://p/api/v1/query_range?query=up&start=999400.000&end=1000000.000&step=30"
                    .into()
            )
        );
    }
}
