//! weir's container image (the repository's Containerfile): what its config says, what its root
//! filesystem holds, and weir serving a request from that root filesystem.
//!
//! tests/run.sh builds the image offline with buildah — the Containerfile's final stage, its
//! `rootfs` stage stood in for by a root filesystem that build/image-rootfs.sh assembled from
//! the release binary — mounts a container of it and exports:
//!   WEIR_IMAGE_ROOTFS   the container's root filesystem, mounted
//!   WEIR_IMAGE_INSPECT  a file holding `buildah inspect --type image` of the image (JSON)
//!
//! Without them — a plain `cargo test`, on a machine that may have no buildah, or not be root
//! as `chroot` needs — the tests that need the image say so on stderr and pass, unless
//! CI=true: CI runs tests/run.sh, which always sets them, so there a missing variable means the
//! image went unchecked, and that fails. The checks on the Containerfile's text always run.

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::backend::{self, Behaviour};
use common::client::H1;
use common::weir::Weir;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The bound on the image: the binary and what it needs, nothing else.
const MAX_BYTES: u64 = 30_000_000;
/// Where the manifests mount the config and what the image's CMD names.
const CONFIG: &str = "/etc/weir/weir.yaml";

/// The built image, or `None` (after saying why) where tests/run.sh did not build one.
fn built_image() -> Option<(PathBuf, serde_json::Value)> {
    let rootfs = std::env::var_os("WEIR_IMAGE_ROOTFS");
    let inspect = std::env::var_os("WEIR_IMAGE_INSPECT");
    let (Some(rootfs), Some(inspect)) = (rootfs, inspect) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but WEIR_IMAGE_ROOTFS / WEIR_IMAGE_INSPECT are not set: tests/run.sh \
             builds the image and sets them, so the image was not checked"
        );
        eprintln!("no image built (tests/run.sh builds one): skipped");
        return None;
    };
    let text = std::fs::read_to_string(&inspect)
        .unwrap_or_else(|e| panic!("{}: {e}", Path::new(&inspect).display()));
    let inspect: serde_json::Value = serde_json::from_str(&text).expect("buildah inspect's JSON");
    Some((PathBuf::from(rootfs), inspect))
}

fn strings(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str()).collect())
        .unwrap_or_default()
}

/// "major.minor" of a version string as numbers, for comparing.
fn minor(version: &str) -> (u32, u32) {
    let mut parts = version.split('.').map(|p| p.parse::<u32>());
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => (major, minor),
        _ => panic!("{version:?} is not major.minor[.patch]"),
    }
}

/// The value of `ARG NAME=value` in the Containerfile.
fn arg_default<'a>(containerfile: &'a str, name: &str) -> &'a str {
    let prefix = format!("ARG {name}=");
    containerfile
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("Containerfile: no `ARG {name}=`"))
}

#[test]
fn containerfile_agrees_with_cargo_toml() {
    let containerfile = std::fs::read_to_string(Path::new(ROOT).join("Containerfile")).unwrap();
    // The version label is a build argument (a label cannot be read from a file), so its
    // default must follow Cargo.toml by hand; this catches a release that forgets it.
    assert_eq!(arg_default(&containerfile, "VERSION"), VERSION);

    let cargo_toml = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    let rust_version = cargo_toml
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("Cargo.toml: rust-version")
        .trim_matches('"');
    let image = arg_default(&containerfile, "RUST_IMAGE");
    let tag = image
        .strip_prefix("docker.io/library/rust:")
        .and_then(|t| t.strip_suffix("-bookworm"))
        .unwrap_or_else(|| panic!("RUST_IMAGE {image}: not the official rust:X.Y-bookworm"));
    assert!(
        minor(tag) >= minor(rust_version),
        "the builder's Rust {tag} is older than rust-version {rust_version}"
    );

    // The final stage is empty but for the assembled root filesystem, and the builder stage
    // assembles it with the script the offline build uses (one copy of that logic).
    let stages: Vec<&str> = containerfile
        .lines()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    assert_eq!(stages, ["FROM ${RUST_IMAGE} AS rootfs", "FROM scratch"]);
    assert!(containerfile.contains("build/image-rootfs.sh target/release/weir /rootfs"));
    assert!(containerfile.contains("cargo build --release --locked --bin weir"));
    assert!(containerfile.contains("COPY --from=rootfs --chown=0:0 /rootfs/ /"));
}

