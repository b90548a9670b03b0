//! Shared by the end-to-end tests: test upstreams, the weir process, clients, TLS material.
#![allow(dead_code)]

pub mod backend;
pub mod client;
pub mod h2_upstream;
pub mod load;
pub mod tls;
pub mod webdriver;
pub mod weir;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh directory under the system temp dir (never in the repository, fixtures included).
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A kubeconfig in `dir` for an API server at `url` (no credentials), `namespace` as the
/// context's default; returns its path.
pub fn kubeconfig(dir: &std::path::Path, url: &str, namespace: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: fake, cluster: {{server: \"{url}\"}}}}]\n\
             users: [{{name: weir, user: {{}}}}]\ncontexts: [{{name: fake, context: {{cluster: fake, user: weir, namespace: {namespace}}}}}]\n\
             current-context: fake\n"
        ),
    )
    .unwrap();
    path
}
