//! How fast a regressed canary is taken out: time from the regression to canary weight 0, and
//! the failed responses the canary served meanwhile, at 1,000 requests/s with the canary at 20 %.
//! The shipped weir-compare template (canary against stable), the built-in provider's fixed
//! threshold (live windows), and the prometheus provider (a real Prometheus scraping every
//! second, when installed). These end-to-end runs check the verdict simulation
//! (benches/verdicts.rs) against real sockets. Reports; asserts nothing.
//! Run: cargo bench --bench abort_time

#[path = "../tests/common/backend.rs"]
#[allow(dead_code)]
mod backend;
#[path = "../tests/common/client.rs"]
#[allow(dead_code)]
mod client;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_control::analysis::ProviderContext;
use weir_control::rollout::{Plan, RolloutSettings};
use weir_proxy::listen::spec::LimitsSpec;
use weir_proxy::listen::{bind, serve, ConnectionLimit, Shutdown};
use weir_proxy::stats::Role;
use weir_proxy::table::spec::{BackendSpec, RouteSpec, TableSpec};
use weir_proxy::DataPlane;

const TRIALS: usize = 5;
const RATE: u64 = 1000;

fn rollout(template: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {{name: bench}}\nspec:\n  strategy:\n    canary:\n\
         \x20     analysis: {{templates: [{{templateName: fuse}}]}}\n      steps: [{{setWeight: 20}}, {{pause: {{}}}}]\n---\n{template}"
    )
}

/// The shipped templates; the Rollout's background analysis is weir-compare on route `web`.
fn compare_rollout() -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {{name: bench}}\nspec:\n  strategy:\n    canary:\n\
         \x20     analysis: {{templates: [{{templateName: weir-compare}}], args: [{{name: route, value: web}}]}}\n      steps: [{{setWeight: 20}}, {{pause: {{}}}}]\n---\n{}",
        include_str!("../deploy/analysis/weir-analysis-templates.yaml")
    )
}

const LIVE: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: fuse}
spec:
  metrics:
  - name: error-rate
    initialDelay: 3s
    interval: 250ms
    inconclusiveLimit: 100
    failureCondition: result > 0.01
    provider:
      plugin:
        weir/live: {route: web, backend: canary, metric: error-rate, window: 3s, minRequests: 100}
"#;

fn prometheus_template(addr: SocketAddr) -> String {
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {{name: fuse}}
spec:
  metrics:
  - name: error-rate
    initialDelay: 3s
    interval: 1s
    inconclusiveLimit: 100
    consecutiveErrorLimit: 100
    successCondition: len(result) > 0 && result[0] <= 0.01
    failureCondition: len(result) > 0 && result[0] > 0.01
    provider:
      prometheus:
        address: http://{addr}
        query: sum(rate(weir_requests_total{{route="web",backend="canary",class="5xx"}}[5s])) / sum(rate(weir_requests_total{{route="web",backend="canary"}}[5s]))
"#
    )
}

struct Trial {
    to_zero: Duration,
    failed: f64,
}

