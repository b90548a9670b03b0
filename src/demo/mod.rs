//! `weir demo`: a whole canary on a built-in default. Two built-in backends (stable with about
//! 0.1 % 5xx; canary with a regression to about 2 % 5xx and a slower tail), a built-in load
//! generator, and the Rollout 20 % → pause → 50 % → pause → 80 % → pause → 100 % judged by the
//! built-in comparison of canary against stable (the shipped weir-compare template). It prints
//! a status line a second and ends Degraded with the reason — or, with `--healthy`, promoted.
//! With `--two`, two services side by side in one weir: `shop`, whose canary regressed, and
//! `cart`, whose canary is healthy — one aborted while the other is promoted. With `--dark`,
//! a dark step first: the canary judged on mirrored copies of the requests at weight 0 (the
//! shipped weir-shadow template), so a regressed canary is aborted before it has answered a
//! single user — and the demo counts what the canary answered to say so. Exit code: 0 all
//! promoted, 2 one aborted, 1 anything else.

mod backend;
mod load;
mod manifests;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use weir_control::rollout::{Phase, RolloutStatus};
use weir_proxy::stats::Role;

use crate::serve::start;
use backend::Behaviour;

#[derive(clap::Args)]
pub struct DemoArgs {
    /// A canary without the regression: the rollout is promoted.
    #[arg(long)]
    healthy: bool,
    /// Where the proxy listens (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where the admin endpoint listens (`weir status --admin ADDR` from another terminal).
    #[arg(long, default_value = "127.0.0.1:9901")]
    admin: SocketAddr,
    /// Requests per second from the built-in load generator (for each service).
    #[arg(long, default_value_t = 400)]
    rate: u32,
    /// Two services side by side, each with its own rollout: `shop` (its canary regressed) and
    /// `cart` (healthy).
    #[arg(long, conflicts_with = "healthy")]
    two: bool,
    /// A dark step first: the canary judged on mirrored copies of the requests at weight 0,
    /// before any user's request reaches it.
    #[arg(long, conflicts_with = "two")]
    dark: bool,
}

/// One service of the demo: its name (route, Rollout, Host) and whether its canary is healthy.
struct Service {
    name: &'static str,
    healthy: bool,
}

const STABLE: Behaviour = Behaviour {
    error_rate: 0.001,
    base_latency: Duration::from_millis(2),
    tail_rate: 0.002,
    tail_latency: Duration::from_millis(40),
};

const REGRESSED: Behaviour = Behaviour {
    error_rate: 0.02,
    base_latency: Duration::from_millis(2),
    tail_rate: 0.03,
    tail_latency: Duration::from_millis(250),
};

