//! `weir run`: bind what the config asks for, put its table in force, follow the file, drain on
//! SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use weir_control::config::{Config, ConfigErrors};
use weir_control::owner::TableOwner;
use weir_control::rollout::RolloutHandle;
use weir_control::source::file::{sighup_reloads, FileSource, DEFAULT_POLL_INTERVAL};
use weir_proxy::access_log::{AccessLogSpec, Destination};
use weir_proxy::listen::spec::{ListenerSpec, ListenerTls};
use weir_proxy::listen::{bind, serve, server_config, ConnectionLimit, ReloadableTls, Shutdown};
use weir_proxy::DataPlane;

use crate::rollout_api::token_for;
use crate::workers::Workers;

pub async fn run_file(path: PathBuf, workers: &Workers) -> anyhow::Result<()> {
    let mut source = FileSource::new(path.clone());
    let config = source.load().await.map_err(|errors| anyhow!("{errors}"))?;
    // Signal handlers first: a SIGHUP or SIGTERM that arrives while starting must not kill
    // weir with the default action.
    let hangups = sighup_reloads().context("cannot watch SIGHUP")?;
    let mut reopens = signal(SignalKind::user_defined1()).context("cannot watch SIGUSR1")?;
    let stop = StopSignal::install()?;
    let running = Arc::new(start(config, workers).await?);

    // SIGUSR1: the access log's file is opened again (logrotate moved it).
    let plane = running.plane.clone();
    tokio::spawn(async move {
        while reopens.recv().await.is_some() {
            tracing::info!("SIGUSR1: reopening the access log");
            plane.access_log.reopen();
        }
    });

    let follower = running.clone();
    tokio::spawn(
        source.run(DEFAULT_POLL_INTERVAL, Some(hangups), move |result| {
            follower.reload(result)
        }),
    );

    stop.wait().await;
    running.drain().await;
    running.plane.access_log.flush();
    Ok(())
}

/// SIGTERM or SIGINT: time to drain.
pub struct StopSignal {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl StopSignal {
    pub fn install() -> anyhow::Result<Self> {
        Ok(StopSignal {
            term: signal(SignalKind::terminate()).context("cannot watch SIGTERM")?,
            int: signal(SignalKind::interrupt()).context("cannot watch SIGINT")?,
        })
    }

    pub async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => tracing::info!("SIGTERM: draining"),
            _ = self.int.recv() => tracing::info!("SIGINT: draining"),
        }
    }
}

