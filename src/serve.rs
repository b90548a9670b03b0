//! `weir run`: bind what the config asks for, put its table in force, follow the file, drain on
//! SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;
use weir_control::config::{Config, ConfigErrors};
use weir_control::source::file::{sighup_reloads, FileSource, DEFAULT_POLL_INTERVAL};
use weir_proxy::listen::spec::ListenerSpec;
use weir_proxy::listen::{bind, serve, ReloadableTls, Shutdown};
use weir_proxy::DataPlane;

pub async fn run_file(path: PathBuf) -> anyhow::Result<()> {
    let mut source = FileSource::new(path.clone());
    let config = source.load().await.map_err(|errors| anyhow!("{errors}"))?;
    let running = Arc::new(start(config).await?);

    let hangups = sighup_reloads().context("cannot watch SIGHUP")?;
    let follower = running.clone();
    tokio::spawn(
        source.run(DEFAULT_POLL_INTERVAL, Some(hangups), move |result| {
            follower.reload(result)
        }),
    );

    wait_for_stop_signal().await?;
    running.drain().await;
    Ok(())
}

pub async fn wait_for_stop_signal() -> anyhow::Result<()> {
    let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: draining"),
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: draining"),
    }
    Ok(())
}

/// A serving weir: its data plane, its bound addresses, and how to stop it.
pub struct Running {
    pub plane: Arc<DataPlane>,
    pub listeners: Vec<SocketAddr>,
    pub admin: SocketAddr,
    listener_specs: Vec<ListenerSpec>,
    tls: Vec<Option<Arc<ReloadableTls>>>,
    stop: watch::Sender<bool>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

pub async fn start(config: Config) -> anyhow::Result<Running> {
    let plane = DataPlane::new();
    let source = config.source_file.display().to_string();
    plane
        .apply(&config.table)
        .map_err(|errors| anyhow!("{source}: the routing table was refused:\n{errors}"))?;
    plane.metrics.config_reload(true);

    let (stop, shutdown) = Shutdown::new();
    let connections = Arc::new(Semaphore::new(config.limits.max_connections));
    let mut tasks = Vec::new();
    let mut bound = Vec::new();
    let mut tls_handles = Vec::new();
    for spec in &config.listeners {
        let tls = match &spec.tls {
            Some(t) => Some(Arc::new(
                ReloadableTls::load(t).map_err(|e| anyhow!("listener {}: {e}", spec.name))?,
            )),
            None => None,
        };
        let listener = bind(spec.address)
            .await
            .map_err(|e| anyhow!("listener {}: {e}", spec.name))?;
        let address = listener.local_addr().context("listener address")?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        tracing::info!(listener = %spec.name, "serving on {scheme}://{address}");
        bound.push(address);
        tls_handles.push(tls.clone());
        tasks.push(tokio::spawn(serve(
            listener,
            tls,
            plane.proxy.clone(),
            config.limits.clone(),
            connections.clone(),
            shutdown.clone(),
        )));
    }
    let admin_listener = bind(config.admin.address)
        .await
        .map_err(|e| anyhow!("admin: {e}"))?;
    let admin = admin_listener.local_addr().context("admin address")?;
    tracing::info!("admin on http://{admin} (/metrics /ready /live /routes)");
    tasks.push(tokio::spawn(weir_proxy::admin::serve_admin(
        admin_listener,
        plane.clone(),
        shutdown,
    )));

    Ok(Running {
        plane,
        listeners: bound,
        admin,
        listener_specs: config.listeners,
        tls: tls_handles,
        stop,
        tasks: std::sync::Mutex::new(tasks),
    })
}

impl Running {
    /// A new config from the source: swap its table in, or keep the old one and say why.
    pub fn reload(&self, result: Result<Config, ConfigErrors>) {
        let config = match result {
            Ok(config) => config,
            Err(errors) => {
                self.plane.metrics.config_reload(false);
                tracing::error!(
                    "config reload failed; the previous routing table keeps serving:\n{errors}"
                );
                return;
            }
        };
        match self.plane.apply(&config.table) {
            Ok(generation) => {
                self.plane.metrics.config_reload(true);
                tracing::info!(
                    generation,
                    routes = config.table.routes.len(),
                    "config reloaded"
                );
            }
            Err(errors) => {
                self.plane.metrics.config_reload(false);
                tracing::error!(
                    "config reload refused; the previous routing table keeps serving:\n{errors}"
                );
                return;
            }
        }
        if config
            .listeners
            .iter()
            .map(|l| (&l.name, l.address))
            .ne(self.listener_specs.iter().map(|l| (&l.name, l.address)))
        {
            tracing::warn!("listener addresses changed in the config: that takes a restart");
        }
        // Certificates are re-read on every reload (rotation without restart).
        for (spec, tls) in config.listeners.iter().zip(&self.tls) {
            if let (Some(spec_tls), Some(handle)) = (&spec.tls, tls) {
                if let Err(err) = handle.reload(spec_tls) {
                    tracing::error!(listener = %spec.name, "TLS reload failed, the old certificate stays: {err}");
                }
            }
        }
    }

    /// Stop accepting; let in-flight requests finish within the grace period.
    pub async fn drain(&self) {
        let _ = self.stop.send(true);
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        for task in tasks {
            let _ = task.await;
        }
    }
}
