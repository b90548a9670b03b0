//! `weir lint` on Argo's own example manifests (fixtures/argo-rollouts, read-only).

use std::process::Command;

fn example(name: &str) -> String {
    format!(
        "{}/fixtures/argo-rollouts/examples/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn lint(files: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("lint")
        .args(files)
        .output()
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn a_supported_rollout_lints_clean() {
    let (code, out) = lint(&[&example("rollout-canary.yaml")]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ok: weir can run"), "{out}");
    // Pod-level fields are accepted and noted, not errors.
    assert!(out.contains("note:"), "{out}");
}

#[test]
fn an_experiment_step_is_refused_with_file_object_and_field() {
    let file = example("rollout-experiment-step.yaml");
    let (code, out) = lint(&[&file]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("rollout-experiment-step.yaml"), "{out}");
    assert!(out.contains("Rollout/"), "{out}");
    assert!(
        out.contains("spec.strategy.canary.steps[1].experiment"),
        "{out}"
    );
}

#[test]
fn a_missing_template_is_a_problem_and_the_deploy_templates_are_clean() {
    let (code, out) = lint(&[&example("rollout-analysis-step.yaml")]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("random-fail"), "{out}");
    let deploy = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/analysis/weir-analysis-templates.yaml"
    );
    let (code, out) = lint(&[deploy]);
    assert_eq!(code, Some(0), "{out}");
}
