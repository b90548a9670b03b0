//! Shared by the end-to-end tests: test upstreams, the weir process, clients, TLS material.
#![allow(dead_code)]

pub mod backend;
pub mod client;
pub mod h2_upstream;
pub mod listener;
pub mod load;
pub mod nginx;
pub mod raw;
pub mod tls;
pub mod webdriver;
pub mod weir;

use std::path::PathBuf;

/// An AnalysisTemplate over the built-in provider: the canary's success rate on the route the
/// `route` argument names, over 5 s, at least 0.98, measured each second from the first.
pub const LIVE_TEMPLATE: &str = r#"
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: live
spec:
  args:
  - name: route
  metrics:
  - name: success-rate
    initialDelay: 1s
    interval: 1s
    failureLimit: 1
    inconclusiveLimit: 20
    successCondition: result >= 0.98
    provider:
      plugin:
        weir/live: {route: "{{args.route}}", backend: canary, metric: success-rate, window: 5s, minRequests: 30}
"#;

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

/// Raises this test process's open-file limit to its hard limit, at least `need` or fails:
/// a test holding both ends of hundreds of connections in one process passes the common
/// default soft limit of 1,024 descriptors.
pub fn allow_open_files(need: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < need {
            limit.rlim_cur = limit.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
    assert!(
        limit.rlim_cur >= need,
        "this test needs {need} open files; the hard limit is {}",
        limit.rlim_max
    );
}
