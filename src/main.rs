//! weir: the command line. Each subcommand is wiring; the work lives in weir-proxy (data path)
//! and weir-control (control path).

mod check;
mod demo;
mod inject;
mod lint;
mod memory;
mod open_files;
mod remote;
mod rollout_api;
mod serve;
mod status_view;
mod ui;
mod workers;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use weir_control::rollout::Command as RolloutCommand;

#[derive(Parser)]
#[command(
    name = "weir",
    version,
    about = "A traffic-shifting proxy for progressive delivery"
)]
struct Cli {
    /// Worker threads (default: one per core the process may run on). Each serves the
    /// connections it accepts on a single-threaded runtime of its own; the first also runs
    /// the control plane and the admin listener.
    #[arg(long, global = true)]
    workers: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the routes of a config file; reload it on change and on SIGHUP.
    Run {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Validate a config file: print every problem with its field path and line, exit 1 if any.
    Check {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Run a whole canary on a built-in default: two built-in backends, a load generator, and
    /// the analysis that aborts a regressed canary (or, with --healthy, promotes a good one).
    Demo(demo::DemoArgs),
    /// Add the weir sidecar to the pod templates of Kubernetes YAML (file or stdin).
    Inject(inject::InjectArgs),
    /// Check Rollout and AnalysisTemplate manifests without running them (exit 1 on problems).
    Lint {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Show a rollout of a running weir (like `kubectl argo rollouts get rollout`); with several
    /// and no NAME, a line each (like `kubectl argo rollouts list rollouts`).
    Status {
        /// Which rollout (needed only when the weir runs several).
        name: Option<String>,
        #[command(flatten)]
        remote: remote::Remote,
        /// Redraw every second.
        #[arg(long)]
        watch: bool,
    },
    /// Move the rollout past its current pause or analysis (`--full`: to full promotion).
    Promote {
        /// Which rollout (needed only when the weir runs several).
        name: Option<String>,
        #[command(flatten)]
        remote: remote::Remote,
        #[arg(long)]
        full: bool,
    },
    /// Abort the rollout: canary weight 0.
    Abort {
        /// Which rollout (needed only when the weir runs several).
        name: Option<String>,
        #[command(flatten)]
        remote: remote::Remote,
    },
    /// Start an aborted rollout's steps again.
    Retry {
        /// Which rollout (needed only when the weir runs several).
        name: Option<String>,
        #[command(flatten)]
        remote: remote::Remote,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The demo's own status lines are what a first-time user reads: its log says only what
    // went wrong, unless WEIR_LOG asks for more.
    init_logging(match cli.command {
        Command::Demo(_) => "warn",
        _ => "info",
    });
    let runtime = match workers::main_runtime() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("weir: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run { config } => {
                let workers = workers::Workers::start(workers::count(cli.workers))?;
                serve::run_file(config, &workers).await
            }
            Command::Check { config } => return check::check(&config),
            Command::Demo(args) => {
                let workers = workers::Workers::start(workers::count(cli.workers))?;
                return demo::run(args, &workers).await;
            }
            Command::Lint { files } => return Ok(lint::lint(&files)),
            Command::Inject(args) => return inject::run(&args),
            Command::Status {
                name,
                remote,
                watch,
            } => remote::status(&remote, name.as_deref(), watch).await,
            Command::Promote { name, remote, full } => {
                let command = if full {
                    RolloutCommand::PromoteFull
                } else {
                    RolloutCommand::Promote
                };
                remote::command(&remote, name.as_deref(), command).await
            }
            Command::Abort { name, remote } => {
                remote::command(&remote, name.as_deref(), RolloutCommand::Abort).await
            }
            Command::Retry { name, remote } => {
                remote::command(&remote, name.as_deref(), RolloutCommand::Retry).await
            }
        }
        .map(|()| ExitCode::SUCCESS)
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("weir: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `default` unless `WEIR_LOG` says otherwise (`WEIR_LOG=debug`, `WEIR_LOG=weir_control=debug`).
fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("WEIR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
