//! The rollout page in a real headless Chromium (Debian's chromium and chromium-driver, driven
//! over WebDriver): weir runs a rollout under load; the page shows its phase and weight, draws
//! the traffic, and its Promote button moves the rollout on; a page on another origin, in the
//! same browser, cannot abort it. A screenshot of the run is written for the docs. With two
//! rollouts, the page lists both and promotes the one it shows.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::backend::{self, Behaviour};
use common::load::Load;
use common::webdriver::Browser;
use common::weir::Weir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ROLLOUT: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop}
spec:
  strategy:
    canary:
      stableService: shop-stable
      canaryService: shop-canary
      analysis: {templates: [{templateName: live}]}
      steps:
      - setWeight: 20
      - pause: {}
      - setWeight: 60
      - pause: {}
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: live}
spec:
  metrics:
  - name: success-rate
    initialDelay: 6s
    interval: 1s
    inconclusiveLimit: 10
    successCondition: result >= 0.98
    provider:
      plugin:
        weir/live: {route: web, backend: canary, metric: success-rate, window: 5s, minRequests: 30}
"#;

/// A page on another origin (another port of 127.0.0.1: same site, other origin) that tries
/// every way a page can to abort the rollout through the admin API.
async fn hostile_page(admin: SocketAddr) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let html = format!(
        "<!doctype html><title>hostile</title><script>\n\
         const url = 'http://{admin}/rollout/abort';\n\
         const named = 'http://{admin}/rollouts/shop/abort';\n\
         Promise.allSettled([\n\
           fetch(named, {{method: 'POST', mode: 'no-cors'}}),\n\
           fetch(named, {{method: 'POST', headers: {{'X-Weir-Admin': 'ui'}}}}),\n\
           fetch(url, {{method: 'POST', mode: 'no-cors'}}),\n\
           fetch(url, {{method: 'POST', headers: {{'X-Weir-Admin': 'ui'}}}}),\n\
           fetch(url, {{method: 'POST', mode: 'no-cors', headers: {{'Content-Type': 'text/plain'}}, body: 'x'}}),\n\
         ]).then(() => {{ document.title = 'tried'; }});\n\
         </script>"
    );
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let html = html.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                    html.len()
                );
                let _ = conn.write_all(answer.as_bytes()).await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_rollout_draws_its_traffic_and_promotes_it() {
    let stable = backend::start("stable", Behaviour::default()).await;
    let canary = backend::start("canary", Behaviour::default()).await;
    let dir = common::temp_dir("ui");
    std::fs::write(dir.join("rollout.yaml"), ROLLOUT).unwrap();
    let config = dir.join("weir.yaml");
    std::fs::write(
        &config,
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n- name: web\n  stable: {{addresses: [\"{}\"]}}\n  canary: {{addresses: [\"{}\"]}}\n\
             rollout:\n  manifests: [rollout.yaml]\n  services: {{shop-stable: web, shop-canary: web}}\n",
            stable.addr, canary.addr
        ),
    )
    .unwrap();
    let weir = Weir::start_with(dir, config, &[]);
    let load = Load::start(weir.addr, 200, Duration::from_secs(60));
    weir.wait_rollout(Duration::from_secs(10), |s| s["phase"] == "Paused")
        .await;
    let browser = Browser::start().await;

    // Another origin tries to abort: the browser sends its requests, weir refuses them all.
    let hostile = hostile_page(weir.admin).await;
    browser.goto(&format!("http://{hostile}/")).await;
    browser
        .wait_for(
            "the hostile page's requests",
            Duration::from_secs(10),
            "return document.title === 'tried'",
        )
        .await;
    let s = weir.rollout().await;
    assert_eq!(
        s["phase"], "Paused",
        "a page on another origin aborted: {s:#}"
    );
    assert_eq!(s["aborted"], false);
    assert_eq!(s["weights"]["canary"], 20.0);

    // weir's own page.
    let page = format!("http://{}/ui", weir.admin);
    browser.goto(&page).await;
    browser
        .wait_for(
            "phase and weight shown",
            Duration::from_secs(10),
            "return document.getElementById('phase').textContent === 'Paused' \
             && document.getElementById('weight').textContent === '20' \
             && document.getElementById('step').textContent === '2'",
        )
        .await;
    // Traffic drawn: both sides' request rates have points (a few seconds of load).
    browser
        .wait_for(
            "request-rate chart with points",
            Duration::from_secs(15),
            "const c = document.querySelector('#chart-rate polyline.series.canary'); \
             const s = document.querySelector('#chart-rate polyline.series.stable'); \
             return !!c && !!s && c.getAttribute('points').split(' ').length >= 3 \
                 && s.getAttribute('points').split(' ').length >= 3",
        )
        .await;
    // The background analysis, with its measurements.
    browser
        .wait_for(
            "the analysis run and its measurements",
            Duration::from_secs(20),
            "const a = document.getElementById('analysis'); \
             const cells = [...a.querySelectorAll('tbody tr td')].map((td) => td.textContent); \
             return a.innerText.includes('background') && cells[0] === 'success-rate' \
                 && cells[2] !== undefined && cells[2] !== '–' && cells[2].length > 0",
        )
        .await;
    browser
        .wait_for(
            "weight chart at 20 %",
            Duration::from_secs(5),
            "const w = document.querySelector('#chart-weight polyline.series.canary'); \
             return !!w && w.getAttribute('points').split(' ').length >= 3",
        )
        .await;

    // Promote: the rollout moves to its next step (60 %, paused again).
    browser.click("#promote").await;
    weir.wait_rollout(Duration::from_secs(10), |s| {
        s["step"] == 4 && s["weights"]["canary"] == 60.0
    })
    .await;
    browser
        .wait_for(
            "the page follows the promotion",
            Duration::from_secs(5),
            "return document.getElementById('weight').textContent === '60' \
             && document.getElementById('step').textContent === '4'",
        )
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let png = browser.screenshot().await;
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG screenshot");
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("weir-ui.png");
    std::fs::write(&shot, &png).unwrap();
    eprintln!("screenshot: {}", shot.display());
    load.stop().await;
}

/// Two rollouts: the page lists both with their phase and weight, shows the first, and a click
/// on the second shows it; its Promote button moves that rollout, not the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_lists_several_rollouts_and_promotes_the_one_shown() {
    let start = |name| backend::start(name, Behaviour::default());
    let (a, b, c, d) = (
        start("stable").await,
        start("canary").await,
        start("stable").await,
        start("canary").await,
    );
    let dir = common::temp_dir("ui-many");
    let rollout = |name: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {{name: {name}}}\nspec:\n  strategy:\n    canary:\n\
             \x20     stableService: {name}-stable\n      canaryService: {name}-canary\n\
             \x20     steps:\n      - setWeight: 20\n      - pause: {{}}\n      - setWeight: 60\n      - pause: {{}}\n"
        )
    };
    std::fs::write(dir.join("shop.yaml"), rollout("shop")).unwrap();
    std::fs::write(dir.join("cart.yaml"), rollout("cart")).unwrap();
    let config = dir.join("weir.yaml");
    std::fs::write(
        &config,
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\nadmin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n\
             - name: shop\n  match: {{path_prefix: /shop}}\n  stable: {{addresses: [\"{}\"]}}\n  canary: {{addresses: [\"{}\"]}}\n\
             - name: cart\n  match: {{path_prefix: /cart}}\n  stable: {{addresses: [\"{}\"]}}\n  canary: {{addresses: [\"{}\"]}}\n\
             rollouts:\n\
             - manifests: [shop.yaml]\n  route: shop\n\
             - manifests: [cart.yaml]\n  route: cart\n",
            a.addr, b.addr, c.addr, d.addr
        ),
    )
    .unwrap();
    let weir = Weir::start_with(dir, config, &[]);
    let browser = Browser::start().await;
    browser.goto(&format!("http://{}/ui", weir.admin)).await;
    browser
        .wait_for(
            "both rollouts listed, the first shown",
            Duration::from_secs(10),
            "const items = [...document.querySelectorAll('#rollout-list li')].map((li) => li.textContent); \
             return items.length === 2 && items[0].startsWith('shop · Paused') \
                 && items[1].startsWith('cart · Paused') && items[1].includes('canary 20%') \
                 && document.getElementById('rollout-name').textContent.startsWith('shop')",
        )
        .await;
    browser.click("#rollout-list li:nth-child(2) a").await;
    browser
        .wait_for(
            "the second shown",
            Duration::from_secs(5),
            "return document.getElementById('rollout-name').textContent.startsWith('cart')",
        )
        .await;
    browser.click("#promote").await;
    let started = std::time::Instant::now();
    loop {
        let (_, body) = common::client::get_text(weir.admin, "/rollouts").await;
        let list: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let weight = |i: usize| list["rollouts"][i]["canary_weight"].as_f64();
        if weight(1) == Some(60.0) {
            assert_eq!(weight(0), Some(20.0), "the other rollout moved: {list:#}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "cart was not promoted: {list:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