fn canary_failures(plane: &DataPlane) -> f64 {
    plane
        .metrics
        .encode(weir_proxy::stats::Format::Classic)
        .lines()
        .filter(|l| {
            l.starts_with("weir_requests_total{")
                && l.contains("backend=\"canary\"")
                && l.contains("class=\"5xx\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// `every`: after the regression the canary answers every `every`th request 500 (the stable
/// every 1000th, 0.1 %, throughout).
async fn trial(manifests: &str, admin: Option<SocketAddr>, every: u64) -> Option<Trial> {
    let stable = backend::start(
        "stable",
        backend::Behaviour {
            error_every: Some(Arc::new(AtomicU64::new(1000))),
            ..Default::default()
        },
    )
    .await;
    let knob = Arc::new(AtomicU64::new(1000));
    let canary = backend::start(
        "canary",
        backend::Behaviour {
            error_every: Some(knob.clone()),
            ..Default::default()
        },
    )
    .await;
    let mut web = RouteSpec::new("web", BackendSpec::new([stable.addr.to_string()]));
    web.set_canary(Some(BackendSpec::new([canary.addr.to_string()])));
    let base = TableSpec { routes: vec![web] };

    let plane = DataPlane::new();
    let m = weir_control::argo::load_str(manifests, Path::new("bench.yaml")).ok()?;
    let plan = Plan::new(m.rollouts[0].clone(), m.templates.clone());
    let settings = RolloutSettings {
        route: "web".into(),
        state_file: None,
        abort_ramp: None,
        notifier: Default::default(),
    };
    let ctx = Arc::new(ProviderContext::new(plane.live.clone()));
    let handle = weir_control::rollout::start(
        plan,
        settings,
        weir_control::rollout::Applier::new(plane.clone(), base),
        plane.clone(),
        ctx,
    )
    .ok()?;
    let listener = bind("127.0.0.1:0".parse().ok()?).await.ok()?;
    let addr = listener.local_addr().ok()?;
    let (stop, shutdown) = Shutdown::new();
    tokio::spawn(serve(
        listener,
        "bench".into(),
        None,
        plane.proxy.clone(),
        LimitsSpec::default(),
        ConnectionLimit::new(1000),
        shutdown.clone(),
    ));
    if let Some(admin) = admin {
        let l = bind(admin).await.ok()?;
        tokio::spawn(weir_proxy::admin::serve_admin(
            l,
            plane.clone(),
            None,
            shutdown,
        ));
    }

    // Load: 4 keep-alive clients at RATE in total, for at most 60 s.
    let running = Arc::new(AtomicBool::new(true));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let running = running.clone();
            tokio::spawn(async move {
                let mut c = client::H1::connect(addr).await;
                let mut tick = tokio::time::interval(Duration::from_secs(1) * 4 / RATE as u32);
                let deadline = Instant::now() + Duration::from_secs(60);
                while running.load(Ordering::Relaxed) && Instant::now() < deadline {
                    tick.tick().await;
                    if c.try_send(
                        http::Request::get("/")
                            .header("host", "b")
                            .body(Default::default())
                            .unwrap(),
                    )
                    .await
                    .is_err()
                    {
                        c = client::H1::connect(addr).await;
                    }
                }
            })
        })
        .collect();

    // Healthy for 8 s (the analysis is warm), then the regression.
    tokio::time::sleep(Duration::from_secs(8)).await;
    if handle.status().phase != weir_control::rollout::Phase::Paused {
        eprintln!(
            "false abort before the regression: {}",
            handle.status().message
        );
        running.store(false, Ordering::Relaxed);
        return None;
    }
    let failed_before = canary_failures(&plane);
    knob.store(every, Ordering::SeqCst);
    let t0 = Instant::now();
    let to_zero = loop {
        let table = plane.table.load();
        if table
            .route("web")
            .is_some_and(|r| r.canary_weight_bp() == 0)
        {
            break t0.elapsed();
        }
        if t0.elapsed() > Duration::from_secs(30) {
            running.store(false, Ordering::Relaxed);
            return None;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let failed = canary_failures(&plane) - failed_before;
    running.store(false, Ordering::Relaxed);
    for c in clients {
        let _ = c.await;
    }
    let _ = stop.send(true);
    let _ = plane
        .live
        .snapshot("web", Role::Canary, Duration::from_secs(1));
    Some(Trial { to_zero, failed })
}

fn report(name: &str, mut trials: Vec<Trial>) {
    if trials.is_empty() {
        println!("| {name} | no successful trial | | |");
        return;
    }
    trials.sort_by_key(|t| t.to_zero);
    let median = &trials[trials.len() / 2];
    let mut failures: Vec<f64> = trials.iter().map(|t| t.failed).collect();
    failures.sort_by(|a, b| a.total_cmp(b));
    println!(
        "| {name} | {} | {:.2} s | {:.2} s … {:.2} s | {:.0} | {:.0} … {:.0} |",
        trials.len(),
        median.to_zero.as_secs_f64(),
        trials[0].to_zero.as_secs_f64(),
        trials[trials.len() - 1].to_zero.as_secs_f64(),
        failures[failures.len() / 2],
        failures[0],
        failures[failures.len() - 1]
    );
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this too, with no args: be quick.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("| provider | trials | regression → weight 0 (median) | min … max | failed canary responses (median) | min … max |");
    println!("|---|---|---|---|---|---|");
    for (every, what) in [(20, "0.1 → 5 % 5xx"), (50, "0.1 → 2 % 5xx")] {
        let mut compare = Vec::new();
        for _ in 0..TRIALS {
            if let Some(t) = rt.block_on(trial(&compare_rollout(), None, every)) {
                compare.push(t);
            }
        }
        report(&format!("weir-compare (canary vs stable), {what}"), compare);
    }
    let mut live = Vec::new();
    for _ in 0..TRIALS {
        if let Some(t) = rt.block_on(trial(&rollout(LIVE), None, 20)) {
            live.push(t);
        }
    }
    report(
        "built-in threshold (weir/live, 250 ms interval, 3 s window), 0.1 → 5 % 5xx",
        live,
    );

    let prometheus = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let Some(prometheus) = prometheus else {
        println!(
            "| prometheus | skipped: no prometheus binary (tests/run.sh installs it) | | | | |"
        );
        return;
    };
    let mut prom = Vec::new();
    for _ in 0..TRIALS {
        let free = || std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr());
        let (Ok(prom_addr), Ok(admin)) = (free(), free()) else {
            continue;
        };
        let dir = std::env::temp_dir().join(format!(
            "weir-bench-prom-{}-{}",
            std::process::id(),
            prom_addr.port()
        ));
        let _ = std::fs::create_dir_all(&dir);
        let config = format!("global: {{scrape_interval: 1s}}\nscrape_configs:\n- job_name: weir\n  static_configs: [{{targets: [\"{admin}\"]}}]\n");
        let _ = std::fs::write(dir.join("p.yml"), config);
        let child = Command::new(prometheus)
            .arg(format!("--config.file={}", dir.join("p.yml").display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = child else { continue };
        std::thread::sleep(Duration::from_secs(2));
        if let Some(t) = rt.block_on(trial(
            &rollout(&prometheus_template(prom_addr)),
            Some(admin),
            20,
        )) {
            prom.push(t);
        }
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(
        "prometheus (1 s scrape, 1 s interval, rate over 5 s), 0.1 → 5 % 5xx",
        prom,
    );
}
