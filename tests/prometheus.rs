//! weir's /metrics against the real tools: Debian's promtool reads it, a real Prometheus server
//! scrapes it and answers PromQL over it. tests/run.sh installs both (package `prometheus`).

mod common;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::backend::{self, Behaviour};
use common::client::H1;
use common::weir::Weir;

fn tool(name: &str) -> String {
    for dir in ["/usr/bin", "/usr/local/bin", "/bin"] {
        let path = format!("{dir}/{name}");
        if std::path::Path::new(&path).exists() {
            return path;
        }
    }
    panic!(
        "`{name}` is not installed: run tests/run.sh, which installs Debian's `prometheus` package"
    );
}

/// stable answers 200, canary answers 500; 30 requests at 50 %.
async fn weir_with_traffic() -> (Weir, backend::TestBackend, backend::TestBackend) {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start(
        "canary",
        Behaviour {
            status: Some(500),
            ..Default::default()
        },
    )
    .await;
    let weir = Weir::start(&format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n  canary: {{addresses: [\"{}\"]}}\n  canary_weight: 50\n\
         - name: dead\n  match: {{path_prefix: /dead}}\n  stable: {{addresses: [\"{}\"]}}\n",
        stable.addr,
        canary.addr,
        backend::dead_address().await
    ));
    let mut c = H1::connect(weir.addr).await;
    for _ in 0..30 {
        c.get("/", &[]).await;
    }
    c.get("/dead", &[]).await;
    (weir, stable, canary)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_pass_promtool_check_metrics() {
    let (weir, _s, _c) = weir_with_traffic().await;
    let text = weir.metrics().await;
    for family in [
        "weir_requests_total",
        "weir_request_duration_seconds_bucket",
        "weir_upstream_errors_total",
        "weir_canary_weight_ratio",
        "weir_table_swaps_total",
        "weir_config_reloads_total",
    ] {
        assert!(text.contains(family), "{family} missing from:\n{text}");
    }
    let mut child = Command::new(tool("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && report.trim().is_empty(),
        "promtool says:\n{report}\non:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openmetrics_is_served_to_scrapers_that_ask_for_it() {
    let (weir, _s, _c) = weir_with_traffic().await;
    let mut c = H1::connect(weir.admin).await;
    let om = c
        .get(
            "/metrics",
            &[(
                "accept",
                "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
            )],
        )
        .await;
    assert!(om.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text"));
    assert!(om.text().ends_with("# EOF\n"), "{}", om.text());
    let classic = c.get("/metrics", &[]).await;
    assert!(classic.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    assert!(!classic.text().contains("# EOF"));
    assert!(classic
        .text()
        .contains("# TYPE weir_requests_total counter"));
}

struct Prometheus {
    child: Child,
    addr: SocketAddr,
    dir: std::path::PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_prometheus(target: SocketAddr) -> Prometheus {
    let dir = common::temp_dir("prometheus");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             scrape_configs:\n- job_name: weir\n  static_configs: [{{targets: [\"{target}\"]}}]\n"
        ),
    )
    .unwrap();
    let child = Command::new(tool("prometheus"))
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Prometheus { child, addr, dir }
}

async fn query(prom: SocketAddr, promql: &str) -> Option<serde_json::Value> {
    let mut c = H1::try_connect(prom).await.ok()?;
    let mut q = String::new();
    for b in promql.bytes() {
        if b.is_ascii_alphanumeric() {
            q.push(b as char);
        } else {
            q.push_str(&format!("%{b:02X}"));
        }
    }
    let r = c
        .try_send(
            http::Request::get(format!("/api/v1/query?query={q}"))
                .header("host", "prom")
                .body(Default::default())
                .unwrap(),
        )
        .await
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
    let result = v["data"]["result"].as_array()?.first()?.clone();
    Some(result["value"][1].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_weir_and_answers_promql() {
    let (weir, stable, canary) = weir_with_traffic().await;
    let prom = start_prometheus(weir.admin);
    let deadline = Instant::now() + Duration::from_secs(60);
    let canary_total = loop {
        if let Some(v) = query(
            prom.addr,
            "sum(weir_requests_total{route=\"web\",backend=\"canary\"})",
        )
        .await
        {
            break v;
        }
        assert!(Instant::now() < deadline, "Prometheus never scraped weir");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        canary_total.as_str().unwrap().parse::<f64>().unwrap(),
        canary.hits() as f64
    );

    // The success-rate SLI an AnalysisTemplate runs: 5xx only count as failures.
    let success = query(
        prom.addr,
        "sum(weir_requests_total{route=\"web\",class!=\"5xx\"}) / sum(weir_requests_total{route=\"web\"})",
    )
    .await
    .expect("success-rate query answers");
    let expected = stable.hits() as f64 / (stable.hits() + canary.hits()) as f64;
    assert!((success.as_str().unwrap().parse::<f64>().unwrap() - expected).abs() < 1e-9);

    let p99 = query(
        prom.addr,
        "histogram_quantile(0.99, sum by (le) (weir_request_duration_seconds_bucket{route=\"web\"}))",
    )
    .await
    .expect("P99 query answers");
    let p99: f64 = p99.as_str().unwrap().parse().unwrap();
    assert!(p99 > 0.0 && p99 < 1.0, "P99 of loopback requests: {p99}");

    let weight = query(prom.addr, "weir_canary_weight_ratio{route=\"web\"}")
        .await
        .expect("weight gauge");
    assert_eq!(weight.as_str().unwrap(), "0.5");
}
