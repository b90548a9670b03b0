//! The config loader on arbitrary text: a config, or errors that each name a file; never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = std::path::Path::new("/nonexistent/weir-fuzz/weir.yaml");
    if let Err(errors) = weir_control::config::from_str(text, file) {
        assert!(!errors.to_string().is_empty());
    }
});
