//! The standalone rollout engine end to end: the weir binary reading Argo YAML, real upstreams,
//! real load on 127.0.0.1, analysis by the built-in provider; operators' commands through the
//! admin API and the CLI; state that survives a restart.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::backend::{self, Behaviour, TestBackend};
use common::client::H1;
use common::load::Load;
use common::weir::Weir;

fn rollout_yaml(steps: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {{name: shop}}\nspec:\n  replicas: 3\n  strategy:\n    canary:\n\
         \x20     stableService: shop-stable\n      canaryService: shop-canary\n\
         \x20     analysis: {{templates: [{{templateName: live}}], args: [{{name: route, value: web}}]}}\n\
         \x20     steps:\n{steps}"
    )
}

/// weir with route `web` and a `rollout:` section over the given manifests.
fn start(
    stable: SocketAddr,
    canary: SocketAddr,
    rollout: &str,
    template: &str,
    extra: &str,
) -> Weir {
    let dir = common::temp_dir("rollout");
    std::fs::write(dir.join("rollout.yaml"), rollout).unwrap();
    std::fs::write(dir.join("analysis.yaml"), template).unwrap();
    let config = dir.join("weir.yaml");
    std::fs::write(&config, config_yaml(stable, canary, extra)).unwrap();
    Weir::start_with(dir, config, &[])
}

