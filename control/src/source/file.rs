//! The file source: reload the config when the file's content changes, or on SIGHUP.
//!
//! Polling compares a hash of the content, not the mtime: a Kubernetes ConfigMap update swaps a
//! symlink, and editors and `cp` can keep or fake timestamps. A reload that fails is handed to
//! the callback as an error; the caller keeps serving the last good table.

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use crate::config::{self, Config, ConfigError, ConfigErrors};

/// How often the file is checked unless told otherwise.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// What the last look at the file found; a new look that finds the same is not reported.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Content(u64),
    /// The I/O error's text: a file that stays missing is reported once, not every poll.
    Unreadable(String),
}

/// A config file and what was last seen of it.
#[derive(Debug)]
pub struct FileSource {
    path: PathBuf,
    seen: Option<Seen>,
}

impl FileSource {
    pub fn new(path: PathBuf) -> Self {
        FileSource { path, seen: None }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Loads the file now and remembers its content, so polling reports only later changes.
    /// Use this for the initial load: the bytes loaded are the bytes remembered, with no window
    /// in which a change could be missed.
    pub async fn load(&mut self) -> Result<Config, ConfigErrors> {
        let (seen, result) = self.read_and_load().await;
        self.seen = Some(seen);
        result
    }

    /// Some(result) when the content differs from what was last seen (or became unreadable);
    /// None when nothing changed.
    pub async fn poll(&mut self) -> Option<Result<Config, ConfigErrors>> {
        let (seen, result) = self.read_and_load().await;
        if self.seen.as_ref() == Some(&seen) {
            return None;
        }
        self.seen = Some(seen);
        Some(result)
    }

    /// Polls every `interval` and reloads unconditionally whenever `reloads` yields (SIGHUP: the
    /// operator asked, e.g. after rotating TLS files the config merely points to). Calls
    /// `on_change` with each result. Runs until the task is dropped.
    pub async fn run(
        mut self,
        interval: Duration,
        mut reloads: Option<mpsc::Receiver<()>>,
        mut on_change: impl FnMut(Result<Config, ConfigErrors>) + Send + 'static,
    ) {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {
                    if let Some(result) = self.poll().await {
                        on_change(result);
                    }
                }
                request = next_reload(&mut reloads) => match request {
                    Some(()) => {
                        tracing::info!(path = %self.path.display(), "reloading config on request");
                        on_change(self.load().await);
                    }
                    // The sender is gone: keep polling, stop listening.
                    None => reloads = None,
                },
            }
        }
    }

    async fn read_and_load(&self) -> (Seen, Result<Config, ConfigErrors>) {
        match tokio::fs::read(&self.path).await {
            Ok(bytes) => (Seen::Content(hash(&bytes)), self.parse(&bytes)),
            Err(err) => {
                let message = format!("cannot read config file: {err}");
                (
                    Seen::Unreadable(message.clone()),
                    Err(self.whole_file_error(message)),
                )
            }
        }
    }

    fn parse(&self, bytes: &[u8]) -> Result<Config, ConfigErrors> {
        match std::str::from_utf8(bytes) {
            Ok(text) => config::from_str(text, &self.path),
            Err(err) => Err(self.whole_file_error(format!("config file is not UTF-8: {err}"))),
        }
    }

    fn whole_file_error(&self, message: String) -> ConfigErrors {
        ConfigErrors::from(ConfigError {
            file: self.path.clone(),
            path: ".".to_string(),
            line: None,
            message,
        })
    }
}

async fn next_reload(reloads: &mut Option<mpsc::Receiver<()>>) -> Option<()> {
    match reloads {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

fn hash(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

/// A channel that yields once per SIGHUP; signals that arrive while one is pending coalesce.
pub fn sighup_reloads() -> std::io::Result<mpsc::Receiver<()>> {
    use tokio::signal::unix::{signal, SignalKind};

    let mut hangups = signal(SignalKind::hangup())?;
    let (sender, receiver) = mpsc::channel(1);
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            if let Err(mpsc::error::TrySendError::Closed(())) = sender.try_send(()) {
                break;
            }
        }
    });
    Ok(receiver)
}

/// Watches `path`: polls its content every `interval` and reloads on SIGHUP, calling `on_change`
/// with each freshly loaded result. The content present when watching starts counts as already
/// seen (the caller loaded it); for a gap-free start use [`FileSource::load`] then
/// [`FileSource::run`]. Returns only if the SIGHUP handler cannot be installed.
pub async fn watch(
    path: PathBuf,
    interval: Duration,
    on_change: impl FnMut(Result<Config, ConfigErrors>) + Send + 'static,
) -> std::io::Result<()> {
    let reloads = sighup_reloads()?;
    let mut source = FileSource::new(path);
    source.seen = Some(source.read_and_load().await.0);
    source.run(interval, Some(reloads), on_change).await;
    Ok(())
}
