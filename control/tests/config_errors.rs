//! Bad configs are refused with errors that name the file, the path and the line.

use std::path::Path;

use weir_control::config::{from_str, load, ConfigError, ConfigErrors};

const FILE: &str = "/etc/weir/weir.yaml";

fn errors(text: &str) -> ConfigErrors {
    match from_str(text, Path::new(FILE)) {
        Ok(config) => panic!("expected errors, got {config:?}"),
        Err(errors) => errors,
    }
}

/// The error at `path` whose message contains `words`; fails listing every error otherwise.
fn find<'a>(errors: &'a ConfigErrors, path: &str, words: &str) -> &'a ConfigError {
    errors
        .iter()
        .find(|e| e.path == path && e.message.contains(words))
        .unwrap_or_else(|| panic!("no error at {path} mentioning {words:?} in:\n{errors}"))
}

/// One route around the given route fields, so each test states only what it breaks.
fn with_route(fields: &str) -> String {
    format!(
        "listeners: [{{address: 0.0.0.0:8080}}]\nroutes:\n  - name: api\n    stable: {{addresses: [127.0.0.1:9001]}}\n{fields}"
    )
}

#[test]
fn wrong_type_names_path_and_line() {
    let errors = errors(&with_route("    canary_weight: \"x\"\n"));
    assert_eq!(errors.len(), 1);
    let error = find(&errors, "routes[0].canary_weight", "invalid type");
    assert_eq!(error.line, Some(5));
    assert_eq!(error.file, Path::new(FILE));
    let shown = error.to_string();
    assert!(
        shown.starts_with("/etc/weir/weir.yaml:5: routes[0].canary_weight: invalid type"),
        "{shown}"
    );
    assert!(
        !shown.contains("column"),
        "position is not repeated: {shown}"
    );
}

#[test]
fn unknown_field_is_an_error() {
    let errors = errors(&with_route("    canary_wieght: 20\n"));
    let error = errors.iter().next().expect("one error");
    assert!(
        error.message.contains("unknown field `canary_wieght`"),
        "{errors}"
    );
    assert!(error.path.starts_with("routes[0]"), "{errors}");
    assert_eq!(error.line, Some(5));
}

#[test]
fn weight_out_of_range() {
    let errors = errors(&with_route(
        "    canary: {addresses: [127.0.0.1:9101]}\n    canary_weight: 101\n",
    ));
    let error = find(&errors, "routes[0].canary_weight", "out of range");
    assert_eq!(error.line, Some(6));
}

#[test]
fn weight_with_three_decimals() {
    let errors = errors(&with_route(
        "    canary: {addresses: [127.0.0.1:9101]}\n    canary_weight: 12.345\n",
    ));
    find(&errors, "routes[0].canary_weight", "two decimals");
}

#[test]
fn weight_without_canary() {
    let errors = errors(&with_route("    canary_weight: 5\n"));
    find(&errors, "routes[0].canary_weight", "needs a canary");
}

#[test]
fn bad_backend_address() {
    let errors = errors(&with_route(
        "    canary:\n      addresses: [127.0.0.1:9101, \"localhost\", \"h:0\"]\n",
    ));
    let error = find(&errors, "routes[0].canary.addresses[1]", "invalid address");
    assert_eq!(error.line, Some(6));
    find(&errors, "routes[0].canary.addresses[2]", "port");
}

#[test]
fn missing_stable() {
    let text =
        "listeners: [{address: 0.0.0.0:8080}]\nroutes:\n  - name: api\n    canary_weight: 1\n";
    let errors = errors(text);
    let error = find(&errors, "routes[0]", "missing field `stable`");
    assert_eq!(error.line, Some(3));
}

#[test]
fn duplicate_route_names() {
    let text = "
listeners: [{address: 0.0.0.0:8080}]
routes:
  - name: api
    match: {path_prefix: /a}
    stable: {addresses: [127.0.0.1:9001]}
  - name: api
    match: {path_prefix: /b}
    stable: {addresses: [127.0.0.1:9001]}
";
    let errors = errors(text);
    assert_eq!(errors.len(), 1, "{errors}");
    let error = find(&errors, "routes[1].name", "duplicate route name");
    assert_eq!(error.line, Some(7));
}

#[test]
fn duplicate_route_matches() {
    let text = "
listeners: [{address: 0.0.0.0:8080}]
routes:
  - name: one
    match: {hosts: [a.com, b.com]}
    stable: {addresses: [127.0.0.1:9001]}
  - name: two
    match: {hosts: [B.com, a.com], path_prefix: /}
    stable: {addresses: [127.0.0.1:9001]}
";
    let errors = errors(text);
    let error = find(&errors, "routes[1].match", "routes[0]");
    assert_eq!(error.line, Some(8));
}

