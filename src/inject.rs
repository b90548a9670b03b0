//! `weir inject`: like `linkerd inject` — Kubernetes YAML in, the same YAML with the weir
//! sidecar in every pod template out. Other objects pass through untouched.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use weir_control::inject::{inject_report, InjectOptions, DEFAULT_IMAGE};

#[derive(clap::Args)]
pub struct InjectArgs {
    /// A YAML file, or `-` (the default) for standard input.
    #[arg(default_value = "-")]
    file: PathBuf,
    /// The sidecar's image: by default the one the repository's Containerfile builds for this
    /// weir's version.
    #[arg(long, default_value = DEFAULT_IMAGE)]
    image: String,
    /// The ConfigMap holding weir.yaml (default: <workload>-weir).
    #[arg(long)]
    config_map: Option<String>,
    /// The port the application reaches weir on, in the pod.
    #[arg(long)]
    proxy_port: Option<u16>,
    /// weir's admin port (probes, /metrics).
    #[arg(long)]
    admin_port: Option<u16>,
    /// A Secret holding a certificate (tls.crt, tls.key, ca.crt, as cert-manager writes them),
    /// mounted at /etc/weir/tls for mutual TLS on both legs (docs/mtls.md).
    #[arg(long)]
    tls_secret: Option<String>,
}

pub fn run(args: &InjectArgs) -> anyhow::Result<ExitCode> {
    let mut input = String::new();
    if args.file.as_os_str() == "-" {
        std::io::stdin()
            .read_to_string(&mut input)
            .context("reading standard input")?;
    } else {
        input = std::fs::read_to_string(&args.file)
            .with_context(|| format!("reading {}", args.file.display()))?;
    }
    let mut opts = InjectOptions {
        image: args.image.clone(),
        config_map: args.config_map.clone(),
        tls_secret: args.tls_secret.clone(),
        ..InjectOptions::default()
    };
    if let Some(p) = args.proxy_port {
        opts.proxy_port = p;
    }
    if let Some(p) = args.admin_port {
        opts.admin_port = p;
    }
    let source = if args.file.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        args.file.display().to_string()
    };
    let injected = inject_report(&input, &opts).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
    print!("{}", injected.output);
    for note in &injected.notes {
        eprintln!("note: {note}");
    }
    eprintln!(
        "injected: {}",
        if injected.injected.is_empty() {
            "nothing".to_string()
        } else {
            injected.injected.join(", ")
        }
    );
    Ok(ExitCode::SUCCESS)
}
