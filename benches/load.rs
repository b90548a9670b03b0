//! The side-by-side load benchmark (run it with benches/load/run.sh, which installs the peers).
//!
//! Two nginx upstreams (stable, canary) on CPU 1; each proxy in turn on CPU 0 with the same
//! 80/20 split and keep-alive to the upstreams: weir (`--workers 1`, and its default: a worker
//! per core it may use, so one here too — the two rows are an A/A pair, the run's noise floor),
//! nginx (one worker), HAProxy (one thread), "direct" (no proxy), and weir with
//! `http1_engine: hyper` (one worker) as the reference for its own HTTP/1 engine.
//! Rounds are interleaved (A B C … A B C …); medians reported, then each round's values and
//! weir's ratios to the better peer round by round. Every run is bounded in time and talks to
//! 127.0.0.1 only. Reports; asserts nothing.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

mod support;
use support::{
    against_better, benching, env_or, fixed_rate, free_port, haproxy, haproxy_conf, listed, median,
    median_interval, nginx, nginx_proxy_conf, nginx_upstream, pct, run_dir, signal, wait_for_port,
    weir, weir_binaries, weir_config, weir_config_on, Proc,
};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Direct,
    WeirOne,
    WeirMulti,
    Nginx,
    Haproxy,
    /// weir with every HTTP/1 request through hyper: the in-run reference for the
    /// passthrough engine.
    WeirHyper,
    /// An earlier build of weir (WEIR_BASELINE_BIN), each engine: a change's before and after
    /// in the same run.
    BaselineOne,
    BaselineHyper,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Direct => "direct (no proxy)",
            Kind::WeirOne => "weir (1 worker)",
            Kind::WeirMulti => "weir (default runtime)",
            Kind::Nginx => "nginx (1 worker)",
            Kind::Haproxy => "HAProxy (1 thread)",
            Kind::WeirHyper => "weir, hyper engine (1 worker)",
            Kind::BaselineOne => "baseline weir (1 worker)",
            Kind::BaselineHyper => "baseline weir, hyper engine (1 worker)",
        }
    }
}

struct Setup {
    dir: PathBuf,
    stable: u16,
    canary: u16,
    weir: PathBuf,
    baseline: Option<PathBuf>,
}

/// Starts the proxy of `kind` on CPU 0; returns it (None for direct) and the port to load.
fn start(kind: Kind, s: &Setup) -> (Option<Proc>, u16) {
    let port = free_port();
    let proc = match kind {
        Kind::Direct => return (None, s.stable),
        Kind::WeirOne
        | Kind::WeirMulti
        | Kind::WeirHyper
        | Kind::BaselineOne
        | Kind::BaselineHyper => {
            let conf = s.dir.join("weir.yaml");
            let mut yaml = weir_config(port, s.stable, s.canary, 20);
            if matches!(kind, Kind::WeirHyper | Kind::BaselineHyper) {
                yaml = yaml.replace("limits: {", "limits: {http1_engine: hyper, ");
            }
            std::fs::write(&conf, yaml).expect("write weir config");
            let binary = match (kind, &s.baseline) {
                (Kind::BaselineOne | Kind::BaselineHyper, Some(baseline)) => baseline,
                _ => &s.weir,
            };
            let workers = (kind != Kind::WeirMulti).then_some(1);
            weir("0", binary, &conf, workers)
        }
        Kind::Nginx => {
            let conf = s.dir.join("nginx-proxy.conf");
            std::fs::write(
                &conf,
                nginx_proxy_conf(&s.dir, port, s.stable, s.canary, 8192),
            )
            .expect("write nginx proxy config");
            nginx(&s.dir, &conf)
        }
        Kind::Haproxy => {
            let conf = s.dir.join("haproxy.cfg");
            std::fs::write(&conf, haproxy_conf(port, s.stable, s.canary, 8000))
                .expect("write haproxy config");
            haproxy(&conf)
        }
    };
    wait_for_port(port);
    (Some(proc), port)
}

