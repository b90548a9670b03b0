//! Checks over many requests: where mirrored copies land (from the echo servers' logs, as the
//! suite reads the echo pods' logs) and how requests spread over weighted backends.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::roundtrip::{self, Expected, GwAddr};
use super::Suite;

const MIRROR_WAIT: Duration = Duration::from_secs(30);

/// Requests for `path` the pods of `deployment` have logged.
fn logged(suite: &Suite, deployment: &str, path: &str) -> usize {
    suite
        .pods_of(deployment)
        .map(|p| {
            p.echo
                .log
                .lock()
                .unwrap()
                .iter()
                .filter(|t| *t == path)
                .count()
        })
        .sum()
}

/// `ExpectMirroredRequest`: each mirror backend (without a percentage) logs the request.
pub async fn expect_mirrored(suite: &Suite, case: &Expected) {
    for (deployment, _namespace, percent) in &case.mirrored_to {
        if percent.is_some() {
            continue;
        }
        let start = Instant::now();
        while logged(suite, deployment, &case.request.path) == 0 {
            assert!(
                start.elapsed() < MIRROR_WAIT,
                "no mirrored copy of {} reached {deployment} within {MIRROR_WAIT:?}",
                case.request.path
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// `total` requests, `concurrency` at a time, each `eventually` consistent with `successes`.
async fn send_many(
    gw: &GwAddr,
    case: &Expected,
    total: usize,
    concurrency: usize,
    successes: usize,
) {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..total {
        if tasks.len() >= concurrency {
            tasks.join_next().await.unwrap().unwrap();
        }
        let (gw, case) = (gw.clone(), case.clone());
        tasks.spawn(async move { roundtrip::eventually(&gw, &case, successes).await });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

/// The percentage-mirror test's distribution check (constants from its Go file: 500
/// requests, 10 at a time, each with one success required, within 3 standard deviations of
/// the binomial count, up to 5 rounds with a fresh request id).
pub async fn expect_mirror_percentages(suite: &Arc<Suite>, gw: &GwAddr, case: &Expected) {
    const TOTAL: f64 = 500.0;
    for round in 0..5 {
        let case = case
            .clone()
            .with_request_id(&format!("pct-{round}-{}", std::process::id()));
        send_many(gw, &case, TOTAL as usize, 10, 1).await;
        // The copies go out as the answers do; give the last of them a moment to land.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut errors = Vec::new();
        for (deployment, _, percent) in &case.mirrored_to {
            let p = f64::from(percent.expect("a percentage")) / 100.0;
            let margin = 3.0 * (TOTAL * p * (1.0 - p)).sqrt();
            let actual = logged(suite, deployment, &case.request.path) as f64;
            if (actual - TOTAL * p).abs() > margin {
                errors.push(format!(
                    "{deployment}: {actual} mirrored of {TOTAL}, want {} ± {margin:.1}",
                    TOTAL * p
                ));
            }
        }
        if errors.is_empty() {
            return;
        }
        eprintln!("mirror distribution round {round}: {errors:?}");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    panic!(
        "percentage based mirror distribution failed 5 times\n{}",
        suite.logs()
    );
}

/// The backend a pod belongs to: its name without the ReplicaSet hash and pod suffix.
fn backend_of(pod: &str) -> String {
    let parts: Vec<&str> = pod.split('-').collect();
    parts[..parts.len().saturating_sub(2)].join("-")
}

/// The weight test's `TestWeightedDistribution`, retried as `MaxTestRetries` allows. The
/// suite's weight package is not among the fixtures; as this harness knows it: 500 requests,
/// 10 at a time, each backend's share within 5 points of its weight, none for weight 0, none
/// to a backend not listed, 3 attempts.
pub async fn expect_weighted(gw: &GwAddr, case: &Expected, weights: &[(&str, f64)]) {
    const TOTAL: usize = 500;
    let mut last = String::new();
    for attempt in 0..3 {
        let mut tasks = tokio::task::JoinSet::new();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for i in 0..TOTAL {
            if tasks.len() >= 10 {
                let pod: Result<String, String> = tasks.join_next().await.unwrap().unwrap();
                *seen
                    .entry(pod.map(|p| backend_of(&p)).unwrap_or_else(|e| e))
                    .or_default() += 1;
            }
            // AddEntropy: a random header on each request.
            let case = case.clone().header("X-Jitter", &format!("{attempt}-{i}"));
            let gw = gw.clone();
            tasks.spawn(async move {
                let (c, r) = roundtrip::capture(gw, &case).await?;
                roundtrip::compare(&case, &c, &r)?;
                Ok(c.pod)
            });
        }
        while let Some(done) = tasks.join_next().await {
            let pod = done.unwrap();
            *seen
                .entry(pod.map(|p| backend_of(&p)).unwrap_or_else(|e| e))
                .or_default() += 1;
        }
        let mut errors = Vec::new();
        for (name, count) in &seen {
            match weights.iter().find(|(b, _)| b == name) {
                None => errors.push(format!("{count} answers from unexpected {name:?}")),
                Some((_, w)) if *w == 0.0 && *count > 0 => {
                    errors.push(format!("{count} requests to weight-0 {name}"))
                }
                _ => {}
            }
        }
        for (name, w) in weights {
            let share = seen.get(*name).copied().unwrap_or(0) as f64 / TOTAL as f64;
            if (share - w).abs() > 0.05 {
                errors.push(format!("{name}: share {share:.3}, weight {w}"));
            }
        }
        if errors.is_empty() {
            return;
        }
        last = format!("{errors:?} (seen {seen:?})");
        eprintln!("weighted distribution attempt {attempt}: {last}");
    }
    panic!("weighted distribution tests failed: {last}");
}