#[test]
fn bad_regex() {
    let errors = errors(&with_route(
        "    match:\n      headers:\n        - {name: x-a, regex: \"a(b\"}\n",
    ));
    let error = find(&errors, "routes[0].match.headers[0].regex", "invalid regex");
    assert_eq!(error.line, Some(7));
    assert!(
        !error.message.contains('\n'),
        "one line: {:?}",
        error.message
    );
}

#[test]
fn header_match_needs_exactly_one_kind() {
    let errors = errors(&with_route(
        "    match:\n      headers:\n        - {name: x-a, exact: a, prefix: b}\n        - {name: x-b}\n",
    ));
    find(&errors, "routes[0].match.headers[0]", "exactly one");
    find(&errors, "routes[0].match.headers[1]", "exactly one");
}

#[test]
fn mirror_and_header_route_need_a_canary() {
    let errors = errors(&with_route(
        "    header_routes:\n      - name: beta\n        match: [{name: x-canary, exact: \"1\"}]\n    mirror: {percent: 10}\n",
    ));
    find(&errors, "routes[0].header_routes[0].backend", "no canary");
    let error = find(&errors, "routes[0].mirror", "no canary");
    assert_eq!(error.line, Some(8));
}

#[test]
fn a_mirrors_methods_and_header_are_checked() {
    let errors = errors(&with_route(
        "    canary: {addresses: [127.0.0.1:9002]}\n    mirror: {percent: 10, methods: [POST, \"NOT A METHOD\"], header: \"x bad\"}\n",
    ));
    find(&errors, "routes[0].mirror.methods[1]", "not an HTTP method");
    find(&errors, "routes[0].mirror.header", "not a header name");
    assert_eq!(errors.len(), 2, "{errors}");
}

