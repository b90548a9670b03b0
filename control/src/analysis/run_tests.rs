//! Runs end to end over the built-in provider, on tokio's paused clock.

use std::path::PathBuf;

use tokio::time::Instant;
use weir_proxy::stats::{LiveStats, Outcome, Role};

use super::*;
use crate::analysis::metric::tests::{comparison, metric};
use crate::argo::model::{Metric, Origin, Provider, TemplateArg, Templated};

fn t(s: &str) -> Templated {
    Templated(s.to_string())
}

fn template(name: &str, args: Vec<TemplateArg>, metrics: Vec<Metric>) -> AnalysisTemplate {
    AnalysisTemplate {
        origin: Origin {
            file: PathBuf::from("analysis.yaml"),
            kind: "AnalysisTemplate".into(),
            name: name.into(),
        },
        name: name.into(),
        cluster_scope: false,
        args,
        metrics,
    }
}

/// Route `web`: the canary answers 4 × 503 in 100, the stable backend never fails.
fn ctx() -> Arc<ProviderContext> {
    let live = Arc::new(LiveStats::new());
    let canary = live.window("web", Role::Canary);
    let stable = live.window("web", Role::Stable);
    for i in 0..100 {
        let status = if i < 4 { 503 } else { 200 };
        canary.record(&Outcome::response(status, Duration::from_millis(20)));
        stable.record(&Outcome::response(200, Duration::from_millis(20)));
    }
    Arc::new(ProviderContext::new(live))
}

fn start(templates: Vec<AnalysisTemplate>, args: &[(&str, &str)]) -> AnalysisRun {
    let args = args
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    AnalysisRun::start("canary-1".into(), templates, args, ctx()).unwrap()
}

fn every(mut m: Metric, interval: &str, count: Option<&str>) -> Metric {
    m.interval = Some(t(interval));
    m.count = count.map(t);
    m
}

fn on_route(mut m: Metric, route: &str) -> Metric {
    if let Provider::Builtin(b) = &mut m.provider {
        b.route = t(route);
    }
    m
}

/// Needs the real condition language (`expr`).
#[tokio::test(start_paused = true)]
async fn failing_metric_aborts_the_run_at_its_first_measurement() {
    let mut rate = every(metric("success-rate"), "10s", Some("10"));
    rate.success_condition = Some("result >= 0.99".into());
    let background = every(metric("background"), "1m", None);
    let began = Instant::now();
    let run = start(vec![template("t", vec![], vec![background, rate])], &[]);
    let status = run.finished().await;
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(status.phase, Phase::Failed, "{status:#?}");
    assert_eq!(
        status.message,
        "metric \"success-rate\" failed: measurement 0.96 did not meet result >= 0.99 (failed 1 > failureLimit 0)"
    );
    let rate = &status.metrics[1];
    assert_eq!(
        (rate.phase, rate.counts.failed, rate.measurements.len()),
        (Phase::Failed, 1, 1)
    );
    assert_eq!(rate.measurements[0].value.as_deref(), Some("0.96"));
    // The other metric was stopped, not finished.
    assert_eq!(status.metrics[0].phase, Phase::Running);
}

/// Needs the real condition language (`expr`).
#[tokio::test(start_paused = true)]
async fn dry_run_metric_is_reported_but_does_not_decide() {
    let mut strict = metric("strict");
    strict.success_condition = Some("result >= 0.999".into());
    strict.dry_run = true;
    let mut stable = on_route(metric("stable"), "web");
    if let Provider::Builtin(b) = &mut stable.provider {
        b.backend = Role::Stable;
    }
    stable.success_condition = Some("result >= 0.99".into());
    let status = start(vec![template("t", vec![], vec![strict, stable])], &[])
        .finished()
        .await;
    assert_eq!(status.phase, Phase::Successful, "{status:#?}");
    assert_eq!(status.metrics[0].phase, Phase::Failed);
    assert!(status.metrics[0].dry_run);
    assert!(status.metrics[0]
        .message
        .contains("did not meet result >= 0.999"));
}

#[tokio::test(start_paused = true)]
async fn dry_run_error_does_not_decide() {
    let mut broken = on_route(metric("broken"), "nowhere");
    broken.dry_run = true;
    broken.consecutive_error_limit = t("0");
    let status = start(
        vec![template("t", vec![], vec![broken, metric("plain")])],
        &[],
    )
    .finished()
    .await;
    assert_eq!(status.phase, Phase::Successful, "{status:#?}");
    assert_eq!(status.metrics[0].phase, Phase::Error);
}

