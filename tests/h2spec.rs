//! weir's HTTP/2 server held to h2spec, the standard conformance suite (as the h2 crate runs it
//! in its CI): every test, strict ones included (`-S`, 147), against both of weir's HTTP/2
//! listeners — TLS with ALPN h2, and h2c with prior knowledge on the plaintext port that also
//! serves HTTP/1. h2spec is built from its Go source in tests/tools/h2spec by tests/run.sh
//! (tests/tools/build-h2spec.sh, Debian's Go packages, offline).
//!
//! One case cannot pass on the shared plaintext port, by design, and is asserted to be the only
//! failure there: http2/3.5/2 sends `INVALID CONNECTION PREFACE\r\n\r\n`, which on a port that
//! serves HTTP/1 too is a malformed HTTP/1 request line, answered 400 as RFC 9112 §3 says
//! (h2spec reads the 400 as a frame and reports an unexpected EOF). A client that has begun the
//! HTTP/2 preface (`PRI * HTTP/2.0`) is closed instead (tests/protocols.rs); on the TLS
//! listener, where ALPN said h2, the same case gets its GOAWAY and passes.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::tls::TestPki;
use common::weir::Weir;

fn h2spec() -> PathBuf {
    let path = std::env::var_os("WEIR_H2SPEC").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tools/h2spec"),
        PathBuf::from,
    );
    assert!(
        path.exists(),
        "h2spec is not built at {}: run tests/run.sh, which builds it (tests/tools/build-h2spec.sh)",
        path.display()
    );
    path
}

/// Runs the whole suite against `port`; returns each failing case as `package/classname`.
fn failures(port: u16, tls: bool) -> Vec<String> {
    let dir = common::temp_dir("h2spec");
    let report = dir.join("report.xml");
    let mut command = Command::new(h2spec());
    command
        .args([
            "-S",
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-o",
            "2",
            "-j",
        ])
        .arg(&report)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if tls {
        command.args(["-t", "-k"]);
    }
    let mut child = command.spawn().expect("h2spec runs");
    // Bounded: each case times out in 2 s, and the whole suite takes well under a second.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if child.try_wait().expect("h2spec's status").is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "h2spec ran past 300 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("h2spec's output");
    let text = std::fs::read_to_string(&report).unwrap_or_else(|e| {
        panic!(
            "no report from h2spec ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    let summary = String::from_utf8_lossy(&output.stdout)
        .lines()
        .rev()
        .find(|l| l.contains(" tests, "))
        .unwrap_or_default()
        .to_string();
    assert!(
        summary.starts_with("147 tests"),
        "the whole suite ran: {summary}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    junit_failures(&text)
}

/// The cases a JUnit report marks failed or in error, as `package/classname`.
fn junit_failures(report: &str) -> Vec<String> {
    let mut failed = Vec::new();
    for case in report.split("<testcase ").skip(1) {
        let body = case.split("</testcase>").next().unwrap_or(case);
        if !(body.contains("<failure") || body.contains("<error")) {
            continue;
        }
        let attr = |name: &str| {
            body.split(&format!("{name}=\""))
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or("?")
                .to_string()
        };
        failed.push(format!("{}/{}", attr("package"), attr("classname")));
    }
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2spec_passes_on_the_tls_listener_and_the_shared_plaintext_port() {
    let h2spec = h2spec();
    assert!(h2spec.exists());
    let upstream = backend::start("stable", Behaviour::default()).await;
    let pki = TestPki::new();
    let dir = common::temp_dir("h2spec-weir");
    let (_ca, cert, key) = pki.write(&dir);
    let route = format!(
        "routes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n",
        upstream.addr
    );
    let tls_config = dir.join("tls.yaml");
    std::fs::write(
        &tls_config,
        format!(
            "listeners: [{{address: \"127.0.0.1:0\", tls: {{cert: \"{}\", key: \"{}\"}}}}]\n\
             admin: {{address: \"127.0.0.1:0\"}}\n{route}",
            cert.display(),
            key.display()
        ),
    )
    .unwrap();
    let tls = Weir::start_with(dir.clone(), tls_config, &[]).keep_dir();
    let plain = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n{route}"
    ));

    let (tls_port, plain_port) = (tls.addr.port(), plain.addr.port());
    let (over_tls, over_h2c) = tokio::task::spawn_blocking(move || {
        (failures(tls_port, true), failures(plain_port, false))
    })
    .await
    .unwrap();
    assert_eq!(over_tls, Vec::<String>::new(), "h2spec over TLS (ALPN h2)");
    assert_eq!(
        over_h2c,
        ["http2/3.5/Sends invalid connection preface"],
        "h2spec over h2c on the shared port: only the case a shared port answers as HTTP/1"
    );
    drop(tls);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_report_reader_finds_failures_and_errors() {
    let report = r#"<testsuites><testsuite name="x">
<testcase package="http2/5.1" classname="ok case" time="0.1"></testcase>
<testcase package="http2/5.1" classname="failed case" time="0.1"><failure>x</failure></testcase>
<testcase package="http2/6.1" classname="errored case" time="0.1"><error>y</error></testcase>
</testsuite></testsuites>"#;
    assert_eq!(
        junit_failures(report),
        ["http2/5.1/failed case", "http2/6.1/errored case"]
    );
}