#[test]
fn header_route_to_stable_needs_no_canary() {
    let text = with_route(
        "    header_routes:\n      - name: pin\n        match: [{name: x-pin, exact: \"1\"}]\n        backend: stable\n",
    );
    from_str(&text, Path::new(FILE)).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn sticky_with_cookie_and_header() {
    let errors = errors(&with_route("    sticky: {cookie: s, header: x-user}\n"));
    let error = find(&errors, "routes[0].sticky", "exactly one of cookie, header");
    assert_eq!(error.line, Some(5));
}

#[test]
fn empty_listeners_and_routes() {
    let errors = errors("listeners: []\nroutes: []\n");
    assert_eq!(find(&errors, "listeners", "at least one").line, Some(1));
    assert_eq!(find(&errors, "routes", "at least one").line, Some(2));
}

#[test]
fn empty_file() {
    let errors = errors("# nothing yet\n");
    find(&errors, "listeners", "at least one");
    find(&errors, "routes", "at least one");
}

#[test]
fn listener_problems() {
    let text = "
listeners:
  - {address: 0.0.0.0:8080}
  - {address: 0.0.0.0:8080, name: bad name}
  - {address: localhost:80}
  - {address: 127.0.0.1:9901, tls: {cert: missing.crt, key: /nonexistent/weir.key}}
routes: [{name: api, stable: {addresses: [127.0.0.1:9001]}}]
";
    let errors = errors(text);
    let error = find(
        &errors,
        "listeners[1].address",
        "already used by listeners[0].address",
    );
    assert_eq!(error.line, Some(4));
    find(&errors, "listeners[1].name", "invalid name");
    find(&errors, "listeners[2].address", "expected ip:port");
    find(&errors, "listeners[3].address", "default admin address");
    let error = find(&errors, "listeners[3].tls.cert", "/etc/weir/missing.crt");
    assert_eq!(error.line, Some(6));
    find(&errors, "listeners[3].tls.key", "/nonexistent/weir.key");
}

#[test]
fn zero_durations_and_limits() {
    let text = "
listeners: [{address: 0.0.0.0:8080}]
limits: {max_connections: 0, idle_timeout: 0s}
upstream_defaults: {connect_timeout: 0ms}
routes: [{name: api, timeout: 0, stable: {addresses: [127.0.0.1:9001]}}]
";
    let errors = errors(text);
    find(&errors, "limits.max_connections", "at least 1");
    find(&errors, "limits.idle_timeout", "greater than zero");
    find(
        &errors,
        "upstream_defaults.connect_timeout",
        "greater than zero",
    );
    find(&errors, "routes[0].timeout", "greater than zero");
}

#[test]
fn bad_duration_syntax() {
    let errors = errors(&with_route("    timeout: 10 seconds\n"));
    let error = find(&errors, "routes[0].timeout", "invalid duration");
    assert_eq!(error.line, Some(5));
}

#[test]
fn several_problems_are_all_reported_in_line_order() {
    let text = "
listeners: [{address: nowhere}]
routes:
  - name: api
    match: {path_prefix: api}
    stable: {addresses: []}
    canary: {addresses: [\"::1:80\"]}
    canary_weight: 150
    sticky: {}
  - name: \"bad/name\"
    stable: {addresses: [127.0.0.1:9001]}
    mirror: {percent: 10}
";
    let errors = errors(text);
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "listeners[0].address",
            "routes[0].match.path_prefix",
            "routes[0].stable.addresses",
            "routes[0].canary.addresses[0]",
            "routes[0].canary_weight",
            "routes[0].sticky",
            "routes[1].name",
            "routes[1].mirror",
        ],
        "{errors}"
    );
    assert!(errors.iter().all(|e| e.line.is_some()), "{errors}");
    assert_eq!(errors.to_string().lines().count(), errors.len());
}

#[test]
fn yaml_syntax_error_has_a_line() {
    let errors = errors("listeners:\n  - address: [0.0.0.0:8080\nroutes: []\n");
    let error = errors.iter().next().expect("one error");
    assert!(error.line.is_some(), "{errors}");
}

#[test]
fn missing_file_is_an_error() {
    let errors = load(Path::new("/nonexistent/weir.yaml")).expect_err("no file");
    let shown = errors.to_string();
    assert!(
        shown.starts_with("/nonexistent/weir.yaml: .: cannot read config file"),
        "{shown}"
    );
}

#[test]
fn http2_pool_settings_are_checked_and_only_for_http2() {
    let errors = errors(
        "listeners: [{address: 0.0.0.0:8080}]\nroutes:\n  - name: api\n    stable:\n      \
         addresses: [127.0.0.1:9001]\n      http2: {max_connections: 0, max_requests_per_connection: 0, keepalive_timeout: 0s}\n",
    );
    find(&errors, "routes[0].stable.http2", "protocol: http2");
    find(
        &errors,
        "routes[0].stable.http2.max_connections",
        "at least 1",
    );
    find(
        &errors,
        "routes[0].stable.http2.max_requests_per_connection",
        "at least 1",
    );
    find(
        &errors,
        "routes[0].stable.http2.keepalive_timeout",
        "greater than zero",
    );
}

/// A route without `stable`, redirecting, around the given `redirect:` body.
fn redirect_route(redirect: &str) -> String {
    format!(
        "listeners: [{{address: 0.0.0.0:8080}}]\nroutes:\n  - name: to-https\n    redirect: {redirect}\n"
    )
}

#[test]
fn redirect_values_outside_the_spec_are_refused_at_their_field() {
    let found = errors(&redirect_route(
        "{scheme: ftp, hostname: \"a b\", port: 0, status: 200}",
    ));
    find(&found, "routes[0].redirect.scheme", "http or https");
    find(&found, "routes[0].redirect.hostname", "not a host name");
    find(&found, "routes[0].redirect.port", "1..65535");
    let status = find(
        &found,
        "routes[0].redirect.status",
        "200 is not a redirect status",
    );
    assert_eq!(status.line, Some(4));

    let found = errors(&redirect_route(
        "{path: {replace_full_path: /a, replace_prefix_match: /b}}",
    ));
    find(&found, "routes[0].redirect.path", "exactly one of");
    let found = errors(&redirect_route("{path: {replace_full_path: a}}"));
    find(
        &found,
        "routes[0].redirect.path.replace_full_path",
        "must start with `/`",
    );
    let found = errors(&redirect_route("{port: 70000}"));
    find(&found, "routes[0].redirect.port", "invalid value");
    let found = errors(&redirect_route("{status: 301, code: 2}"));
    find(&found, "routes[0].redirect.code", "unknown field `code`");
}

#[test]
fn rewrite_needs_a_backend_and_not_a_redirect() {
    let found = errors(
        "listeners: [{address: 0.0.0.0:8080}]\nroutes:\n  - name: api\n    rewrite: {hostname: internal.example}\n",
    );
    find(&found, "routes[0]", "missing field `stable`");
    let found = errors(&with_route(
        "    redirect: {scheme: https}\n    rewrite: {path: {replace_prefix_match: /v2}}\n",
    ));
    find(&found, "routes[0].rewrite", "use one of redirect, rewrite");
    let found = errors(&with_route("    rewrite: {hostname: \"*.example\"}\n"));
    find(&found, "routes[0].rewrite.hostname", "not a host name");
}

/// A listener's `tls` is certificate files or the Gateway's certificates, nothing between.
#[test]
fn listener_tls_is_files_or_the_gateways() {
    let text = |tls: &str| {
        format!(
            "listeners: [{{address: 0.0.0.0:8443, tls: {tls}}}]\nroutes:\n  - name: api\n    stable: {{addresses: [127.0.0.1:9001]}}\n"
        )
    };
    let e = errors(&text("{from_gateway: false}"));
    find(&e, "listeners[0].tls.from_gateway", "write `true`");
    let e = errors(&text("{cert: a.pem}"));
    find(&e, "listeners[0].tls", "from_gateway: true");
    let e = errors(&text("{from_gateway: true, cert: a.pem}"));
    find(&e, "listeners[0].tls", "from_gateway: true");
    let ok = from_str(&text("{from_gateway: true}"), Path::new(FILE)).expect("loads");
    assert_eq!(
        ok.listeners[0].tls,
        Some(weir_proxy::listen::spec::ListenerTls::Installed)
    );
}

/// `notifications:`: each problem at its path — an event that does not exist (the known ones
/// listed), a format, a missing URL, a Secret with no `rollout.secrets_dir`, two webhooks of one
/// name, and webhooks with no rollout to tell of.
#[test]
fn notifications_are_checked_field_by_field() {
    let errors = errors(&with_route(
        "notifications:\n\
         - url: https://hooks.example.com/a\n  events: [aborted, exploded]\n  format: teams\n\
         - url: https://hooks.example.com/b\n  headers: {Authorization: {secret: {name: hooks, key: token}}}\n\
         - format: slack\n\
         - url: ftp://example.com/\n",
    ));
    find(
        &errors,
        "notifications[0].events[1]",
        "\"exploded\" is not an event: one of step-reached, paused, promoted",
    );
    find(
        &errors,
        "notifications[0].format",
        "\"teams\" is not a format",
    );
    find(
        &errors,
        "notifications[1].name",
        "another webhook is named \"hooks.example.com\"",
    );
    find(
        &errors,
        "notifications[1].headers.Authorization",
        "rollout.secrets_dir, which is not set",
    );
    find(&errors, "notifications[2]", "give the webhook's `url`");
    find(
        &errors,
        "notifications[3].url",
        "must start with http:// or https://",
    );
    find(&errors, "notifications", "this config has no `rollout:`");
}

#[test]
fn access_log_mistakes_are_named() {
    // A route asks for a log the config does not have.
    let e = errors(&with_route("    access_log: {sample: 10}\n"));
    find(&e, "routes[0].access_log", "no `access_log:` section");
    // A format that is not one, a share past 100 %, a file in a directory that is not there.
    let e = errors(&format!(
        "access_log: {{format: xml, sample: 120, path: /nonexistent-dir/access.log}}\n{}",
        with_route("    access_log: {sample: 101}\n")
    ));
    find(&e, "access_log.format", "json or logfmt");
    find(&e, "access_log.sample", "out of range");
    find(&e, "access_log.path", "/nonexistent-dir: no such directory");
    find(&e, "routes[0].access_log.sample", "out of range");
}

#[test]
fn access_log_settings_load() {
    let text = format!(
        "access_log: {{path: logs/access.log, format: logfmt, query: true, sample: 25}}\n{}",
        with_route("    access_log: false\n")
    );
    let dir = std::env::temp_dir().join(format!("weir-access-log-cfg-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let config = from_str(&text, &dir.join("weir.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let log = config.access_log.expect("the section");
    assert_eq!(
        log.destination,
        weir_proxy::access_log::Destination::File(dir.join("logs/access.log"))
    );
    assert_eq!(log.format, weir_proxy::access_log::Format::Logfmt);
    assert!(log.query);
    assert_eq!(log.sample_bp, 2_500);
    assert_eq!(
        config.table.routes[0].access_log,
        weir_proxy::access_log::RoutePolicy::Off
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mutual_tls_mistakes_are_named() {
    let dir = std::env::temp_dir().join(format!("weir-mtls-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["cert.pem", "key.pem", "ca.pem"] {
        std::fs::write(dir.join(f), "").unwrap();
    }
    let text = "
listeners:
  - address: 0.0.0.0:8443
    tls: {cert: cert.pem, key: key.pem, client_auth: {ca: ca.pem, mode: sometimes, crl: [gone.pem]}}
upstream_defaults: {tls: {cert: cert.pem}}
routes:
  - name: api
    stable: {addresses: [127.0.0.1:9001], tls: {key: key.pem}}
    client_identity: {allow: [spiffe://prod/*], header: \"bad header\"}
";
    let e = match from_str(text, &dir.join("weir.yaml")) {
        Ok(c) => panic!("expected errors, got {c:?}"),
        Err(e) => e,
    };
    find(
        &e,
        "listeners[0].tls.client_auth.mode",
        "require or optional",
    );
    find(&e, "listeners[0].tls.client_auth.crl[0]", "gone.pem");
    find(&e, "upstream_defaults.tls.key", "needs its key");
    find(&e, "routes[0].stable.tls.cert", "needs its certificate");
    find(&e, "routes[0].client_identity.header", "bad header");
    let _ = std::fs::remove_dir_all(&dir);
}