#[tokio::test(start_paused = true)]
async fn args_fill_route_count_and_interval() {
    let args = vec![
        TemplateArg {
            name: "route".into(),
            value: None,
            secret: None,
        },
        TemplateArg {
            name: "n".into(),
            value: Some("3".into()),
            secret: None,
        },
        TemplateArg {
            name: "every".into(),
            value: Some("5s".into()),
            secret: None,
        },
    ];
    let m = on_route(
        every(metric("rate"), "{{args.every}}", Some("{{ args.n }}")),
        "{{args.route}}",
    );
    let began = Instant::now();
    let run = start(
        vec![template("t", args, vec![m])],
        &[("route", "web"), ("n", "4")],
    );
    let status = run.finished().await;
    assert_eq!(status.phase, Phase::Successful, "{status:#?}");
    assert_eq!(status.metrics[0].counts.count, 4);
    // Measurements at 0, 5, 10 and 15 s.
    let elapsed = began.elapsed();
    assert!(
        elapsed >= Duration::from_secs(15) && elapsed < Duration::from_secs(16),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn missing_required_arg_is_an_error_naming_it() {
    let args = vec![TemplateArg {
        name: "service-name".into(),
        value: None,
        secret: None,
    }];
    let err = AnalysisRun::start(
        "r".into(),
        vec![template("success-rate", args, vec![metric("m")])],
        HashMap::new(),
        ctx(),
    )
    .err()
    .unwrap();
    assert_eq!(
        err,
        "argument \"service-name\" required by AnalysisTemplate \"success-rate\" has no value"
    );
}

#[tokio::test]
async fn templates_merge_and_refuse_duplicate_metrics() {
    let a = template("a", vec![], vec![metric("m1")]);
    let b = template("b", vec![], vec![metric("m2")]);
    let run = AnalysisRun::start("r".into(), vec![a.clone(), b], HashMap::new(), ctx()).unwrap();
    assert_eq!(run.finished().await.metrics.len(), 2);
    let err = AnalysisRun::start("r".into(), vec![a.clone(), a], HashMap::new(), ctx())
        .err()
        .unwrap();
    assert!(err.contains("metric \"m1\" is defined by both"), "{err}");
}

#[tokio::test]
async fn bad_value_starts_the_run_in_error() {
    let mut m = metric("rate");
    m.count = Some(t("{{args.missing}}"));
    let run = start(vec![template("t", vec![], vec![m])], &[]);
    let status = run.status();
    assert_eq!(status.phase, Phase::Error);
    assert!(
        status
            .message
            .starts_with("metric \"rate\": count: unknown argument \"missing\""),
        "{}",
        status.message
    );
    assert_eq!(run.finished().await.phase, Phase::Error);
}

#[tokio::test(start_paused = true)]
async fn consecutive_errors_end_the_run_in_error() {
    let mut m = every(on_route(metric("rate"), "api"), "1m", None);
    m.consecutive_error_limit = t("2");
    let began = Instant::now();
    let status = start(vec![template("t", vec![], vec![m])], &[])
        .finished()
        .await;
    assert_eq!(status.phase, Phase::Error, "{status:#?}");
    assert!(
        status
            .message
            .starts_with("metric \"rate\" error: weir/live: no canary window for route \"api\""),
        "{}",
        status.message
    );
    assert!(
        status
            .message
            .ends_with("(consecutive errors 3 > consecutiveErrorLimit 2)"),
        "{}",
        status.message
    );
    assert_eq!(status.metrics[0].counts.error, 3);
    assert_eq!(status.metrics[0].counts.count, 0);
    // Errors are retried after 10 s, not after the 1 m interval.
    assert!(
        began.elapsed() < Duration::from_secs(21),
        "{:?}",
        began.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn too_few_requests_is_inconclusive() {
    let mut m = metric("rate");
    if let Provider::Builtin(b) = &mut m.provider {
        b.min_requests = 1000;
    }
    let status = start(vec![template("t", vec![], vec![m])], &[])
        .finished()
        .await;
    assert_eq!(status.phase, Phase::Inconclusive, "{status:#?}");
    assert_eq!(
        status.message,
        "metric \"rate\" inconclusive: 100 requests in the last 30s, fewer than minRequests 1000 (inconclusive 1 > inconclusiveLimit 0)"
    );
}

#[tokio::test(start_paused = true)]
async fn terminate_ends_background_analysis_successfully() {
    let m = every(metric("rate"), "10s", None);
    let run = start(vec![template("t", vec![], vec![m])], &[]);
    tokio::time::sleep(Duration::from_secs(35)).await;
    assert_eq!(run.status().phase, Phase::Running);
    run.terminate();
    let status = run.finished().await;
    assert_eq!(
        (status.phase, status.message.as_str()),
        (Phase::Successful, "run terminated")
    );
    assert_eq!(status.metrics[0].counts.count, 4);
    assert!(status.finished_at.is_some());
}

#[tokio::test(start_paused = true)]
async fn initial_delay_comes_first() {
    let mut m = metric("rate");
    m.initial_delay = Some(t("2m"));
    let run = start(vec![template("t", vec![], vec![m])], &[]);
    tokio::time::sleep(Duration::from_secs(119)).await;
    assert_eq!(run.status().metrics[0].phase, Phase::Pending);
    let status = run.finished().await;
    assert_eq!(status.phase, Phase::Successful);
}

#[tokio::test(start_paused = true)]
async fn history_keeps_the_last_ten_and_serializes() {
    let m = every(metric("rate"), "1s", Some("12"));
    let status = start(vec![template("t", vec![], vec![m])], &[])
        .finished()
        .await;
    assert_eq!(status.metrics[0].measurements.len(), 10);
    assert_eq!(status.metrics[0].counts.successful, 12);
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["phase"], "Successful");
    assert_eq!(json["metrics"][0]["consecutiveError"], 0);
    assert_eq!(json["metrics"][0]["dryRun"], false);
    assert_eq!(json["metrics"][0]["measurements"][0]["value"], "0.96");
}

/// Records into `web`'s windows from another thread, 20 canary and 80 stable requests every
/// 10 ms, until the returned flag is set (bounded: at most 30 s).
fn traffic(
    live: &Arc<LiveStats>,
    canary_status: u16,
) -> (
    Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<()>,
) {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (canary, stable) = (
        live.window("web", Role::Canary),
        live.window("web", Role::Stable),
    );
    let flag = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let began = std::time::Instant::now();
        while !flag.load(std::sync::atomic::Ordering::Relaxed)
            && began.elapsed() < Duration::from_secs(30)
        {
            for _ in 0..2 {
                canary.record(&Outcome::response(canary_status, Duration::from_millis(2)));
            }
            for _ in 0..8 {
                stable.record(&Outcome::response(200, Duration::from_millis(2)));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    (stop, thread)
}

/// A run of one comparison over `live`'s windows, on real seconds (the windows' clock).
fn start_comparison(live: &Arc<LiveStats>, metric: Metric) -> AnalysisRun {
    let ctx = Arc::new(ProviderContext::new(Arc::clone(live)));
    let templates = vec![template("t", vec![], vec![metric])];
    AnalysisRun::start("compare".into(), templates, HashMap::new(), ctx).unwrap()
}

#[tokio::test]
async fn a_comparison_fails_a_canary_in_an_outage_and_says_why() {
    let live = Arc::new(LiveStats::new());
    let (stop, thread) = traffic(&live, 503);
    let run = start_comparison(&live, comparison("errors", false));
    let status = tokio::time::timeout(Duration::from_secs(20), run.finished()).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = thread.join();
    let status = status.unwrap_or_else(|_| panic!("undecided: {:#?}", run.status()));
    assert_eq!(status.phase, Phase::Failed, "{status:#?}");
    // Judged by its verdict (no conditions given), with the figures in the message. Every
    // canary request failed; the window's second still being written can be read between a
    // request's count and its failure's (seen once on a loaded CI machine: 436 of 438), so the
    // share is checked to within that, not to the last request.
    let canary_share: f64 = status
        .message
        .split("canary ")
        .filter_map(|rest| rest.split(" % errors").next()?.parse().ok())
        .next()
        .unwrap_or_else(|| panic!("no canary share in {:?}", status.message));
    assert!(
        status.message.contains("the canary is worse: canary "),
        "{}",
        status.message
    );
    assert!(
        canary_share >= 99.0 && status.message.contains("vs stable 0.00 %"),
        "{}",
        status.message
    );
    let evidence = status.metrics[0].evidence.clone();
    let evidence = evidence.unwrap_or_else(|| panic!("no evidence: {status:#?}"));
    assert_eq!(evidence.verdict, crate::analysis::judge::Verdict::Failed);
    assert_eq!(evidence.toward_failed, 1.0);
    assert!(evidence.stable.requests > 0 && evidence.stable.events == 0);
    assert!(evidence.canary.events * 100 >= evidence.canary.requests * 99);
}

#[tokio::test]
async fn a_running_comparison_shows_its_evidence() {
    let live = Arc::new(LiveStats::new());
    let (stop, thread) = traffic(&live, 200);
    let run = start_comparison(&live, comparison("latency", true));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let status = run.status();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = thread.join();
    assert_eq!(status.phase, Phase::Running, "{status:#?}");
    let metric = &status.metrics[0];
    // Listed as Argo lists a measurement in progress: Running, begun, not finished, no value
    // yet; its message is the evidence in words.
    assert_eq!(metric.phase, Phase::Running, "{metric:#?}");
    assert_eq!(metric.measurements.len(), 1, "{metric:#?}");
    let running = &metric.measurements[0];
    assert_eq!(running.phase, Phase::Running, "{running:#?}");
    assert_eq!(
        (running.value.as_deref(), running.finished_at),
        (None, None)
    );
    assert!(running.started_at >= status.started_at, "{running:#?}");
    assert!(
        running.message.starts_with("canary ") && running.message.contains(" s against stable "),
        "{running:#?}"
    );
    let evidence = metric
        .evidence
        .clone()
        .unwrap_or_else(|| panic!("{metric:#?}"));
    assert_eq!(evidence.signal, "latency");
    assert!(evidence.seconds >= 1, "{evidence:?}");
    // Either still measuring the stable for its bar, or judging against it.
    assert!(
        evidence.waiting.is_some() || evidence.threshold_seconds.is_some(),
        "{evidence:?}"
    );
    run.terminate();
    let status = run.status();
    assert_eq!(status.phase, Phase::Successful);
    // Terminated, the measurement in progress ends with the metric.
    let ended = &status.metrics[0].measurements[0];
    assert_eq!(ended.phase, Phase::Successful, "{ended:#?}");
    assert!(ended.finished_at.is_some(), "{ended:#?}");
}