/// The rollout page's cost to the data path (issue 15): weir (1 worker) under wrk, with the
/// page closed and with the page open — its three requests a second (/routes, /rollout,
/// /ui/history) polled on the admin listener — interleaved; throughput and CPU per request.
fn page_cost(s: &Setup, rounds: u64, secs: u64) {
    let mut closed = Vec::new();
    let mut open = Vec::new();
    for round in 0..rounds {
        for polling in [false, true] {
            eprintln!(
                "round {}/{rounds}: weir (1 worker), page {}",
                round + 1,
                if polling { "open" } else { "closed" }
            );
            let port = free_port();
            let admin = free_port();
            let conf = s.dir.join("weir-page.yaml");
            let yaml = weir_config_on(port, admin, s.stable, s.canary, 20);
            std::fs::write(&conf, yaml).expect("write weir config");
            let proc = weir("0", &s.weir, &conf, Some(1));
            wait_for_port(port);
            wait_for_port(admin);
            let stop = Arc::new(AtomicBool::new(false));
            let poller = polling.then(|| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut polls = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for path in ["/routes", "/rollout", "/ui/history"] {
                            polls += u64::from(get_admin(admin, path));
                        }
                        std::thread::sleep(Duration::from_secs(1));
                    }
                    polls
                })
            });
            let _ = wrk(port, 64, 1);
            let cpu0 = proc.cpu_seconds();
            let rps = wrk(port, 64, secs);
            let cpu = proc.cpu_seconds() - cpu0;
            stop.store(true, Ordering::Relaxed);
            let polls = poller.map(|p| p.join().unwrap_or(0));
            if let Some(polls) = polls {
                assert!(polls >= secs, "the page's polls failed: {polls} answered");
            }
            let run = (rps, cpu * 1e6 / (rps * secs as f64));
            if polling {
                open.push(run)
            } else {
                closed.push(run)
            }
            drop(proc);
        }
    }
    let ratios = |f: fn(&(f64, f64)) -> f64| -> Vec<f64> {
        open.iter().zip(&closed).map(|(o, c)| f(o) / f(c)).collect()
    };
    let rps_ratio = ratios(|r| r.0);
    let cpu_ratio = ratios(|r| r.1);
    let show = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("\n{rounds} rounds, {secs} s each; wrk -t1 -c64; weir with 1 worker on CPU 0; the page's 3 requests/s on the admin listener.\n");
    println!("| | page closed | page open | open / closed (per round) |");
    println!("|---|---|---|---|");
    println!(
        "| req/s | {:.0} | {:.0} | {:.3} ({}) |",
        median(closed.iter().map(|r| r.0).collect()),
        median(open.iter().map(|r| r.0).collect()),
        median(rps_ratio.clone()),
        show(&rps_ratio)
    );
    println!(
        "| CPU µs/req | {:.2} | {:.2} | {:.3} ({}) |",
        median(closed.iter().map(|r| r.1).collect()),
        median(open.iter().map(|r| r.1).collect()),
        median(cpu_ratio.clone()),
        show(&cpu_ratio)
    );
}

/// One GET on the admin listener (a fresh connection, as a browser's poll may be); whether
/// it was answered.
fn get_admin(admin: u16, path: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", admin)) else {
        return false;
    };
    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
    let req =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{admin}\r\nConnection: close\r\n\r\n");
    if c.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer);
    answer.starts_with(b"HTTP/1.1 ")
}