/// A serving weir: its data plane, its bound addresses, and how to stop it.
pub struct Running {
    pub plane: Arc<DataPlane>,
    /// Every rollout, in the config's order.
    pub rollouts: Vec<RolloutHandle>,
    /// Who decides the table in force: the file, the rollout or the Kubernetes source.
    owner: TableOwner,
    pub listeners: Vec<SocketAddr>,
    pub admin: SocketAddr,
    listener_specs: Vec<ListenerSpec>,
    tls: Vec<Option<Arc<ReloadableTls>>>,
    stop: watch::Sender<bool>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

/// Binds the config's listeners and serves them on every worker; the control plane, the admin
/// listener and the upkeep run on the caller's (worker 0's) runtime.
pub async fn start(config: Config, workers: &Workers) -> anyhow::Result<Running> {
    crate::open_files::raise_and_log(config.limits.max_connections);
    crate::memory::keep_freed_heap();
    let plane = DataPlane::for_workers(workers.count());
    plane
        .access_log
        .configure(config.access_log.as_ref())
        .map_err(|e| anyhow!("access_log.path: {e}"))?;
    let owner = TableOwner::start(&config, plane.clone())
        .await
        .map_err(|e| anyhow!("{e}"))?;
    plane.metrics.config_reload(true);
    tokio::spawn(plane.clone().housekeeping());
    // The page's history: sampled every second in every mode.
    let history = weir_control::history::spawn(plane.clone(), owner.rollouts().to_vec());
    let mut rollouts = Vec::new();
    for (handle, rc) in owner.rollouts().iter().zip(&config.rollouts) {
        let token = token_for(config.admin.address, rc.token_file.as_deref())?;
        rollouts.push((handle.clone(), token));
    }
    let extension = crate::rollout_api::extension(rollouts, owner.kube(), history);
    let extension = Some(extension);

    let (stop, shutdown) = Shutdown::new();
    let connections = ConnectionLimit::counted(
        config.limits.max_connections,
        plane.metrics.client_connections(),
        plane.metrics.client_connections_parked(),
        plane.metrics.worker_client_connections(workers.count()),
    );
    tokio::spawn(crate::memory::trim_after_closes(connections.clone()));
    let mut tasks = Vec::new();
    let mut bound = Vec::new();
    let mut tls_handles = Vec::new();
    for spec in &config.listeners {
        let tls = match &spec.tls {
            Some(t) => Some(Arc::new(
                ReloadableTls::for_listener(t, &plane.certificates)
                    .map_err(|e| anyhow!("listener {}: {e}", spec.name))?,
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
        let serving = workers.spawn_on_each(|index| {
            let listener = for_this_worker(&listener)
                .with_context(|| format!("listener {}: worker {index}", spec.name))?;
            Ok(serve(
                listener,
                spec.name.as_str().into(),
                tls.clone(),
                plane.proxy.clone(),
                config.limits.clone(),
                connections.clone(),
                shutdown.clone(),
            ))
        })?;
        tasks.extend(serving);
    }
    let admin_listener = bind(config.admin.address)
        .await
        .map_err(|e| anyhow!("admin: {e}"))?;
    let admin = admin_listener.local_addr().context("admin address")?;
    tracing::info!("admin on http://{admin} (/metrics /ready /live /routes)");
    tasks.push(tokio::spawn(weir_proxy::admin::serve_admin(
        admin_listener,
        plane.clone(),
        extension,
        shutdown,
    )));

    Ok(Running {
        plane,
        rollouts: owner.rollouts().to_vec(),
        owner,
        listeners: bound,
        admin,
        listener_specs: config.listeners,
        tls: tls_handles,
        stop,
        tasks: std::sync::Mutex::new(tasks),
    })
}

/// The listening socket again, registered with the reactor of the runtime the caller is in: each
/// worker accepts from the same socket with its own registration, and the kernel hands each new
/// connection to one of them (a worker busy with its connections takes fewer).
fn for_this_worker(listener: &TcpListener) -> std::io::Result<TcpListener> {
    let socket = listener.as_fd().try_clone_to_owned()?;
    TcpListener::from_std(std::net::TcpListener::from(socket))
}

impl Running {
    /// A new config from the source: all of it goes in force, or none of it does.
    pub fn reload(&self, result: Result<Config, ConfigErrors>) {
        match self.try_reload(result) {
            Ok(generation) => {
                self.plane.metrics.config_reload(true);
                tracing::info!(generation, "config reloaded");
            }
            Err(why) => {
                self.plane.metrics.config_reload(false);
                tracing::error!("config reload failed; the previous routing table and certificates keep serving:\n{why}");
            }
        }
    }

    fn try_reload(&self, result: Result<Config, ConfigErrors>) -> Result<u64, String> {
        let config = result.map_err(|errors| errors.to_string())?;
        // Everything is read and checked before anything changes.
        let mut certificates = Vec::new();
        for (spec, handle) in config.listeners.iter().zip(&self.tls) {
            // Installed certificates are the control plane's to swap, not the reload's.
            if let (Some(ListenerTls::Files(tls)), Some(handle)) = (&spec.tls, handle) {
                let fresh =
                    server_config(tls).map_err(|e| format!("listener {}: {e}", spec.name))?;
                certificates.push((handle, fresh));
            }
        }
        if let Some(AccessLogSpec {
            destination: Destination::File(path),
            ..
        }) = &config.access_log
        {
            // Checked before anything changes; opened again (reopened) once the table is in.
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("access_log.path: {}: {e}", path.display()))?;
        }
        let generation = self.owner.reload(&config)?;
        // A reload reopens the log's file too, as logrotate's `postrotate` may ask.
        if let Err(err) = self.plane.access_log.configure(config.access_log.as_ref()) {
            tracing::error!(error = %err, "access_log.path: cannot open; the log writes on where it did");
        }
        // Certificates are re-read on every reload: rotation needs no restart.
        for (handle, fresh) in certificates {
            handle.install(fresh);
        }
        let bound = self
            .listener_specs
            .iter()
            .map(|l| (&l.name, l.address, l.tls.is_some()));
        if config
            .listeners
            .iter()
            .map(|l| (&l.name, l.address, l.tls.is_some()))
            .ne(bound)
        {
            tracing::warn!("listeners changed in the config: adding, moving or switching TLS on a listener takes a restart");
        }
        Ok(generation)
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