/// Every `weir:<version>` in the files a user reads names this version: the image is built
/// and tagged from Cargo.toml's version, and what refers to it cannot drift from it.
#[test]
fn image_name_is_the_same_everywhere() {
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut paths = vec![
        Path::new(ROOT).join("README.md"),
        Path::new(ROOT).join("docs/image.md"),
        Path::new(ROOT).join("Containerfile"),
    ];
    files(&Path::new(ROOT).join("deploy"), &mut paths);
    let want = format!("weir:{VERSION}");
    let mut seen = 0;
    for path in &paths {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for (i, _) in text.match_indices("weir:") {
            let rest = &text[i + "weir:".len()..];
            if !rest.starts_with(|c: char| c.is_ascii_digit()) {
                continue; // YAML keys and prose, not an image reference
            }
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
                .unwrap_or(rest.len());
            let name = format!("weir:{}", rest[..end].trim_end_matches('.'));
            assert_eq!(name, want, "{}", path.display());
            seen += 1;
        }
    }
    // docs/image.md's build command, the Containerfile's, the edge and sidecar Deployments.
    assert!(seen >= 4, "only {seen} references to {want}");
}

#[test]
fn image_config_runs_weir_as_non_root() {
    let Some((_, inspect)) = built_image() else {
        return;
    };
    let config = &inspect["OCIv1"]["config"];
    let user = config["User"].as_str().unwrap_or_default();
    let ids: Vec<u32> = user
        .split(':')
        .map(|id| {
            id.parse()
                .unwrap_or_else(|_| panic!("User {user:?}: not uid:gid"))
        })
        .collect();
    assert_eq!(ids, [65532, 65532], "User {user:?}");
    assert_eq!(strings(&config["Entrypoint"]), ["/usr/local/bin/weir"]);
    assert_eq!(strings(&config["Cmd"]), ["run", "--config", CONFIG]);
    let labels = &config["Labels"];
    assert_eq!(
        labels["org.opencontainers.image.version"].as_str(),
        Some(VERSION)
    );
    assert_eq!(
        labels["org.opencontainers.image.licenses"].as_str(),
        Some("Apache-2.0")
    );

    // The image's size is its layers' (buildah stores them uncompressed): one, the COPY.
    let manifest = inspect["Manifest"].as_str().expect("Manifest");
    let manifest: serde_json::Value = serde_json::from_str(manifest).unwrap();
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "{layers:?}");
    let bytes: u64 = layers.iter().filter_map(|l| l["size"].as_u64()).sum();
    eprintln!("image: {bytes} bytes in its layer");
    assert!(bytes > 1_000_000, "{bytes} bytes: no weir binary in it?");
    assert!(bytes < MAX_BYTES, "{bytes} bytes, over {MAX_BYTES}");
}

/// A library as build/image-rootfs.sh places it: under a directory the loader searches.
fn is_library(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or_default();
    ["lib/", "lib64/", "usr/lib/"]
        .iter()
        .any(|dir| rel.starts_with(dir))
        && name.contains(".so")
}

/// Every file under `root` (not directories), relative, with its metadata.
fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, std::fs::Metadata)>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let rel = path.strip_prefix(root).unwrap().display().to_string();
        if rel == "tmp" {
            // The one writable place (for `weir demo`), empty and sticky as everywhere.
            assert_eq!(meta.mode() & 0o7777, 0o1777, "/tmp");
            let entries = std::fs::read_dir(&path).unwrap().count();
            assert_eq!(entries, 0, "/tmp is not empty");
            continue;
        }
        // Nothing in the image belongs to weir's user or is writable by it: with the manifests'
        // read-only root filesystem on top, weir cannot change its own image.
        assert!(
            meta.uid() == 0 && meta.gid() == 0,
            "{rel}: not owned by root"
        );
        assert_eq!(meta.mode() & 0o022, 0, "{rel}: writable by others");
        if meta.is_dir() {
            walk(root, &path, out);
        } else {
            out.push((rel, meta));
        }
    }
}

