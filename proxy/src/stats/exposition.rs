//! Exposition formats: OpenMetrics (what prometheus-client writes) and the classic Prometheus
//! text format 0.0.4, derived from it for scrapers and tools that only read the classic one.

/// Which text format `/metrics` answers in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Classic,
}

/// The `Content-Type` of a format.
pub fn content_type(format: Format) -> &'static str {
    match format {
        Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        Format::Classic => "text/plain; version=0.0.4; charset=utf-8",
    }
}

/// OpenMetrics only when the `Accept` header asks for it (and not with `q=0`); classic otherwise.
pub fn negotiate(accept: Option<&str>) -> Format {
    let wants_openmetrics = accept.is_some_and(|accept| {
        accept.split(',').any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f64>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        })
    });
    if wants_openmetrics {
        Format::OpenMetrics
    } else {
        Format::Classic
    }
}

/// Rewrites prometheus-client's OpenMetrics text into the classic format:
/// - counter families are named `<name>_total` in HELP/TYPE, as their samples are;
/// - info families become gauges named `<name>_info`, unknown ones `untyped`;
/// - `# UNIT`, `# EOF`, `_created` samples and exemplars are dropped (classic has none).
pub fn to_classic(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // prometheus-client writes HELP before TYPE, and only TYPE tells us how to rename.
    let mut pending_help: Option<(&str, &str)> = None;
    let mut family = "";
    let mut family_type = "";

    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            flush_help(&mut out, pending_help.take());
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            pending_help = Some((name, text));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let (suffix, classic_type) = match kind {
                "counter" => ("_total", "counter"),
                "info" => ("_info", "gauge"),
                "gauge" | "histogram" | "summary" => ("", kind),
                _ => ("", "untyped"),
            };
            match pending_help.take() {
                Some((help_name, text)) if help_name == name => {
                    push_line(&mut out, &["# HELP ", name, suffix, " ", text]);
                }
                other => flush_help(&mut out, other),
            }
            push_line(&mut out, &["# TYPE ", name, suffix, " ", classic_type]);
            family = name;
            family_type = kind;
            continue;
        }
        flush_help(&mut out, pending_help.take());
        if line.starts_with("# UNIT ") || line == "# EOF" || line.trim().is_empty() {
            continue;
        }
        if line.starts_with('#') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let is_created = line[..name_end]
            .strip_prefix(family)
            .is_some_and(|suffix| suffix == "_created");
        if is_created && matches!(family_type, "counter" | "histogram" | "summary") {
            continue;
        }
        push_line(&mut out, &[strip_exemplar(line, name_end)]);
    }
    flush_help(&mut out, pending_help);
    out
}

fn push_line(out: &mut String, parts: &[&str]) {
    for part in parts {
        out.push_str(part);
    }
    out.push('\n');
}

/// A HELP line whose TYPE did not follow right away keeps its name.
fn flush_help(out: &mut String, help: Option<(&str, &str)>) {
    if let Some((name, text)) = help {
        push_line(out, &["# HELP ", name, " ", text]);
    }
}

/// Cuts an OpenMetrics exemplar (` # {...} value`) off a sample line. The label set may contain
/// `#` inside quoted values, so the search starts after it.
fn strip_exemplar(line: &str, name_end: usize) -> &str {
    let mut labels_end = name_end;
    if line[name_end..].starts_with('{') {
        let mut in_quotes = false;
        let mut escaped = false;
        for (i, c) in line[name_end..].char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_quotes => escaped = true,
                '"' => in_quotes = !in_quotes,
                '}' if !in_quotes => {
                    labels_end = name_end + i + 1;
                    break;
                }
                _ => {}
            }
        }
    }
    match line[labels_end..].find(" # ") {
        Some(i) => &line[..labels_end + i],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"# HELP weir_requests Upstream attempts.
# TYPE weir_requests counter
weir_requests_total{route="api",backend="canary",code="200",class="2xx"} 3
weir_requests_created{route="api",backend="canary",code="200",class="2xx"} 1700000000.0
# HELP weir_request_duration_seconds Upstream latency.
# TYPE weir_request_duration_seconds histogram
# UNIT weir_request_duration_seconds seconds
weir_request_duration_seconds_sum{route="api",backend="canary"} 0.25
weir_request_duration_seconds_count{route="api",backend="canary"} 3
weir_request_duration_seconds_bucket{le="0.1",route="api",backend="canary"} 2 # {trace="a # b"} 0.05
weir_request_duration_seconds_bucket{le="+Inf",route="api",backend="canary"} 3
# HELP weir_canary_weight_ratio Canary share.
# TYPE weir_canary_weight_ratio gauge
weir_canary_weight_ratio{route="api"} 0.2
# HELP weir_build Build.
# TYPE weir_build info
weir_build_info{version="1.0"} 1
# HELP weir_mystery Something.
# TYPE weir_mystery unknown
weir_mystery 7
# EOF
"#;

    const CLASSIC: &str = r#"# HELP weir_requests_total Upstream attempts.
# TYPE weir_requests_total counter
weir_requests_total{route="api",backend="canary",code="200",class="2xx"} 3
# HELP weir_request_duration_seconds Upstream latency.
# TYPE weir_request_duration_seconds histogram
weir_request_duration_seconds_sum{route="api",backend="canary"} 0.25
weir_request_duration_seconds_count{route="api",backend="canary"} 3
weir_request_duration_seconds_bucket{le="0.1",route="api",backend="canary"} 2
weir_request_duration_seconds_bucket{le="+Inf",route="api",backend="canary"} 3
# HELP weir_canary_weight_ratio Canary share.
# TYPE weir_canary_weight_ratio gauge
weir_canary_weight_ratio{route="api"} 0.2
# HELP weir_build_info Build.
# TYPE weir_build_info gauge
weir_build_info{version="1.0"} 1
# HELP weir_mystery Something.
# TYPE weir_mystery untyped
weir_mystery 7
"#;

    #[test]
    fn converts_openmetrics_to_classic() {
        assert_eq!(to_classic(SAMPLE), CLASSIC);
    }

    #[test]
    fn empty_counter_family_is_renamed() {
        let om = "# HELP weir_swaps Swaps.\n# TYPE weir_swaps counter\n# EOF\n";
        assert_eq!(
            to_classic(om),
            "# HELP weir_swaps_total Swaps.\n# TYPE weir_swaps_total counter\n"
        );
    }

    #[test]
    fn exemplar_cut_respects_quotes() {
        let line = r#"x_total{path="/a # b"} 1 # {id="1"} 1.0"#;
        assert_eq!(strip_exemplar(line, 7), r#"x_total{path="/a # b"} 1"#);
        assert_eq!(strip_exemplar("x 1", 1), "x 1");
    }

    #[test]
    fn negotiates_format() {
        assert_eq!(negotiate(None), Format::Classic);
        assert_eq!(negotiate(Some("*/*")), Format::Classic);
        assert_eq!(negotiate(Some("text/plain;version=0.0.4")), Format::Classic);
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(
            negotiate(Some("application/openmetrics-text; q=0")),
            Format::Classic
        );
        assert!(content_type(Format::Classic).starts_with("text/plain; version=0.0.4"));
    }
}