/// wrk at fixed connections for `secs`: requests per second.
fn wrk(port: u16, conns: u32, secs: u64) -> f64 {
    let out = Command::new("taskset")
        .args([
            "-c",
            "1",
            "wrk",
            "-t1",
            &format!("-c{conns}"),
            &format!("-d{secs}s"),
            &format!("http://127.0.0.1:{port}/"),
        ])
        .output()
        .expect("run wrk");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.starts_with("Requests/sec:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// 10,000 requests over 4 keep-alive connections: the canary's share, in percent.
async fn split(port: u16) -> f64 {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        tasks.push(tokio::spawn(async move {
            let mut canary = 0u64;
            let Ok(tcp) = tokio::net::TcpStream::connect(addr).await else {
                return 0;
            };
            let Ok((mut sender, conn)) =
                http1::handshake::<_, Empty<Bytes>>(TokioIo::new(tcp)).await
            else {
                return 0;
            };
            tokio::spawn(conn);
            for _ in 0..2_500 {
                if sender.ready().await.is_err() {
                    break;
                }
                let Ok(req) = http::Request::get("/")
                    .header("host", "bench")
                    .body(Empty::new())
                else {
                    break;
                };
                let Ok(resp) = sender.send_request(req).await else {
                    break;
                };
                if resp
                    .headers()
                    .get("x-backend")
                    .is_some_and(|v| v == "canary")
                {
                    canary += 1;
                }
                let _ = resp.into_body().collect().await;
            }
            canary
        }));
    }
    let mut canary = 0;
    for t in tasks {
        canary += t.await.unwrap_or(0);
    }
    canary as f64 / 100.0
}

#[derive(Default, Clone)]
struct Run {
    rps: f64,
    cpu_us_per_req: f64,
    p50: f64,
    p99: f64,
    p999: f64,
    failed: u64,
    rss_256: f64,
    split: f64,
    storm: Option<Storm>,
}

/// The swap storm's slices, pooled: the same weir process at the fixed rate, with and without
/// 100 table swaps a second, in alternating slices (calm-storm, storm-calm, …) so that a drift
/// of the shared generator core falls on both alike.
#[derive(Default, Clone)]
struct Storm {
    calm_p99: f64,
    storm_p99: f64,
    /// The noise floor of the same run: p99 of the odd pairs' calm slices against the even
    /// pairs', in percent.
    calm_vs_calm: f64,
    failed: u64,
    swaps: u64,
}

impl Storm {
    fn change(&self) -> f64 {
        (self.storm_p99 / self.calm_p99 - 1.0) * 100.0
    }
}

/// Slice pairs per storm measurement; each slice is `secs / 2` long, so a storm takes as long
/// as two plain fixed-rate runs per pair.
const STORM_PAIRS: u64 = 5;

fn swap_storm(rt: &tokio::runtime::Runtime, setup: &Setup, rate: u64, secs: u64) -> Storm {
    let (proc, port) = start(Kind::WeirOne, setup);
    let pid = proc.as_ref().map_or(0, |p| p.pid());
    let conf = setup.dir.join("weir.yaml");
    let text = std::fs::read_to_string(&conf).unwrap_or_default();
    let (active, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // SIGHUP reloads of a config whose weight alternates 20/21 %, 100 a second while active.
    let swapper = {
        let (active, stop) = (active.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            let begun = Instant::now();
            let mut tick = 0u32;
            while !stop.load(Ordering::Relaxed) {
                if active.load(Ordering::Relaxed) {
                    let w = if n.is_multiple_of(2) {
                        "canary_weight: 21"
                    } else {
                        "canary_weight: 20"
                    };
                    let _ = std::fs::write(&conf, text.replace("canary_weight: 20", w));
                    signal(pid, libc::SIGHUP);
                    n += 1;
                }
                // Every 10 ms on a schedule (the work above takes time too).
                tick += 1;
                let next = begun + Duration::from_millis(10) * tick;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            n
        })
    };
    let slice = (secs / 2).max(1);
    let (mut calm, mut storm) = (Vec::new(), Vec::new());
    let mut calm_by_parity = [Vec::new(), Vec::new()];
    let mut failed = 0;
    for pair in 0..STORM_PAIRS {
        let order = if pair.is_multiple_of(2) {
            [false, true]
        } else {
            [true, false]
        };
        for stormy in order {
            active.store(stormy, Ordering::Relaxed);
            let (lat, f) = rt.block_on(fixed_rate(port, rate, 50, slice));
            if stormy {
                storm.extend(lat);
                failed += f;
            } else {
                calm_by_parity[(pair % 2) as usize].extend_from_slice(&lat);
                calm.extend(lat);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap_or(0);
    drop(proc);
    let [even, odd] = &mut calm_by_parity;
    for v in [&mut calm, &mut storm, even, odd] {
        v.sort_unstable();
    }
    let storm = Storm {
        calm_p99: pct(&calm, 0.99),
        storm_p99: pct(&storm, 0.99),
        calm_vs_calm: (pct(&calm_by_parity[1], 0.99) / pct(&calm_by_parity[0], 0.99) - 1.0) * 100.0,
        failed,
        swaps,
    };
    eprintln!(
        "  swap storm: {swaps} reloads; p99 {:.3} ms vs {:.3} calm ({:+.1} %); calm vs calm {:+.1} %; {failed} failed",
        storm.storm_p99,
        storm.calm_p99,
        storm.change(),
        storm.calm_vs_calm
    );
    storm
}

fn print_storms(storms: Vec<Storm>, secs: u64) {
    let med = |f: fn(&Storm) -> f64| median(storms.iter().map(f).collect());
    let slice = (secs / 2).max(1);
    println!(
        "\nSwap storm (weir, 1 worker, 100 table swaps/s via SIGHUP reloads; {STORM_PAIRS} calm/storm slice pairs of {slice} s per round, alternating order), medians of {} rounds: p99 {:.3} ms with swaps vs {:.3} ms without, change {:+.1} % (per round: {}); the same process's calm slices against each other {:+.1} % (per round: {}); {} reloads, {} failed requests",
        storms.len(),
        med(|s| s.storm_p99),
        med(|s| s.calm_p99),
        med(Storm::change),
        storms.iter().map(|s| format!("{:+.1}", s.change())).collect::<Vec<_>>().join(", "),
        med(|s| s.calm_vs_calm),
        storms.iter().map(|s| format!("{:+.1}", s.calm_vs_calm)).collect::<Vec<_>>().join(", "),
        storms.iter().map(|s| s.swaps).sum::<u64>(),
        storms.iter().map(|s| s.failed).sum::<u64>(),
    );
}

/// Each engine after a change against the same engine before it: medians, and the ratio of
/// each round (rounds interleave, so their spread is the noise floor of the ratio).
fn print_against_baseline(kinds: &[Kind], results: &[Vec<Run>], rounds: u64, secs: u64, rate: u64) {
    let index = |k: Kind| kinds.iter().position(|&x| x == k).unwrap_or(0);
    println!("\n{rounds} rounds, {secs} s each; wrk -t1 -c64; fixed rate {rate} req/s over 50 connections; medians, and after/before per round.\n");
    println!("| engine | req/s after | req/s before | after/before (per round) | CPU µs/req after | before | after/before (per round) | p99 ms after | before | failed after, before |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, after, before) in [
        ("passthrough", Kind::WeirOne, Kind::BaselineOne),
        ("hyper", Kind::WeirHyper, Kind::BaselineHyper),
    ] {
        let (a, b) = (&results[index(after)], &results[index(before)]);
        let med = |runs: &[Run], f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
        let ratios = |f: fn(&Run) -> f64| {
            let per: Vec<f64> = a.iter().zip(b).map(|(x, y)| f(x) / f(y)).collect();
            let shown: Vec<String> = per.iter().map(|r| format!("{r:.3}")).collect();
            format!("{:.3} ({})", median(per), shown.join(", "))
        };
        println!(
            "| {name} | {:.0} | {:.0} | {} | {:.2} | {:.2} | {} | {:.3} | {:.3} | {}, {} |",
            med(a, |r| r.rps),
            med(b, |r| r.rps),
            ratios(|r| r.rps),
            med(a, |r| r.cpu_us_per_req),
            med(b, |r| r.cpu_us_per_req),
            ratios(|r| r.cpu_us_per_req),
            med(a, |r| r.p99),
            med(b, |r| r.p99),
            a.iter().map(|r| r.failed).sum::<u64>(),
            b.iter().map(|r| r.failed).sum::<u64>(),
        );
    }
}

fn main() {
    if !benching() {
        return; // `cargo test --benches`: nothing to do
    }
    let rounds = env_or("ROUNDS", 3);
    let secs = env_or("DURATION", 10);
    let rate = env_or("RATE", 5000);
    let (weir, baseline) = weir_binaries("benches/load/run.sh");
    let dir = run_dir("load");
    let setup = Setup {
        stable: free_port(),
        canary: free_port(),
        dir: dir.clone(),
        weir,
        baseline,
    };
    let _stable = nginx_upstream(&dir, "stable", setup.stable);
    let _canary = nginx_upstream(&dir, "canary", setup.canary);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if std::env::var_os("STORM_ONLY").is_some() {
        // Only the swap storm, `rounds` times: its own question, in minutes instead of half an hour.
        let storms = (0..rounds)
            .map(|round| {
                eprintln!("round {}/{rounds}: swap storm", round + 1);
                swap_storm(&rt, &setup, rate, secs)
            })
            .collect();
        print_storms(storms, secs);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let kinds: &[Kind] = if setup.baseline.is_some() {
        // Before and after a change, each engine, interleaved: the peers are not the question.
        &[
            Kind::Direct,
            Kind::WeirOne,
            Kind::BaselineOne,
            Kind::WeirHyper,
            Kind::BaselineHyper,
        ]
    } else {
        &[
            Kind::Direct,
            Kind::WeirOne,
            Kind::WeirMulti,
            Kind::Nginx,
            Kind::Haproxy,
            Kind::WeirHyper,
        ]
    };
    let mut results: Vec<Vec<Run>> = vec![Vec::new(); kinds.len()];

    if std::env::var_os("PAGE_ONLY").is_some() {
        page_cost(&setup, rounds, secs);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    if std::env::var_os("CPU_ONLY").is_some() {
        // CPU_RATE: the same rounds at a fixed offered rate instead of as fast as wrk goes. A
        // value that is not a rate stops the run: silently running at full speed instead would
        // report the other operating point under this one's name.
        let offered = std::env::var("CPU_RATE")
            .ok()
            .map(|v| match v.parse::<u64>() {
                Ok(rate) if rate >= 64 => rate,
                _ => panic!("CPU_RATE={v}: requests a second, at least 64 (one a connection)"),
            });
        cpu_only(&rt, &setup, rounds, secs, offered);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    if std::env::var_os("LATENCY_ONLY").is_some() {
        // Only the fixed-rate latency, every contender, `rounds` interleaved rounds: the
        // question of a latency difference in minutes instead of half an hour.
        let mut lat: Vec<Vec<[f64; 3]>> = vec![Vec::new(); kinds.len()];
        for round in 0..rounds {
            for (i, &kind) in kinds.iter().enumerate() {
                eprintln!("round {}/{rounds}: {} (latency)", round + 1, kind.name());
                let (proc, port) = start(kind, &setup);
                let _ = rt.block_on(fixed_rate(port, rate, 50, 1)); // warm the pools
                let (sorted, _) = rt.block_on(fixed_rate(port, rate, 50, secs));
                lat[i].push([0.5, 0.99, 0.999].map(|q| pct(&sorted, q)));
                drop(proc);
            }
        }
        println!("\n{rounds} rounds, {secs} s each; fixed rate {rate} req/s over 50 connections; medians (per round).\n");
        println!("| proxy | p50 ms | p99 ms | p99.9 ms |");
        println!("|---|---|---|---|");
        for (i, kind) in kinds.iter().enumerate() {
            let cell = |q: usize| {
                let per_round: Vec<f64> = lat[i].iter().map(|r| r[q]).collect();
                let shown: Vec<String> = per_round.iter().map(|v| format!("{v:.3}")).collect();
                format!("{:.3} ({})", median(per_round), shown.join(", "))
            };
            println!(
                "| {} | {} | {} | {} |",
                kind.name(),
                cell(0),
                cell(1),
                cell(2)
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    for round in 0..rounds {
        for (i, &kind) in kinds.iter().enumerate() {
            eprintln!("round {}/{rounds}: {}", round + 1, kind.name());
            let mut run = Run::default();
            // Throughput and CPU per request (fresh process).
            let (proc, port) = start(kind, &setup);
            let _ = wrk(port, 64, 1); // warm the pools
            let cpu0 = proc.as_ref().map_or(0.0, |p| p.cpu_seconds());
            run.rps = wrk(port, 64, secs);
            let cpu = proc.as_ref().map_or(0.0, |p| p.cpu_seconds()) - cpu0;
            run.cpu_us_per_req = if proc.is_some() && run.rps > 0.0 {
                cpu * 1e6 / (run.rps * secs as f64)
            } else {
                f64::NAN
            };
            // Latency at a fixed rate below saturation.
            let (lat, failed) = rt.block_on(fixed_rate(port, rate, 50, secs));
            (run.p50, run.p99, run.p999, run.failed) =
                (pct(&lat, 0.5), pct(&lat, 0.99), pct(&lat, 0.999), failed);
            // Split accuracy.
            run.split = rt.block_on(split(port));
            drop(proc);
            // Peak RSS with 256 connections (fresh process, so the peak is this load's).
            let (proc, port) = start(kind, &setup);
            let _ = wrk(port, 256, 5.min(secs));
            run.rss_256 = proc.as_ref().map_or(f64::NAN, |p| p.peak_rss_mib());
            drop(proc);
            if kind == Kind::WeirOne && setup.baseline.is_none() {
                run.storm = Some(swap_storm(&rt, &setup, rate, secs));
            }
            results[i].push(run);
        }
    }

    let med = |i: usize, f: fn(&Run) -> f64| median(results[i].iter().map(f).collect());
    if setup.baseline.is_some() {
        print_against_baseline(kinds, &results, rounds, secs, rate);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let (nginx, haproxy, direct) = (3, 4, 0);
    println!("\n{} rounds, {secs} s each; wrk -t1 -c64; fixed rate {rate} req/s over 50 connections; medians.\n", rounds);
    println!("| proxy | req/s | vs nginx | vs HAProxy | vs direct | CPU µs/req | p50 ms | p99 ms | p99.9 ms | failed | peak RSS @256 conns MiB | canary share % (20) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (i, kind) in kinds.iter().enumerate() {
        let rps = med(i, |r| r.rps);
        // Direct has no proxy process (CPU and RSS are NaN) and no split: those cells are "–".
        let cell = |v: f64, decimals: usize| {
            if v.is_nan() {
                "–".to_string()
            } else {
                format!("{v:.decimals$}")
            }
        };
        let split = if i == direct {
            f64::NAN
        } else {
            med(i, |r| r.split)
        };
        println!(
            "| {} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {} |",
            kind.name(),
            rps,
            rps / med(nginx, |r| r.rps),
            rps / med(haproxy, |r| r.rps),
            rps / med(direct, |r| r.rps),
            cell(med(i, |r| r.cpu_us_per_req), 1),
            med(i, |r| r.p50),
            med(i, |r| r.p99),
            med(i, |r| r.p999),
            results[i].iter().map(|r| r.failed).sum::<u64>(),
            cell(med(i, |r| r.rss_256), 1),
            cell(split, 2),
        );
    }
    print_rounds(kinds, &results);
    print_storms(
        results[1].iter().filter_map(|r| r.storm.clone()).collect(),
        secs,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Only throughput and CPU a request, weir (one worker, and its default: the A/A pair) against
/// nginx and HAProxy, in many short rounds: the question of a CPU ratio a few per cent from
/// 1 (or from the 0.85), which five rounds of the full harness cannot resolve on a
/// noisy VM. Rounds run the contenders in turn, every other round in reverse order, so no one
/// always follows another; each round's ratio pairs runs seconds apart. The median ratio comes
/// with a distribution-free 95 % interval (`median_interval`), and so does the A/A pair's.
/// With `WEIR_BASELINE_BIN` the second row is that build with one worker, and the pair's ratio
/// is the change's effect instead of the noise floor.
///
/// With `offered` (CPU_RATE) each contender serves the same open-loop load, that many requests
/// a second over 64 connections (`fixed_rate`), instead of wrk's closed loop at full speed. Why
/// both: at full speed the load side (wrk and the upstreams on CPU 1) sets the rate, so each
/// proxy is left with a different share of idle time, and a proxy that is nearly busy handles
/// many readiness events per `epoll_wait` and sleeps less, while one with time to spare goes
/// back to the kernel after every few events. At a fixed rate below every contender's ceiling
/// each has time to spare and does the same work on the same arrivals — the operating point of
/// a sidecar or edge proxy that is not saturated.
fn cpu_only(
    rt: &tokio::runtime::Runtime,
    setup: &Setup,
    rounds: u64,
    secs: u64,
    offered: Option<u64>,
) {
    let second = match setup.baseline {
        Some(_) => Kind::BaselineOne,
        None => Kind::WeirMulti,
    };
    let kinds = [Kind::WeirOne, second, Kind::Nginx, Kind::Haproxy];
    // Per kind, per round: req/s, user and system µs a request.
    let mut runs: Vec<Vec<[f64; 3]>> = vec![Vec::new(); kinds.len()];
    let mut failed = vec![0u64; kinds.len()];
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..kinds.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let kind = kinds[i];
            eprintln!("round {}/{rounds}: {} (CPU)", round + 1, kind.name());
            let (proc, port) = start(kind, setup);
            let Some(proc) = proc else { continue };
            let (rps, requests, (user0, sys0), (user1, sys1)) = match offered {
                None => {
                    let _ = wrk(port, 64, 1); // warm the pools
                    let before = proc.cpu_split();
                    let rps = wrk(port, 64, secs);
                    (rps, rps * secs as f64, before, proc.cpu_split())
                }
                Some(rate) => {
                    let _ = rt.block_on(fixed_rate(port, rate, 64, 1)); // warm the pools
                    let before = proc.cpu_split();
                    let (done, lost) = rt.block_on(fixed_rate(port, rate, 64, secs));
                    let after = proc.cpu_split();
                    failed[i] += lost;
                    let done = done.len() as f64;
                    (done / secs as f64, done, before, after)
                }
            };
            let per = |seconds: f64| {
                if requests > 0.0 {
                    seconds * 1e6 / requests
                } else {
                    f64::NAN
                }
            };
            runs[i].push([rps, per(user1 - user0), per(sys1 - sys0)]);
        }
    }
    let col = |i: usize, f: fn(&[f64; 3]) -> f64| -> Vec<f64> { runs[i].iter().map(f).collect() };
    let cpu = |r: &[f64; 3]| r[1] + r[2];
    let cpus: Vec<Vec<f64>> = (0..kinds.len()).map(|i| col(i, cpu)).collect();
    // Row `i`'s CPU a request over row `j`'s, round by round.
    let over = |i: usize, j: usize| -> Vec<f64> {
        cpus[i].iter().zip(&cpus[j]).map(|(a, b)| a / b).collect()
    };
    let interval = |v: &[f64]| match median_interval(v) {
        Some((low, high, coverage)) => {
            format!(
                "{:.2} [{low:.2}, {high:.2}] ({:.0} %)",
                median(v.to_vec()),
                coverage * 100.0
            )
        }
        None => format!("{:.2} (too few rounds for an interval)", median(v.to_vec())),
    };
    let load = match offered {
        None => "wrk -t1 -c64".to_string(),
        Some(rate) => format!("a fixed {rate} req/s over 64 connections"),
    };
    println!("\n{rounds} rounds of {secs} s ({load}, each proxy on CPU 0), order reversed every other round; medians.\n");
    println!("| proxy | req/s | CPU µs/req | user µs/req | system µs/req | failed |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (i, kind) in kinds.iter().enumerate() {
        println!(
            "| {} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
            kind.name(),
            median(col(i, |r| r[0])),
            median(cpus[i].clone()),
            median(col(i, |r| r[1])),
            median(col(i, |r| r[2])),
            // wrk's closed loop counts what came back; only the open loop has a count to miss.
            offered.map_or("—".to_string(), |_| failed[i].to_string()),
        );
    }
    let (nginx, haproxy) = (2, 3);
    println!("\nRatios taken round by round: median [95 % interval for the median] (its exact coverage).\n");
    println!("| | req/s × better peer | CPU × better peer | CPU × nginx | CPU × HAProxy |");
    println!("|---|---|---|---|---|");
    for i in [0, 1] {
        println!(
            "| {} | {} | {} | {} | {} |",
            kinds[i].name(),
            interval(&against_better(
                &col(i, |r| r[0]),
                &col(nginx, |r| r[0]),
                &col(haproxy, |r| r[0]),
                true
            )),
            interval(&against_better(
                &cpus[i],
                &cpus[nginx],
                &cpus[haproxy],
                false
            )),
            interval(&over(i, nginx)),
            interval(&over(i, haproxy)),
        );
    }
    let aa = over(0, 1);
    let pair = match second {
        Kind::BaselineOne => "This build over the baseline (CPU a request, one worker each)",
        _ => "Noise floor, the A/A pair (CPU a request, 1 worker over default, alike on one core)",
    };
    println!("\n{pair}: {}; per round: {}", interval(&aa), listed(&aa, 2));
    for (i, kind) in kinds.iter().enumerate() {
        println!(
            "\n{} per round, CPU µs/req: {}",
            kind.name(),
            listed(&cpus[i], 1)
        );
    }
}

/// Each round's throughput and CPU a request, and weir's ratios to the better peer taken round
/// by round (`against_better`). weir's two rows are the same configuration when the harness
/// pins it to one core (the default runtime starts a worker per core it may use), so their
/// ratio is this run's noise floor.
fn print_rounds(kinds: &[Kind], results: &[Vec<Run>]) {
    let at = |k: Kind| kinds.iter().position(|&x| x == k);
    let (Some(one), Some(multi), Some(nginx), Some(haproxy)) = (
        at(Kind::WeirOne),
        at(Kind::WeirMulti),
        at(Kind::Nginx),
        at(Kind::Haproxy),
    ) else {
        return;
    };
    let per = |i: usize, f: fn(&Run) -> f64| -> Vec<f64> { results[i].iter().map(f).collect() };
    let x_better = |i: usize, f: fn(&Run) -> f64, higher_is_better: bool| {
        let x = against_better(
            &per(i, f),
            &per(nginx, f),
            &per(haproxy, f),
            higher_is_better,
        );
        format!("{:.2} ({})", median(x.clone()), listed(&x, 2))
    };
    println!("\nPer round (in run order), and weir over the better peer taken round by round:\n");
    println!("| | req/s per round | CPU µs/req per round | req/s × better peer (median; per round) | CPU × better peer (median; per round) |");
    println!("|---|---|---|---|---|");
    for (i, kind) in kinds.iter().enumerate() {
        let (x_rps, x_cpu) = if i == one || i == multi {
            (
                x_better(i, |r| r.rps, true),
                x_better(i, |r| r.cpu_us_per_req, false),
            )
        } else {
            (String::new(), String::new())
        };
        println!(
            "| {} | {} | {} | {x_rps} | {x_cpu} |",
            kind.name(),
            listed(&per(i, |r| r.rps), 0),
            listed(&per(i, |r| r.cpu_us_per_req), 1)
        );
    }
    let cpu = |r: &Run| r.cpu_us_per_req;
    let aa: Vec<f64> = results[one]
        .iter()
        .zip(&results[multi])
        .map(|(a, b)| cpu(a) / cpu(b))
        .collect();
    println!(
        "\nNoise floor: weir's two rows run alike here (one worker on CPU 0); CPU a request, 1 worker over default, per round: {}",
        listed(&aa, 2)
    );
}