pub async fn run(args: DemoArgs, workers: &crate::workers::Workers) -> anyhow::Result<ExitCode> {
    let services = match args.two {
        false => vec![Service {
            name: "demo",
            healthy: args.healthy,
        }],
        true => vec![
            Service {
                name: "shop",
                healthy: false,
            },
            Service {
                name: "cart",
                healthy: true,
            },
        ],
    };
    let dir = std::env::temp_dir().join(format!("weir-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("analysis.yaml"), manifests::TEMPLATES)?;
    let mut routes = String::new();
    let mut rollouts = String::new();
    let mut described = Vec::new();
    let mut canaries = Vec::new();
    for (i, service) in services.iter().enumerate() {
        let name = service.name;
        let seed = 2 * i as u64;
        let (stable, _) = backend::start("stable", STABLE, seed + 1)
            .await
            .with_context(|| format!("starting {name}'s stable backend"))?;
        let behaviour = if service.healthy { STABLE } else { REGRESSED };
        let (canary, served) = backend::start("canary", behaviour, seed + 2)
            .await
            .with_context(|| format!("starting {name}'s canary backend"))?;
        canaries.push(served);
        // One service: every request is its. Several: each by its Host.
        let hosts = match services.len() {
            1 => String::new(),
            _ => format!("  match: {{hosts: [{name}]}}\n"),
        };
        routes.push_str(&format!(
            "- name: {name}\n{hosts}  stable: {{addresses: [\"{stable}\"]}}\n  canary: {{addresses: [\"{canary}\"]}}\n"
        ));
        let rollout = match args.dark {
            true => manifests::DARK_ROLLOUT,
            false => manifests::ROLLOUT,
        };
        std::fs::write(
            dir.join(format!("{name}.yaml")),
            rollout.replace("demo", name),
        )?;
        rollouts.push_str(&format!(
            "- manifests: [{name}.yaml, analysis.yaml]\n  services: {{{name}-stable: {name}, {name}-canary: {name}}}\n"
        ));
        let state = if service.healthy {
            "healthy"
        } else {
            "regressed: ~2% 5xx, slow tail"
        };
        described.push(format!(
            "{name}: stable {stable} vs canary {canary} ({state})"
        ));
    }
    let yaml = format!(
        "listeners: [{{name: demo, address: \"{listen}\"}}]\n\
         admin: {{address: \"{admin}\"}}\n\
         routes:\n{routes}rollouts:\n{rollouts}",
        listen = args.listen,
        admin = args.admin,
    );
    let config = weir_control::config::from_str(&yaml, &dir.join("weir.yaml"))
        .map_err(|errors| anyhow!("{errors}"))?;
    let running = start(config, workers).await?;
    let proxy = running.listeners[0];
    println!(
        "weir demo: {}, {} req/s each through http://{proxy}",
        described.join("; "),
        args.rate
    );
    println!(
        "           watch it in a browser: http://{}/ui",
        running.admin
    );
    println!(
        "           or from another terminal: weir status --watch --admin {}",
        running.admin
    );

    let loads: Vec<_> = services
        .iter()
        .map(|s| tokio::spawn(load::generate(proxy, args.rate, s.name)))
        .collect();
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let outcome = loop {
        tick.tick().await;
        let statuses: Vec<RolloutStatus> = running.rollouts.iter().map(|r| r.status()).collect();
        for status in &statuses {
            let prefix = match statuses.len() {
                1 => String::new(),
                _ => format!("{:<5}", status.rollout),
            };
            println!(
                "{prefix}{}",
                line(started.elapsed(), status, &running.plane)
            );
        }
        let done = |s: &RolloutStatus| matches!(s.phase, Phase::Healthy | Phase::Degraded);
        if statuses.iter().all(done) {
            break Ok(statuses);
        }
        if started.elapsed() > Duration::from_secs(120) {
            break Err(anyhow!("the demo did not finish in 2 minutes"));
        }
    };
    for load in loads {
        load.abort();
    }
    running.drain().await;
    let _ = std::fs::remove_dir_all(&dir);
    let statuses = outcome?;
    let mut aborted = false;
    for (status, canary) in statuses.iter().zip(&canaries) {
        let name = match statuses.len() {
            1 => String::new(),
            _ => format!("{}: ", status.rollout),
        };
        match status.phase {
            Phase::Healthy => println!(
                "{name}Healthy after {:.0?}: the canary was promoted and now serves as stable.",
                started.elapsed()
            ),
            _ => {
                aborted = true;
                println!(
                    "{name}Degraded after {:.0?}: aborted, canary weight 0. Reason: {}",
                    started.elapsed(),
                    status.message
                );
            }
        }
        if args.dark {
            let clients = canary.clients.load(std::sync::atomic::Ordering::Relaxed);
            let copies = canary.copies.load(std::sync::atomic::Ordering::Relaxed);
            let users = match clients {
                0 => "no user's request: every request it answered was a mirrored copy".to_string(),
                n => format!("{n} users' requests"),
            };
            println!("{name}The canary answered {copies} mirrored copies and {users}.");
        }
    }
    Ok(match aborted {
        false => ExitCode::SUCCESS,
        true => ExitCode::from(2),
    })
}

/// `[ 7s] Paused step 2/6 pause: 8s   canary 20.0%  success 97.9%  p99 251ms  analysis Running
/// errors 2.10%/0.10% abort 46%`: the rollout, the canary's live window, and each comparison's
/// figures (canary/stable) with how far its evidence is towards an abort.
fn line(elapsed: Duration, status: &RolloutStatus, plane: &weir_proxy::DataPlane) -> String {
    let window = plane
        .live
        .snapshot(&status.route, Role::Canary, Duration::from_secs(10));
    let success = window
        .as_ref()
        .and_then(|w| w.success_rate())
        .map_or("-".to_string(), |r| format!("{:.1}%", r * 100.0));
    let p99 = window
        .as_ref()
        .and_then(|w| w.quantile(0.99))
        .map_or("-".to_string(), |d| format!("{}ms", d.as_millis()));
    let step_text = status
        .steps
        .get(status.step.saturating_sub(1))
        .map_or("", |s| s.step.as_str());
    // The step's analysis while one runs (the dark step's), else the background one.
    let run = status
        .analysis
        .step
        .as_ref()
        .map(|s| &s.run)
        .or(status.analysis.background.as_ref());
    let mut verdict = run.map_or("-".to_string(), |r| r.phase.as_str().to_string());
    for m in run.into_iter().flat_map(|r| &r.metrics) {
        let Some(e) = &m.evidence else {
            continue;
        };
        let rate = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.2}%", r * 100.0));
        verdict.push_str(&format!(
            "  {} {}/{} abort {:.0}%",
            m.name,
            rate(e.canary.rate),
            rate(e.stable.rate),
            e.toward_failed * 100.0
        ));
    }
    let weight = if status.promoted {
        "promoted".to_string()
    } else {
        format!("{:.1}%", status.weights.canary)
    };
    format!(
        "[{:>3}s] {:<11} step {}/{} {:<14} canary {:>8}  success {:>6}  p99 {:>6}  analysis {}",
        elapsed.as_secs(),
        status.phase.as_str(),
        status.step,
        status.step_count,
        step_text,
        weight,
        success,
        p99,
        verdict
    )
}
