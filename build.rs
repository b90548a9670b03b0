//! Release builds of `weir` place the functions a running proxy executes next to each other
//! (`build/hot-functions.txt`, written by `build/hot-functions.sh` from a callgrind run of
//! real traffic), so the code it keeps resident is a few contiguous pages instead of pages
//! scattered through 14 MB of text: the kernel maps a binary's code in blocks of up to about
//! 256 KiB around each page first run, so one hot function among cold ones costs a whole
//! block. Measured: about 2 MiB less RSS (benches/README.md, "Where weir's RSS is").
//!
//! Only where the ordering is known to be understood: a release build for
//! x86_64-unknown-linux-gnu with rustc 1.90 or later, whose default linker there is LLD, and
//! no linker chosen by the environment. `WEIR_NO_HOT_ORDER=1` turns it off (a different
//! linker configured in `.cargo/config.toml` cannot be seen from here). A stale list costs
//! nothing but the saving: names it holds that no longer exist are skipped by the linker.

use std::env;
use std::process::Command;

const LIST: &str = "build/hot-functions.txt";

fn main() {
    println!("cargo:rerun-if-changed={LIST}");
    println!("cargo:rerun-if-env-changed=WEIR_NO_HOT_ORDER");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    if env::var("PROFILE").as_deref() != Ok("release") {
        return; // debug builds (what tests use) need no layout
    }
    if let Some(why) = unsupported() {
        println!("cargo:warning=hot-function ordering off: {why}");
        return;
    }
    let dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={dir}/{LIST}");
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}

/// Why this release build is linked without the ordering, if it is.
fn unsupported() -> Option<String> {
    if env::var_os("WEIR_NO_HOT_ORDER").is_some_and(|v| v != "0") {
        return Some("WEIR_NO_HOT_ORDER is set".into());
    }
    let target = env::var("TARGET").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu" {
        return Some(format!(
            "target {target} (only x86_64-unknown-linux-gnu links with LLD by default)"
        ));
    }
    if env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
        || env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|f| f.contains("link"))
    {
        return Some("a linker or link flags are set in the environment".into());
    }
    match rustc_minor() {
        Some(minor) if minor >= 90 => None,
        Some(minor) => Some(format!("rustc 1.{minor} links with the system linker")),
        None => Some("rustc's version could not be read".into()),
    }
}

/// The minor version of the rustc building this crate (1.<minor>.x).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var_os("RUSTC")?;
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    text.split_whitespace()
        .nth(1)?
        .split('.')
        .nth(1)?
        .parse()
        .ok()
}