#[tokio::test]
async fn image_root_filesystem_holds_weir_alone_and_serves_a_request() {
    let Some((rootfs, inspect)) = built_image() else {
        return;
    };
    // What it holds, before this test writes a config into it.
    let mut files = Vec::new();
    walk(&rootfs, &rootfs, &mut files);
    assert!(rootfs.join("tmp").is_dir(), "no /tmp");
    let names: BTreeSet<&str> = files.iter().map(|(rel, _)| rel.as_str()).collect();
    let expected = [
        "usr/local/bin/weir",
        "etc/ssl/certs/ca-certificates.crt",
        "etc/passwd",
        "etc/group",
        "etc/nsswitch.conf",
    ];
    for want in expected {
        assert!(names.contains(want), "no {want} in {names:?}");
    }
    let strays: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !expected.contains(n) && !is_library(n))
        .collect();
    assert!(strays.is_empty(), "not weir's: {strays:?}");
    assert!(
        names.iter().any(|n| n.contains("ld-linux")),
        "no dynamic loader in {names:?}"
    );
    let bytes: u64 = files.iter().map(|(_, m)| m.len()).sum();
    eprintln!(
        "image root filesystem: {bytes} bytes in {} files",
        files.len()
    );
    assert!(bytes < MAX_BYTES, "{bytes} bytes, over {MAX_BYTES}");
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).unwrap();
    assert!(passwd.contains("\nweir:x:65532:65532:"), "{passwd}");

    assert_eq!(
        nix_euid(),
        0,
        "chroot into the image needs root (tests/run.sh builds the image only as root)"
    );
    let config = &inspect["OCIv1"]["config"];
    let user = config["User"].as_str().expect("User");
    let entrypoint = strings(&config["Entrypoint"]);
    assert_eq!(strings(&config["Cmd"]), ["run", "--config", CONFIG]);

    let upstream = backend::start("in-image", Behaviour::default()).await;
    // The config where the manifests mount it, in this test's container (not the image).
    let dir = rootfs.join("etc/weir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("weir.yaml"),
        format!(
            "listeners: [{{address: \"127.0.0.1:0\"}}]\n\
             admin: {{address: \"127.0.0.1:0\"}}\n\
             routes:\n\
             - name: web\n\
             \x20 stable: {{addresses: [\"{}\"]}}\n",
            upstream.addr
        ),
    )
    .unwrap();
    // The image's entrypoint and command, as its user, with nothing from the host's
    // filesystem: a missing library or loader fails here.
    let mut command = Command::new("chroot");
    command
        .arg(format!("--userspec={user}"))
        .arg(&rootfs)
        .args(&entrypoint);
    let weir = Weir::start_command(command, dir, PathBuf::from(CONFIG));
    let status = std::fs::read_to_string(format!("/proc/{}/status", weir.pid())).unwrap();
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .unwrap_or_default();
    assert_eq!(
        uid.split_whitespace().skip(1).collect::<Vec<_>>(),
        ["65532"; 4],
        "weir's {uid}"
    );

    let answer = tokio::time::timeout(Duration::from_secs(10), async {
        H1::connect(weir.addr).await.get("/from-image", &[]).await
    })
    .await
    .unwrap_or_else(|_| panic!("no answer in 10 s; log:\n{}", weir.log()));
    assert_eq!(
        answer.status,
        200,
        "{}; log:\n{}",
        answer.text(),
        weir.log()
    );
    assert_eq!(answer.backend(), "in-image");
    assert_eq!(answer.json()["path"].as_str(), Some("/from-image"));
    assert_eq!(upstream.hits(), 1);
}

/// The effective uid of this process.
fn nix_euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
