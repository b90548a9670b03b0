//! `weir lint`: like `kubectl argo rollouts lint`, for what weir can run.

use std::path::PathBuf;
use std::process::ExitCode;

pub fn lint(files: &[PathBuf]) -> ExitCode {
    let report = weir_control::argo::lint(files);
    for note in &report.notes {
        println!("note: {note}");
    }
    for problem in &report.problems {
        eprintln!("{problem}");
    }
    if report.is_ok() {
        println!(
            "ok: weir can run every Rollout and AnalysisTemplate in {} file(s)",
            files.len()
        );
        ExitCode::SUCCESS
    } else {
        eprintln!("{} problem(s)", report.problems.len());
        ExitCode::FAILURE
    }
}
