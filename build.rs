//! Release builds of `weir` are linked to keep less of the binary resident:
//!
//! - **The functions a running proxy executes sit next to each other**
//!   (`build/hot-functions.txt`, written by `build/hot-functions.sh` from a callgrind run of
//!   real traffic), so the code it keeps resident is a few contiguous pages instead of pages
//!   scattered through 14 MB of text: the kernel maps a binary's code in blocks of up to about
//!   256 KiB around each page first run, so one hot function among cold ones costs a whole
//!   block. Measured: about 2 MiB less RSS (benches/README.md, "Where weir's RSS is"). A stale
//!   list costs nothing but the saving: names it holds that no longer exist are skipped.
//! - **Relative relocations are packed** (`-z pack-relative-relocs`, DT_RELR): a
//!   position-independent binary's ~20,000 pointers in vtables and constant tables are each
//!   adjusted at start by the dynamic loader, which reads the whole table of them; as RELA
//!   entries that table is 467 KiB, all of it resident for the life of the process, and as
//!   RELR bitmaps it is 6 KiB. The binary then needs glibc 2.36 or later where it runs (its
//!   loader says so by name if not: `GLIBC_ABI_DT_RELR`), so this is only done when the
//!   build machine's own glibc is that new and the build is not a cross build.
//!
//! Only where the linker is known to understand both: a release build for
//! x86_64-unknown-linux-gnu with rustc 1.90 or later, whose default linker there is LLD, and
//! no linker chosen by the environment. `WEIR_NO_HOT_ORDER=1` turns off the ordering and
//! `WEIR_NO_PACKED_RELOCS=1` the packing (a different linker configured in
//! `.cargo/config.toml` cannot be seen from here: set both then).

use std::env;
use std::ffi::OsStr;
use std::process::Command;

const LIST: &str = "build/hot-functions.txt";

fn main() {
    println!("cargo:rerun-if-changed={LIST}");
    println!("cargo:rerun-if-env-changed=WEIR_NO_HOT_ORDER");
    println!("cargo:rerun-if-env-changed=WEIR_NO_PACKED_RELOCS");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    if env::var("PROFILE").as_deref() != Ok("release") {
        return; // debug builds (what tests use) need no layout
    }
    if let Some(why) = linker_unknown() {
        println!("cargo:warning=release link options off (hot-function ordering, packed relocations): {why}");
        return;
    }
    if is_set("WEIR_NO_HOT_ORDER") {
        println!("cargo:warning=hot-function ordering off: WEIR_NO_HOT_ORDER is set");
    } else {
        let dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={dir}/{LIST}");
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    match packing_unsupported() {
        Some(why) => println!("cargo:warning=relative relocations not packed: {why}"),
        None => println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs"),
    }
}

fn is_set(var: &str) -> bool {
    env::var_os(var).is_some_and(|v| v != "0")
}

/// Why the binary is not linked with packed relative relocations, if it is not.
fn packing_unsupported() -> Option<String> {
    if is_set("WEIR_NO_PACKED_RELOCS") {
        return Some("WEIR_NO_PACKED_RELOCS is set".into());
    }
    if env::var("HOST").ok() != env::var("TARGET").ok() {
        return Some("a cross build (the target's glibc is unknown)".into());
    }
    match version("getconf", "GNU_LIBC_VERSION") {
        Some(version) if version >= (2, 36) => None,
        Some((major, minor)) => Some(format!(
            "glibc {major}.{minor} here (DT_RELR needs 2.36 or later)"
        )),
        None => Some("this machine's glibc version could not be read".into()),
    }
}

/// Why this release build is linked by a linker these options may not suit, if it is.
fn linker_unknown() -> Option<String> {
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
    match env::var_os("RUSTC").and_then(|rustc| version(rustc, "--version")) {
        Some(v) if v >= (1, 90) => None,
        Some((major, minor)) => Some(format!(
            "rustc {major}.{minor} links with the system linker"
        )),
        None => Some("rustc's version could not be read".into()),
    }
}

/// The major and minor version a program reports as the second word of its output:
/// `rustc --version` ("rustc 1.95.0 (…)"), `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn version(program: impl AsRef<OsStr>, arg: &str) -> Option<(u32, u32)> {
    let out = Command::new(program).arg(arg).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.split_whitespace().nth(1)?.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}
