//! Many rollouts in one weir, end to end: two Rollouts on two routes, one aborted by its
//! analysis while the other is promoted, neither touching the other's route or state file;
//! both listed by `GET /rollouts` and `weir status`, each reached by name through the API and
//! the CLI, `/rollout` refusing to guess which one is meant.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::backend::{self, Behaviour};
use common::client;
use common::load::Load;
use common::weir::Weir;

fn rollout(name: &str, steps: &str, analysis: bool) -> String {
    let analysis = match analysis {
        true => format!("      analysis: {{templates: [{{templateName: live}}], args: [{{name: route, value: {name}-route}}]}}\n"),
        false => String::new(),
    };
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {{name: {name}}}\nspec:\n  replicas: 3\n  strategy:\n    canary:\n\
         \x20     stableService: {name}-stable\n      canaryService: {name}-canary\n{analysis}      steps:\n{steps}"
    )
}

fn cli(admin: SocketAddr, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .args(["--admin", &admin.to_string()])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

async fn get(weir: &Weir, path: &str) -> (u16, serde_json::Value) {
    let (status, body) = client::get_text(weir.admin, path).await;
    (
        status.as_u16(),
        serde_json::from_str(&body).unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_rollouts_one_aborted_one_promoted_neither_touching_the_other() {
    let errors = Arc::new(AtomicU64::new(1000));
    let start = |name| backend::start(name, Behaviour::default());
    let (shop_stable, cart_stable, cart_canary) = (
        start("stable").await,
        start("stable").await,
        start("canary").await,
    );
    let shop_canary = backend::start(
        "canary",
        Behaviour {
            error_every: Some(errors.clone()),
            ..Default::default()
        },
    )
    .await;

    let dir = common::temp_dir("rollouts");
    std::fs::write(dir.join("analysis.yaml"), common::LIVE_TEMPLATE).unwrap();
    std::fs::write(
        dir.join("shop.yaml"),
        rollout("shop", "      - setWeight: 20\n      - pause: {}\n", true),
    )
    .unwrap();
    std::fs::write(
        dir.join("cart.yaml"),
        rollout(
            "cart",
            "      - setWeight: 50\n      - pause: {duration: 3s}\n      - setWeight: 80\n      - pause: {duration: 1s}\n",
            false,
        ),
    )
    .unwrap();
    // shop keeps its state in the state directory (`state/shop.json`), cart in its own file.
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let config = dir.join("weir.yaml");
    std::fs::write(
        &config,
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n\
             - name: shop-route\n  match: {{path_prefix: /shop}}\n  stable: {{addresses: [\"{}\"]}}\n  canary: {{addresses: [\"{}\"]}}\n\
             - name: cart-route\n  match: {{path_prefix: /cart}}\n  stable: {{addresses: [\"{}\"]}}\n  canary: {{addresses: [\"{}\"]}}\n\
             state_dir: state\n\
             rollouts:\n\
             - manifests: [shop.yaml, analysis.yaml]\n  services: {{shop-stable: shop-route, shop-canary: shop-route}}\n\
             - manifests: [cart.yaml, analysis.yaml]\n  services: {{cart-stable: cart-route, cart-canary: cart-route}}\n  state_file: cart.json\n",
            shop_stable.addr, shop_canary.addr, cart_stable.addr, cart_canary.addr
        ),
    )
    .unwrap();
    let weir = Weir::start_with(dir.clone(), config, &[]);
    let shop_load = Load::start_at(weir.addr, "/shop/items", 300, Duration::from_secs(40));
    let cart_load = Load::start_at(weir.addr, "/cart/items", 100, Duration::from_secs(40));

    // Both listed; /rollout refuses to guess.
    let (status, list) = get(&weir, "/rollouts").await;
    assert_eq!(status, 200, "{list:#}");
    let names: Vec<&str> = list["rollouts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["shop", "cart"], "{list:#}");
    let (status, refused) = get(&weir, "/rollout").await;
    assert_eq!(status, 409, "{refused:#}");
    assert!(refused["error"]
        .as_str()
        .unwrap_or("")
        .contains("use /rollouts/NAME"));

    // shop pauses at 20 %; its canary goes bad; it aborts, while cart goes on to the end.
    let wait = |name: &'static str, limit: u64, done: fn(&serde_json::Value) -> bool| {
        let weir = &weir;
        async move {
            let started = std::time::Instant::now();
            loop {
                let (_, s) = get(weir, &format!("/rollouts/{name}")).await;
                if done(&s) {
                    return s;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(limit),
                    "{name} never got there: {s:#}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    wait("shop", 10, |s| {
        s["phase"] == "Paused" && s["weights"]["canary"] == 20.0
    })
    .await;
    errors.store(20, Ordering::SeqCst);
    let shop = wait("shop", 15, |s| s["phase"] == "Degraded").await;
    assert_eq!(shop["weights"]["canary"], 0.0);
    let cart = wait("cart", 20, |s| s["phase"] == "Healthy").await;
    assert_eq!(
        (cart["aborted"].as_bool(), cart["promoted"].as_bool()),
        (Some(false), Some(true)),
        "{cart:#}"
    );
    // The abort did not touch cart's route, nor the promotion shop's.
    let (_, shop) = get(&weir, "/rollouts/shop").await;
    assert_eq!(
        (shop["phase"].as_str(), shop["weights"]["canary"].as_f64()),
        (Some("Degraded"), Some(0.0))
    );
    let metrics = weir.metrics().await;
    assert!(
        metrics.contains("weir_rollout_aborts_total{rollout=\"shop\"} 1"),
        "{metrics}"
    );
    assert!(
        !metrics.contains("weir_rollout_aborts_total{rollout=\"cart\"} 1"),
        "{metrics}"
    );
    // Each state file holds its own rollout.
    let state = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap_or_default())
            .unwrap_or_default()
    };
    let (shop_state, cart_state) = (state("state/shop.json"), state("cart.json"));
    assert_eq!(
        (
            shop_state["rollout"].as_str(),
            shop_state["aborted"].as_bool()
        ),
        (Some("shop"), Some(true)),
        "{shop_state:#}"
    );
    assert_eq!(
        (
            cart_state["rollout"].as_str(),
            cart_state["aborted"].as_bool()
        ),
        (Some("cart"), Some(false)),
        "{cart_state:#}"
    );

    // The CLI: a line each without a name, one rollout's view with it, commands by name.
    let (code, out) = cli(weir.admin, &["status"]);
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines.len() == 3, "{out}");
    assert!(
        lines[1].starts_with("shop") && lines[1].contains("Degraded"),
        "{out}"
    );
    assert!(
        lines[2].starts_with("cart") && lines[2].contains("Healthy"),
        "{out}"
    );
    let (code, out) = cli(weir.admin, &["status", "cart"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Name:      cart"), "{out}");
    let (code, out) = cli(weir.admin, &["retry"]);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("name one: shop, cart"), "{out}");
    let (code, out) = cli(weir.admin, &["status", "nope"]);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("no rollout is named \"nope\""), "{out}");
    errors.store(1000, Ordering::SeqCst);
    let (code, out) = cli(weir.admin, &["retry", "shop"]);
    assert_eq!(code, Some(0), "{out}");
    wait("shop", 10, |s| s["phase"] != "Degraded").await;
    let (_, cart) = get(&weir, "/rollouts/cart").await;
    assert_eq!(
        cart["phase"], "Healthy",
        "retrying shop touched cart: {cart:#}"
    );
    shop_load.stop().await;
    cart_load.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_rollouts_claiming_one_route_are_refused_naming_both() {
    let dir = common::temp_dir("rollouts-claim");
    std::fs::write(
        dir.join("a.yaml"),
        rollout("a", "      - setWeight: 20\n", false),
    )
    .unwrap();
    std::fs::write(
        dir.join("b.yaml"),
        rollout("b", "      - setWeight: 20\n", false),
    )
    .unwrap();
    let config = dir.join("weir.yaml");
    std::fs::write(
        &config,
        "listeners: [{address: \"127.0.0.1:0\"}]\n\
         routes:\n- name: web\n  stable: {addresses: [\"127.0.0.1:1\"]}\n  canary: {addresses: [\"127.0.0.1:2\"]}\n\
         rollouts:\n- manifests: [a.yaml]\n  route: web\n- manifests: [b.yaml]\n  route: web\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("rollouts[1]: route \"web\" is driven by rollouts[0] already"),
        "{text}"
    );
}

/// A reload while two rollouts are under way — the config's table changed, one rollout's manifest
/// broken meanwhile — leaves both where they were: each weight stays on its route in the new
/// table, and the broken manifest (read at start only) changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_with_a_broken_manifest_leaves_both_rollouts_as_they_were() {
    let dir = common::temp_dir("rollouts-reload");
    std::fs::write(
        dir.join("a.yaml"),
        rollout("a", "      - setWeight: 20\n      - pause: {}\n", false),
    )
    .unwrap();
    std::fs::write(
        dir.join("b.yaml"),
        rollout("b", "      - setWeight: 40\n      - pause: {}\n", false),
    )
    .unwrap();
    let config = dir.join("weir.yaml");
    let yaml = |extra: &str| {
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n\
             - name: a\n  match: {{path_prefix: /a}}\n  stable: {{addresses: [\"127.0.0.1:1\"]}}\n  canary: {{addresses: [\"127.0.0.1:2\"]}}\n\
             - name: b\n  match: {{path_prefix: /b}}\n  stable: {{addresses: [\"127.0.0.1:3\"]}}\n  canary: {{addresses: [\"127.0.0.1:4\"]}}\n\
             {extra}\
             rollouts:\n- manifests: [a.yaml]\n  route: a\n- manifests: [b.yaml]\n  route: b\n"
        )
    };
    std::fs::write(&config, yaml("")).unwrap();
    let weir = Weir::start_with(dir.clone(), config.clone(), &[]);
    let weights = |routes: &serde_json::Value| -> Vec<(String, f64)> {
        routes["routes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let name = r["name"].as_str().unwrap_or("").to_string();
                (name, r["canary_weight"].as_f64().unwrap_or(-1.0))
            })
            .collect()
    };
    let started = std::time::Instant::now();
    loop {
        let (_, routes) = get(&weir, "/routes").await;
        if weights(&routes)[..2] == [("a".to_string(), 20.0), ("b".to_string(), 40.0)] {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{routes:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    std::fs::write(
        dir.join("a.yaml"),
        "kind: Rollout\nspec: [not, a, rollout\n",
    )
    .unwrap();
    let generation = weir.generation().await;
    std::fs::write(
        &config,
        yaml("- name: c\n  match: {path_prefix: /c}\n  stable: {addresses: [\"127.0.0.1:5\"]}\n"),
    )
    .unwrap();
    weir.signal("HUP");
    weir.wait_generation_above(generation).await;
    let (_, routes) = get(&weir, "/routes").await;
    assert_eq!(
        weights(&routes),
        [
            ("a".to_string(), 20.0),
            ("b".to_string(), 40.0),
            ("c".to_string(), 0.0)
        ],
        "{routes:#}"
    );
    for name in ["a", "b"] {
        let (_, s) = get(&weir, &format!("/rollouts/{name}")).await;
        assert_eq!(
            (s["phase"].as_str(), s["step"].as_u64()),
            (Some("Paused"), Some(2)),
            "{s:#}"
        );
    }
}

/// A webhook for a rollout that does not exist would wait for events that never come: weir
/// refuses to start, naming it and the rollouts there are.
#[test]
fn a_webhook_for_an_unknown_rollout_is_refused_at_start() {
    let dir = common::temp_dir("rollouts-hook");
    std::fs::write(
        dir.join("a.yaml"),
        rollout("a", "      - setWeight: 20\n", false),
    )
    .unwrap();
    let config = dir.join("weir.yaml");
    std::fs::write(
        &config,
        "listeners: [{address: \"127.0.0.1:0\"}]\nadmin: {address: \"127.0.0.1:0\"}\n\
         routes:\n- name: web\n  stable: {addresses: [\"127.0.0.1:1\"]}\n  canary: {addresses: [\"127.0.0.1:2\"]}\n\
         rollouts:\n- manifests: [a.yaml]\n  route: web\n\
         notifications:\n- url: http://127.0.0.1:1/\n  rollouts: [a, nope]\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["run", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("weir started with a webhook for an unknown rollout");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(
        text.contains("notifications[0].rollouts: no rollout is named \"nope\" (there are: a)"),
        "{text}"
    );
}
