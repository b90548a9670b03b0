//! `weir check`: everything `weir run` would refuse, without binding a port.

use std::path::Path;
use std::process::ExitCode;

use weir_proxy::listen::server_config;
use weir_proxy::listen::spec::ListenerTls;
use weir_proxy::DataPlane;

pub fn check(path: &Path) -> anyhow::Result<ExitCode> {
    let config = match weir_control::config::load(path) {
        Ok(config) => config,
        Err(errors) => {
            eprintln!("{errors}");
            eprintln!("{}: {} problem(s)", path.display(), errors.len());
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut problems = Vec::new();
    // What only the data plane can tell: CA files, certificates that do not parse.
    if let Err(errors) = DataPlane::new().validate(&config.table) {
        problems.extend(errors.0.iter().map(|e| format!("{}: {e}", path.display())));
    }
    for (i, listener) in config.listeners.iter().enumerate() {
        if let Some(ListenerTls::Files(tls)) = &listener.tls {
            if let Err(msg) = server_config(tls) {
                problems.push(format!("{}: listeners[{i}].tls: {msg}", path.display()));
            }
        }
    }
    if problems.is_empty() {
        println!(
            "{}: ok ({} route(s), {} listener(s))",
            path.display(),
            config.table.routes.len(),
            config.listeners.len()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for p in &problems {
            eprintln!("{p}");
        }
        eprintln!("{}: {} problem(s)", path.display(), problems.len());
        Ok(ExitCode::FAILURE)
    }
}
