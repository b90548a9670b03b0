//! The Argo Rollouts manifest loader (Rollouts, AnalysisTemplates) on arbitrary text: manifests,
//! or errors that each say where; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = std::path::Path::new("rollout.yaml");
    match weir_control::argo::load_str(text, file) {
        Ok(_) => {}
        Err(errors) => assert!(!errors.to_string().is_empty()),
    }
});
