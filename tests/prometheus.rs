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

fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn start_prometheus(target: SocketAddr) -> Prometheus {
    start_prometheus_at(free_port(), target, None)
}

/// A real Prometheus scraping `target` every second, evaluating `rules` (if any) every second.
fn start_prometheus_at(addr: SocketAddr, target: SocketAddr, rules: Option<&str>) -> Prometheus {
    let dir = common::temp_dir("prometheus");
    let config = dir.join("prometheus.yml");
    let mut yaml = format!(
        "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
         scrape_configs:\n- job_name: weir\n  static_configs: [{{targets: [\"{target}\"]}}]\n"
    );
    if let Some(rules) = rules {
        std::fs::write(dir.join("rules.yaml"), rules).unwrap();
        yaml.push_str(&format!(
            "rule_files: [\"{}\"]\n",
            dir.join("rules.yaml").display()
        ));
    }
    std::fs::write(&config, yaml).unwrap();
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

#[test]
fn the_recording_rules_in_deploy_pass_promtool_check_rules() {
    let rules = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/prometheus/weir-rules.yaml"
    );
    let out = Command::new(tool("promtool"))
        .args(["check", "rules", rules])
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && report.contains("SUCCESS: 12 rules found"),
        "{report}"
    );
}

/// weir runs a Rollout whose analysis step uses deploy/'s `weir-canary-slo` AnalysisTemplate,
/// unchanged, against a real Prometheus evaluating deploy/'s recording rules.
async fn rollout_judged_by_prometheus(canary_error_every: u64) -> serde_json::Value {
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;
    let stable = backend::start("stable", Behaviour::default()).await;
    let knob = Arc::new(AtomicU64::new(canary_error_every));
    let canary = backend::start(
        "canary",
        Behaviour {
            error_every: Some(knob),
            ..Default::default()
        },
    )
    .await;

    let (prom_addr, admin) = (free_port(), free_port());
    // The rules as shipped, evaluated every second instead of every 15 s so the test is quick.
    let rules = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/prometheus/weir-rules.yaml"
    ))
    .unwrap()
    .replace("interval: 15s", "interval: 1s");
    let prom = start_prometheus_at(prom_addr, admin, Some(&rules));
    let deadline = Instant::now() + Duration::from_secs(30);
    while H1::try_connect(prom.addr).await.is_err() {
        assert!(Instant::now() < deadline, "Prometheus did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let dir = common::temp_dir("prom-rollout");
    let templates = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/analysis/weir-analysis-templates.yaml"
    ))
    .unwrap();
    std::fs::write(dir.join("templates.yaml"), templates).unwrap();
    std::fs::write(
        dir.join("rollout.yaml"),
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {{name: shop}}\nspec:\n  strategy:\n    canary:\n      steps:\n\
             \x20     - setWeight: 50\n\
             \x20     - analysis:\n          templates: [{{templateName: weir-canary-slo}}]\n          args:\n\
             \x20         - {{name: route, value: web}}\n\
             \x20         - {{name: prometheus-address, value: \"http://{prom_addr}\"}}\n\
             \x20         - {{name: initial-delay, value: 5s}}\n\
             \x20         - {{name: interval, value: 2s}}\n\
             \x20         - {{name: count, value: \"4\"}}\n\
             \x20     - setWeight: 100\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("weir.yaml"),
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"{admin}\"}}\n\
             routes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n  canary: {{addresses: [\"{}\"]}}\n\
             rollout:\n  manifests: [rollout.yaml, templates.yaml]\n  route: web\n",
            stable.addr, canary.addr
        ),
    )
    .unwrap();
    let weir = Weir::start_with(dir.clone(), dir.join("weir.yaml"), &[]);
    let load = common::load::Load::start(weir.addr, 200, Duration::from_secs(60));
    let s = weir
        .wait_rollout(Duration::from_secs(45), |s| {
            matches!(s["phase"].as_str(), Some("Healthy" | "Degraded"))
        })
        .await;
    load.stop().await;
    drop(prom);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_analysis_from_deploy_aborts_a_bad_canary() {
    // 10 % of the canary's answers are 500.
    let s = rollout_judged_by_prometheus(10).await;
    assert_eq!(s["phase"], "Degraded", "{s:#}");
    assert_eq!(s["weights"]["canary"], 0.0);
    let message = s["message"].as_str().unwrap();
    assert!(
        message.contains("success-rate") || message.contains("burn-rate"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_analysis_from_deploy_promotes_a_good_canary() {
    let s = rollout_judged_by_prometheus(0).await;
    assert_eq!(s["phase"], "Healthy", "{s:#}");
    assert_eq!(s["promoted"], true);
}
