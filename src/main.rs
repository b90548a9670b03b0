//! weir: the command line. Each subcommand is wiring; the work lives in weir-proxy (data path)
//! and weir-control (control path).

mod check;
mod demo;
mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "weir",
    version,
    about = "A traffic-shifting proxy for progressive delivery"
)]
struct Cli {
    /// Runtime worker threads (default: one per core). 1 runs everything on one thread.
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
    /// Run on a built-in default: two built-in backends behind a 20 % canary split.
    Demo(demo::DemoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let runtime = match build_runtime(cli.workers) {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("weir: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run { config } => serve::run_file(config).await,
            Command::Check { config } => return check::check(&config),
            Command::Demo(args) => demo::run(args).await,
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

fn build_runtime(workers: Option<usize>) -> std::io::Result<tokio::runtime::Runtime> {
    match workers {
        Some(1) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("WEIR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
