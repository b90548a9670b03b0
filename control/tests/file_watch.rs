//! The file source: content changes are delivered, broken files become errors, unchanged
//! content is silent, and a requested reload always delivers.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::TempDir;
use tokio::sync::mpsc;
use tokio::time::timeout;
use weir_control::config::{Config, ConfigErrors};
use weir_control::source::file::FileSource;

const INTERVAL: Duration = Duration::from_millis(50);
const WAIT: Duration = Duration::from_secs(5);

fn config_text(weight: u32) -> String {
    format!(
        "listeners: [{{address: 127.0.0.1:0}}]
routes:
  - name: app
    stable: {{addresses: [127.0.0.1:9001]}}
    canary: {{addresses: [127.0.0.1:9002]}}
    canary_weight: {weight}
"
    )
}

type Results = mpsc::UnboundedReceiver<Result<Config, ConfigErrors>>;

/// Loads `file` once, then runs the source in the background; results arrive on the channel.
async fn start(file: PathBuf, reloads: Option<mpsc::Receiver<()>>) -> (Config, Results) {
    let mut source = FileSource::new(file);
    let initial = source.load().await.unwrap_or_else(|e| panic!("{e}"));
    let (sender, results) = mpsc::unbounded_channel();
    tokio::spawn(source.run(INTERVAL, reloads, move |result| {
        let _ = sender.send(result);
    }));
    (initial, results)
}

async fn next(results: &mut Results) -> Result<Config, ConfigErrors> {
    timeout(WAIT, results.recv())
        .await
        .expect("a callback in time")
        .expect("channel open")
}

/// Several poll intervals pass without any callback.
async fn assert_quiet(results: &mut Results) {
    let outcome = timeout(INTERVAL * 6, results.recv()).await;
    assert!(outcome.is_err(), "unexpected callback: {outcome:?}");
}

fn weight(config: &Config) -> u16 {
    config.table.routes[0].canary_weight_bp()
}

#[tokio::test]
async fn change_is_delivered_and_unchanged_content_is_silent() {
    let dir = TempDir::new("watch-change");
    let file = dir.write("weir.yaml", &config_text(10));
    let (initial, mut results) = start(file.clone(), None).await;
    assert_eq!(weight(&initial), 1000);
    assert_quiet(&mut results).await;

    std::fs::write(&file, config_text(20)).expect("rewrite");
    let config = next(&mut results).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(weight(&config), 2000);

    // Same bytes written again: a new mtime, but nothing to report.
    std::fs::write(&file, config_text(20)).expect("rewrite");
    assert_quiet(&mut results).await;
}

#[tokio::test]
async fn broken_file_is_an_error_then_recovers() {
    let dir = TempDir::new("watch-broken");
    let file = dir.write("weir.yaml", &config_text(10));
    let (_, mut results) = start(file.clone(), None).await;

    std::fs::write(
        &file,
        config_text(10).replace("canary_weight: 10", "canary_weight: x"),
    )
    .expect("break");
    let errors = next(&mut results).await.expect_err("broken config");
    assert!(
        errors.to_string().contains("routes[0].canary_weight"),
        "{errors}"
    );

    std::fs::write(&file, config_text(30)).expect("fix");
    assert_eq!(
        weight(&next(&mut results).await.expect("fixed config")),
        3000
    );
}

#[tokio::test]
async fn missing_file_is_reported_once() {
    let dir = TempDir::new("watch-missing");
    let file = dir.write("weir.yaml", &config_text(10));
    let (_, mut results) = start(file.clone(), None).await;

    std::fs::remove_file(&file).expect("remove");
    let errors = next(&mut results).await.expect_err("missing file");
    assert!(
        errors.to_string().contains("cannot read config file"),
        "{errors}"
    );
    assert_quiet(&mut results).await;

    std::fs::write(&file, config_text(40)).expect("restore");
    assert_eq!(
        weight(&next(&mut results).await.expect("restored config")),
        4000
    );
}

#[tokio::test]
async fn symlink_swap_is_noticed() {
    // A Kubernetes ConfigMap update: the file is a symlink that is replaced, not rewritten.
    let dir = TempDir::new("watch-symlink");
    let first = dir.write("v1.yaml", &config_text(10));
    let second = dir.write("v2.yaml", &config_text(50));
    let link = dir.path().join("weir.yaml");
    std::os::unix::fs::symlink(&first, &link).expect("symlink");
    let (_, mut results) = start(link.clone(), None).await;

    let staged = dir.path().join("weir.yaml.tmp");
    std::os::unix::fs::symlink(&second, &staged).expect("symlink");
    std::fs::rename(&staged, &link).expect("swap");
    assert_eq!(
        weight(&next(&mut results).await.expect("swapped config")),
        5000
    );
}

#[tokio::test]
async fn requested_reload_delivers_even_when_unchanged() {
    let dir = TempDir::new("watch-reload");
    let file = dir.write("weir.yaml", &config_text(10));
    let (trigger, reloads) = mpsc::channel(1);
    let (_, mut results) = start(file, Some(reloads)).await;

    trigger.send(()).await.expect("send");
    assert_eq!(
        weight(&next(&mut results).await.expect("reloaded config")),
        1000
    );
    assert_quiet(&mut results).await;

    // A closed trigger leaves polling running and does not spin.
    drop(trigger);
    assert_quiet(&mut results).await;
}