fn config_yaml(stable: SocketAddr, canary: SocketAddr, extra: &str) -> String {
    format!(
        "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
         routes:\n- name: web\n  stable: {{addresses: [\"{stable}\"]}}\n  canary: {{addresses: [\"{canary}\"]}}\n\
         rollout:\n  manifests: [rollout.yaml, analysis.yaml]\n  services: {{shop-stable: web, shop-canary: web}}\n{extra}"
    )
}

async fn noisy(name: &'static str, every: u64) -> (TestBackend, Arc<AtomicU64>) {
    let knob = Arc::new(AtomicU64::new(every));
    let b = backend::start(
        name,
        Behaviour {
            error_every: Some(knob.clone()),
            ..Default::default()
        },
    )
    .await;
    (b, knob)
}

fn phase(s: &serde_json::Value) -> &str {
    s["phase"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builtin_provider_aborts_a_canary_whose_5xx_jump_to_5_percent() {
    let (stable, _) = noisy("stable", 1000).await;
    let (canary, canary_errors) = noisy("canary", 1000).await;
    let weir = start(
        stable.addr,
        canary.addr,
        &rollout_yaml("      - setWeight: 20\n      - pause: {}\n"),
        common::LIVE_TEMPLATE,
        "",
    );
    let load = Load::start(weir.addr, 300, Duration::from_secs(40));
    let s = weir
        .wait_rollout(Duration::from_secs(10), |s| {
            phase(s) == "Paused" && s["weights"]["canary"] == 20.0
        })
        .await;
    assert_eq!(s["aborted"], false);
    // Healthy for a while: 0.1 % noise is no reason to abort.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(phase(&weir.rollout().await), "Paused");

    canary_errors.store(20, Ordering::SeqCst); // 5 % 5xx from now on
    let s = weir
        .wait_rollout(Duration::from_secs(15), |s| phase(s) == "Degraded")
        .await;
    assert_eq!(s["aborted"], true);
    assert_eq!(s["weights"]["canary"], 0.0);
    let message = s["message"].as_str().unwrap();
    assert!(
        message.contains("success-rate") && message.contains("result >= 0.98"),
        "{message}"
    );
    let (sent, _) = load.stop().await;
    assert!(sent > 1000, "only {sent} requests");

    // Weight 0: nothing more reaches the canary.
    let before = canary.hits();
    let mut c = H1::connect(weir.addr).await;
    for _ in 0..200 {
        assert_eq!(c.get("/", &[]).await.backend(), "stable");
    }
    assert_eq!(canary.hits(), before);
    let metrics = weir.metrics().await;
    assert!(
        metrics.contains("weir_rollout_aborts_total{rollout=\"shop\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("weir_rollout_phase{rollout=\"shop\",phase=\"Degraded\"} 1"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_canary_under_the_same_noise_is_promoted() {
    let (stable, _) = noisy("stable", 1000).await;
    let (canary, _) = noisy("canary", 1000).await;
    let steps = "      - setWeight: 20\n      - pause: {duration: 3s}\n      - setWeight: 50\n      - pause: {duration: 3s}\n";
    let weir = start(
        stable.addr,
        canary.addr,
        &rollout_yaml(steps),
        common::LIVE_TEMPLATE,
        "",
    );
    let load = Load::start(weir.addr, 300, Duration::from_secs(40));
    let s = weir
        .wait_rollout(Duration::from_secs(20), |s| {
            matches!(phase(s), "Healthy" | "Degraded")
        })
        .await;
    assert_eq!(phase(&s), "Healthy", "{s:#}");
    assert_eq!(s["promoted"], true);
    load.stop().await;
    // Full promotion: the canary version now serves as stable, at weight 0.
    let (_, routes) = common::client::get_text(weir.admin, "/routes").await;
    let routes: serde_json::Value = serde_json::from_str(&routes).unwrap();
    assert_eq!(
        routes["routes"][0]["stable"]["addresses"][0],
        canary.addr.to_string()
    );
    assert_eq!(routes["routes"][0]["canary_weight"], 0.0);
    let mut c = H1::connect(weir.addr).await;
    assert_eq!(c.get("/", &[]).await.backend(), "canary");
}

fn cli(admin: SocketAddr, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .args(["--admin", &admin.to_string()])
        .output()
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_promote_abort_and_retry_through_the_cli() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let steps =
        "      - setWeight: 10\n      - pause: {}\n      - setWeight: 30\n      - pause: {}\n";
    let weir = start(
        stable.addr,
        canary.addr,
        &rollout_yaml(steps),
        common::LIVE_TEMPLATE,
        "",
    );
    weir.wait_rollout(Duration::from_secs(5), |s| {
        s["step"] == 2 && phase(s) == "Paused"
    })
    .await;

    let (code, out) = cli(weir.admin, &["status"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("Name:      shop") && out.contains("Paused") && out.contains("canary 10%"),
        "{out}"
    );
    assert!(out.contains("▶  2. pause: until promoted"), "{out}");

    let (code, out) = cli(weir.admin, &["promote"]);
    assert_eq!(code, Some(0), "{out}");
    let s = weir
        .wait_rollout(Duration::from_secs(5), |s| s["step"] == 4)
        .await;
    assert_eq!(s["weights"]["canary"], 30.0);

    let (code, out) = cli(weir.admin, &["abort"]);
    assert_eq!(code, Some(0), "{out}");
    let s = weir
        .wait_rollout(Duration::from_secs(5), |s| phase(s) == "Degraded")
        .await;
    assert_eq!(s["weights"]["canary"], 0.0);
    assert!(s["message"].as_str().unwrap().contains("operator"));
    // An aborted rollout is not promoted by accident.
    let (code, out) = cli(weir.admin, &["promote"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("cannot promote"), "{out}");

    let (code, out) = cli(weir.admin, &["retry"]);
    assert_eq!(code, Some(0), "{out}");
    weir.wait_rollout(Duration::from_secs(5), |s| {
        s["step"] == 2 && phase(s) == "Paused"
    })
    .await;
    let (code, out) = cli(weir.admin, &["promote", "--full"]);
    assert_eq!(code, Some(0), "{out}");
    weir.wait_rollout(Duration::from_secs(5), |s| phase(s) == "Healthy")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_calls_need_the_token_off_loopback() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let dir = common::temp_dir("rollout-token");
    std::fs::write(
        dir.join("rollout.yaml"),
        rollout_yaml("      - setWeight: 10\n      - pause: {}\n"),
    )
    .unwrap();
    std::fs::write(dir.join("analysis.yaml"), common::LIVE_TEMPLATE).unwrap();
    std::fs::write(dir.join("token"), "s3cret\n").unwrap();
    let yaml = config_yaml(stable.addr, canary.addr, "  token_file: token\n").replace(
        "admin: {address: \"127.0.0.1:0\"}",
        "admin: {address: \"0.0.0.0:0\"}",
    );
    std::fs::write(dir.join("weir.yaml"), yaml).unwrap();
    let weir = Weir::start_with(dir.clone(), dir.join("weir.yaml"), &[]);
    let admin: SocketAddr = format!("127.0.0.1:{}", weir.admin.port()).parse().unwrap();
    weir.wait_rollout(Duration::from_secs(5), |s| phase(s) == "Paused")
        .await;

    let (code, out) = cli(admin, &["abort"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("bearer token"), "{out}");
    assert_eq!(
        phase(&weir.rollout().await),
        "Paused",
        "nothing changed without the token"
    );
    let token = dir.join("token");
    let (code, out) = cli(admin, &["abort", "--token-file", token.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    weir.wait_rollout(Duration::from_secs(5), |s| phase(s) == "Degraded")
        .await;

    // Off loopback without a token file, weir refuses to start at all.
    std::fs::write(
        dir.join("open.yaml"),
        config_yaml(stable.addr, canary.addr, "")
            .replace("127.0.0.1:0\"}\nroutes", "0.0.0.0:0\"}\nroutes"),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["run", "--config"])
        .arg(dir.join("open.yaml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("token_file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_survives_a_restart_and_a_malformed_state_file_holds_at_zero() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let steps =
        "      - setWeight: 10\n      - pause: {}\n      - setWeight: 30\n      - pause: {}\n";
    let dir = common::temp_dir("rollout-state");
    std::fs::write(dir.join("rollout.yaml"), rollout_yaml(steps)).unwrap();
    std::fs::write(dir.join("analysis.yaml"), common::LIVE_TEMPLATE).unwrap();
    std::fs::write(
        dir.join("weir.yaml"),
        config_yaml(stable.addr, canary.addr, "  state_file: state.json\n"),
    )
    .unwrap();
    let restart = || Weir::start_with(dir.clone(), dir.join("weir.yaml"), &[]).keep_dir();

    let weir = restart();
    weir.wait_rollout(Duration::from_secs(5), |s| s["step"] == 2)
        .await;
    let (code, out) = cli(weir.admin, &["promote"]);
    assert_eq!(code, Some(0), "{out}");
    weir.wait_rollout(Duration::from_secs(5), |s| s["step"] == 4)
        .await;
    drop(weir); // SIGKILL: no chance to save anything on the way out

    let weir = restart();
    let s = weir.rollout().await;
    assert_eq!(
        (s["step"].as_u64(), s["weights"]["canary"].as_f64()),
        (Some(4), Some(30.0)),
        "resumed, not restarted: {s:#}"
    );
    cli(weir.admin, &["abort"]);
    weir.wait_rollout(Duration::from_secs(5), |s| phase(s) == "Degraded")
        .await;
    drop(weir);

    let weir = restart();
    let s = weir.rollout().await;
    assert_eq!(
        phase(&s),
        "Degraded",
        "an aborted rollout stays aborted: {s:#}"
    );
    assert_eq!(s["weights"]["canary"], 0.0);
    drop(weir);

    std::fs::write(dir.join("state.json"), "{ not json").unwrap();
    let weir = restart();
    let s = weir.rollout().await;
    assert_eq!(phase(&s), "Degraded", "{s:#}");
    assert_eq!(s["weights"]["canary"], 0.0);
    assert!(
        s["message"].as_str().unwrap().contains("malformed"),
        "{s:#}"
    );
    assert!(weir.log().contains("malformed"), "reported in the log too");
    // It serves; and an operator can start over.
    assert_eq!(
        H1::connect(weir.addr).await.get("/", &[]).await.backend(),
        "stable"
    );
    let (code, out) = cli(weir.admin, &["retry"]);
    assert_eq!(code, Some(0), "{out}");
    weir.wait_rollout(Duration::from_secs(5), |s| {
        s["step"] == 2 && s["weights"]["canary"] == 10.0
    })
    .await;
    drop(weir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_header_route_and_mirror_route_steps_drive_the_data_plane() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let rollout = "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: shop}\nspec:\n  strategy:\n    canary:\n\
         \x20     trafficRouting:\n        managedRoutes: [{name: testers}, {name: shadow}]\n\
         \x20     steps:\n\
         \x20     - setHeaderRoute: {name: testers, match: [{headerName: x-canary, headerValue: {exact: \"yes\"}}]}\n\
         \x20     - setMirrorRoute: {name: shadow, percentage: 100, match: [{method: {exact: POST}}]}\n\
         \x20     - pause: {}\n\
         \x20     - setHeaderRoute: {name: testers}\n\
         \x20     - pause: {}\n";
    let weir = start(
        stable.addr,
        canary.addr,
        rollout,
        common::LIVE_TEMPLATE,
        "  route: web\n",
    );
    weir.wait_rollout(Duration::from_secs(5), |s| s["step"] == 3)
        .await;
    let mut c = H1::connect(weir.addr).await;
    // Weight 0, yet the testers reach canary.
    assert_eq!(c.get("/", &[("x-canary", "yes")]).await.backend(), "canary");
    assert_eq!(c.get("/", &[]).await.backend(), "stable");
    // POSTs are mirrored to canary, GETs are not; clients always get stable's answer.
    let before = canary.hits();
    for _ in 0..5 {
        assert_eq!(c.get("/", &[]).await.backend(), "stable");
    }
    let post = http::Request::post("/")
        .header("host", "t")
        .body(Default::default())
        .unwrap();
    assert_eq!(c.send(post).await.backend(), "stable");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while canary.hits() < before + 1 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(canary.hits(), before + 1, "exactly the POST was mirrored");

    // The next step removes the header route.
    let (code, out) = cli(weir.admin, &["promote"]);
    assert_eq!(code, Some(0), "{out}");
    weir.wait_rollout(Duration::from_secs(5), |s| s["step"] == 5)
        .await;
    assert_eq!(c.get("/", &[("x-canary", "yes")]).await.backend(), "stable");
    // Abort removes the managed routes too.
    cli(weir.admin, &["abort"]);
    let s = weir
        .wait_rollout(Duration::from_secs(5), |s| s["phase"] == "Degraded")
        .await;
    assert_eq!(s["mirror"], serde_json::Value::Null);
    let (_, routes) = common::client::get_text(weir.admin, "/routes").await;
    let routes: serde_json::Value = serde_json::from_str(&routes).unwrap();
    assert_eq!(
        routes["routes"][0]["mirror"],
        serde_json::Value::Null,
        "{routes:#}"
    );
    assert_eq!(
        routes["routes"][0]["header_routes"],
        serde_json::json!([]),
        "{routes:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_survives_a_sigkill_in_the_middle_of_its_ramp() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let dir = common::temp_dir("rollout-ramp-kill");
    let steps = "      - setWeight: 60\n      - pause: {}\n";
    std::fs::write(dir.join("rollout.yaml"), rollout_yaml(steps)).unwrap();
    std::fs::write(dir.join("analysis.yaml"), common::LIVE_TEMPLATE).unwrap();
    // A slow ramp: 10 points every 2 s would take 10 s to reach 0.
    let extra = "  state_file: state.json\n  abort_ramp: {step: 10, interval: 2s}\n";
    std::fs::write(
        dir.join("weir.yaml"),
        config_yaml(stable.addr, canary.addr, extra),
    )
    .unwrap();
    let restart = || Weir::start_with(dir.clone(), dir.join("weir.yaml"), &[]).keep_dir();
    let weir = restart();
    weir.wait_rollout(Duration::from_secs(5), |s| s["step"] == 2)
        .await;
    let (code, out) = cli(weir.admin, &["abort"]);
    assert_eq!(code, Some(0), "{out}");
    // Mid-ramp: the weight is on its way down, not there yet.
    let (_, routes) = common::client::get_text(weir.admin, "/routes").await;
    let routes: serde_json::Value = serde_json::from_str(&routes).unwrap();
    let w = routes["routes"][0]["canary_weight"].as_f64().unwrap();
    assert!(w > 0.0 && w < 60.0, "not mid-ramp: {w}");
    drop(weir); // SIGKILL

    let weir = restart();
    let s = weir.rollout().await;
    assert_eq!(phase(&s), "Degraded", "{s:#}");
    assert_eq!(s["aborted"], true, "{s:#}");
    assert_eq!(
        s["weights"]["canary"], 0.0,
        "the abort did not survive: {s:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_ramp_steps_the_weight_down() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let ramp = "  abort_ramp: {step: 10, interval: 300ms}\n";
    let weir = start(
        stable.addr,
        canary.addr,
        &rollout_yaml("      - setWeight: 50\n      - pause: {}\n"),
        common::LIVE_TEMPLATE,
        ramp,
    );
    weir.wait_rollout(Duration::from_secs(5), |s| s["step"] == 2)
        .await;
    let admin = weir.admin;
    let aborting = tokio::task::spawn_blocking(move || cli(admin, &["abort"]));
    // Watch the weight in force on the route while it ramps.
    let degraded_while_ramping = AtomicBool::new(false);
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        let (_, routes) = common::client::get_text(weir.admin, "/routes").await;
        let routes: serde_json::Value = serde_json::from_str(&routes).unwrap();
        let w = routes["routes"][0]["canary_weight"].as_f64().unwrap();
        if seen.last() != Some(&w) {
            seen.push(w);
        }
        if w == 0.0 {
            break;
        }
        if w > 0.0 && w < 50.0 && phase(&weir.rollout().await) == "Degraded" {
            degraded_while_ramping.store(true, Ordering::SeqCst);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (code, out) = aborting.await.unwrap();
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(seen.last(), Some(&0.0), "{seen:?}");
    // The command was answered, and the abort published, before the ramp ended: the status
    // said Degraded while weights above 0 were still in force.
    assert!(
        degraded_while_ramping.load(Ordering::SeqCst),
        "the abort showed only after the ramp: {seen:?}"
    );
    assert!(
        seen.iter().any(|w| *w > 0.0 && *w < 50.0),
        "no intermediate weight: {seen:?}"
    );
    assert!(
        seen.windows(2).all(|p| p[1] < p[0]),
        "only ever down: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_site_request_cannot_abort_but_weirs_own_clients_can() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let weir = start(
        stable.addr,
        canary.addr,
        &rollout_yaml("      - setWeight: 20\n      - pause: {}\n"),
        common::LIVE_TEMPLATE,
        "",
    );
    weir.wait_rollout(Duration::from_secs(5), |s| s["step"] == 2)
        .await;
    let host = weir.admin.to_string();
    let post = |extra: &str| {
        format!(
            "POST /rollout/abort HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
    };
    let limit = Duration::from_secs(5);
    // What any web page can send without a preflight, with and without the browser's metadata.
    for attack in [
        post("Origin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\nContent-Type: text/plain\r\n"),
        post("Origin: http://evil.example\r\nContent-Type: text/plain\r\n"),
        post("Content-Type: application/x-www-form-urlencoded\r\n"),
    ] {
        let answer = common::client::raw(weir.admin, attack.as_bytes(), limit).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    }
    let s = weir.rollout().await;
    assert_eq!(
        (phase(&s), &s["aborted"]),
        ("Paused", &serde_json::json!(false)),
        "{s:#}"
    );
    weir.wait_log("admin request refused").await;

    // A page of weir's own origin (and the CLI, which the other tests use) may.
    let own = post(&format!(
        "Origin: http://{host}\r\nSec-Fetch-Site: same-origin\r\nX-Weir-Admin: ui\r\n"
    ));
    let answer = common::client::raw(weir.admin, own.as_bytes(), limit).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    weir.wait_rollout(Duration::from_secs(5), |s| phase(s) == "Degraded")
        .await;
    // Logged with where it came from.
    weir.wait_log("admin command").await;
    assert!(weir.log().contains("peer=127.0.0.1:"), "{}", weir.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_file_that_cannot_be_written_is_reported_and_loses_nothing() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let dir = common::temp_dir("rollout-unwritable");
    let steps =
        "      - setWeight: 10\n      - pause: {}\n      - setWeight: 30\n      - pause: {}\n";
    std::fs::write(dir.join("rollout.yaml"), rollout_yaml(steps)).unwrap();
    std::fs::write(dir.join("analysis.yaml"), common::LIVE_TEMPLATE).unwrap();
    std::fs::create_dir(dir.join("state")).unwrap();
    let extra = "  state_file: state/rollout.json\n";
    std::fs::write(
        dir.join("weir.yaml"),
        config_yaml(stable.addr, canary.addr, extra),
    )
    .unwrap();
    let weir = Weir::start_with(dir.clone(), dir.join("weir.yaml"), &[]);
    weir.wait_rollout(Duration::from_secs(5), |s| s["step"] == 2)
        .await;

    // The directory goes away and a file takes its name: no write can succeed there, not even
    // as root (a read-only mode would not stop root).
    std::fs::remove_dir_all(dir.join("state")).unwrap();
    std::fs::write(dir.join("state"), "not a directory").unwrap();
    let (code, out) = cli(weir.admin, &["promote"]);
    assert_eq!(code, Some(0), "{out}");
    let s = weir
        .wait_rollout(Duration::from_secs(5), |s| {
            s["state_file_error"].is_string()
        })
        .await;
    assert_eq!(s["step"], 4, "the rollout went on: {s:#}");
    weir.wait_log("a restart would resume from the last state saved")
        .await;
    let failures = common::weir::sample(
        &weir.metrics().await,
        "weir_rollout_state_save_failures_total",
        &[],
    );
    assert!(failures >= 1.0, "{failures}");
    // Traffic is served all the while.
    let mut c = H1::connect(weir.addr).await;
    assert_eq!(c.get("/", &[]).await.status.as_u16(), 200);

    // Writable again: the next save goes through and the error is gone.
    std::fs::remove_file(dir.join("state")).unwrap();
    std::fs::create_dir(dir.join("state")).unwrap();
    let s = weir
        .wait_rollout(Duration::from_secs(5), |s| s["state_file_error"].is_null())
        .await;
    assert_eq!(s["step"], 4);
    let saved = std::fs::read_to_string(dir.join("state/rollout.json")).unwrap();
    assert!(saved.contains("\"step_index\": 3"), "{saved}");
}

/// Argo's own rollout-secret example, unchanged: its AnalysisTemplate takes the web metric's URL
/// from a Secret key. The Secret is mounted as Kubernetes mounts a Secret volume
/// (`secrets_dir/example-secret/secretUrl`), pointing at a loopback server that answers what the
/// example's successCondition wants; the analysis passes, so the rollout reaches its pause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analysis_reads_its_argument_from_a_mounted_secret() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let web = listener.local_addr().unwrap();
    let asked = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = asked.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                if let Some(line) = head.lines().next() {
                    seen.lock().unwrap().push(line.to_string());
                }
                let body = r#"{"message": "It worked!"}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(answer.as_bytes()).await;
            });
        }
    });
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let dir = common::temp_dir("secret");
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/argo-rollouts/examples/rollout-secret.yaml"
    ))
    .unwrap();
    std::fs::write(dir.join("rollout.yaml"), example).unwrap();
    std::fs::create_dir_all(dir.join("secrets/example-secret")).unwrap();
    std::fs::write(
        dir.join("secrets/example-secret/secretUrl"),
        format!("http://{web}/secret-path/example.json"),
    )
    .unwrap();
    let config = dir.join("weir.yaml");
    std::fs::write(
        &config,
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n  canary: {{addresses: [\"{}\"]}}\n\
             rollout:\n  manifests: [rollout.yaml]\n  route: web\n  secrets_dir: secrets\n",
            stable.addr, canary.addr
        ),
    )
    .unwrap();
    let weir = Weir::start_with(dir, config, &[]);
    let s = weir
        .wait_rollout(Duration::from_secs(20), |s| {
            phase(s) == "Paused" && s["step"].as_u64() == Some(3)
        })
        .await;
    assert_eq!(s["weights"]["canary"], 25.0, "{s:#}");
    let asked = asked.lock().unwrap().clone();
    assert!(
        asked
            .iter()
            .any(|l| l == "GET /secret-path/example.json HTTP/1.1"),
        "the URL from the Secret was used: {asked:?}"
    );
}
