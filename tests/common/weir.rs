//! The weir binary under test: started with a config file in a temp dir, its bound addresses
//! read from its log, killed on drop.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::client;
use super::temp_dir;

pub struct Weir {
    child: Child,
    pub addr: SocketAddr,
    pub admin: SocketAddr,
    pub dir: PathBuf,
    pub config: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
    /// Remove `dir` on drop (unless `keep_dir`).
    owns_dir: bool,
}

impl Weir {
    /// `yaml` should listen on 127.0.0.1:0 and put admin on 127.0.0.1:0.
    pub fn start(yaml: &str) -> Weir {
        let dir = temp_dir("weir");
        let config = dir.join("weir.yaml");
        std::fs::write(&config, yaml).unwrap();
        Self::start_with(dir, config, &[])
    }

    pub fn start_with(dir: PathBuf, config: PathBuf, extra_args: &[&str]) -> Weir {
        Self::start_env(dir, config, extra_args, &[])
    }

    /// As `start_with`, with extra environment variables (e.g. KUBECONFIG).
    pub fn start_env(
        dir: PathBuf,
        config: PathBuf,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> Weir {
        let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
        command.args(extra_args).envs(env.iter().copied());
        Self::spawn(command, dir, config)
    }

    /// As `start_with`, with the command that starts weir given whole (e.g. `chroot` into an
    /// image's root filesystem); `run --config CONFIG` is appended, so `config` is the path as
    /// that command's weir sees it.
    pub fn start_command(command: Command, dir: PathBuf, config: PathBuf) -> Weir {
        Self::spawn(command, dir, config)
    }

    /// As `start`, with the process's soft open-file limit set to `soft` before it runs.
    pub fn start_with_open_files(yaml: &str, soft: u64) -> Weir {
        use std::os::unix::process::CommandExt;
        let dir = temp_dir("weir");
        let config = dir.join("weir.yaml");
        std::fs::write(&config, yaml).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
        // SAFETY: getrlimit/setrlimit are async-signal-safe and touch only this struct;
        // nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(move || {
                let mut limit = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                limit.rlim_cur = soft.min(limit.rlim_max);
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Self::spawn(command, dir, config)
    }

    fn spawn(mut command: Command, dir: PathBuf, config: PathBuf) -> Weir {
        // `info` unless the test asked for more.
        if !command.get_envs().any(|(name, _)| name == "WEIR_LOG") {
            command.env("WEIR_LOG", "info");
        }
        let mut child = command
            .arg("run")
            .arg("--config")
            .arg(&config)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("weir binary starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let plain = strip_ansi(&line);
                if let Some(addr) = after(&plain, "serving on http://")
                    .or_else(|| after(&plain, "serving on https://"))
                {
                    let _ = tx.send(("listener", addr));
                }
                if let Some(addr) = after(&plain, "admin on http://") {
                    let _ = tx.send(("admin", addr));
                }
                sink.lock().unwrap().push(plain);
            }
        });
        let (mut addr, mut admin) = (None, None);
        let deadline = Instant::now() + Duration::from_secs(20);
        while addr.is_none() || admin.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(("listener", a)) => addr = addr.or(Some(a)),
                Ok((_, a)) => admin = Some(a),
                Err(_) => {
                    let _ = child.kill();
                    panic!(
                        "weir did not start; log:\n{}",
                        log.lock().unwrap().join("\n")
                    );
                }
            }
        }
        Weir {
            child,
            addr: addr.unwrap(),
            admin: admin.unwrap(),
            dir,
            config,
            log,
            owns_dir: true,
        }
    }

    /// Leave the directory (config, state file) for a restart.
    pub fn keep_dir(mut self) -> Self {
        self.owns_dir = false;
        self
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Replaces the config file; weir notices within its poll interval.
    pub fn write_config(&self, yaml: &str) {
        // Write then rename, as a config management tool would.
        let tmp = self.dir.join("weir.yaml.tmp");
        std::fs::write(&tmp, yaml).unwrap();
        std::fs::rename(&tmp, &self.config).unwrap();
    }

    pub async fn metrics(&self) -> String {
        client::get_text(self.admin, "/metrics").await.1
    }

    pub async fn generation(&self) -> u64 {
        let (_, body) = client::get_text(self.admin, "/routes").await;
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["generation"].as_u64().unwrap()
    }

    /// Waits until the admin API reports a generation above `than` (a reload took effect).
    pub async fn wait_generation_above(&self, than: u64) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let g = self.generation().await;
            if g > than {
                return g;
            }
            assert!(
                Instant::now() < deadline,
                "no reload within 10 s; log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the log has a line containing `needle`.
    pub async fn wait_log(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.log().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "log never said {needle:?}; log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit by itself; returns whether it did in time.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Weir {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.owns_dir {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn after(line: &str, marker: &str) -> Option<SocketAddr> {
    let rest = &line[line.find(marker)? + marker.len()..];
    rest.split_whitespace()
        .next()?
        .trim_end_matches(['/', ')'])
        .parse()
        .ok()
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The value of one sample in Prometheus text, e.g.
/// `sample(&text, "weir_requests_total", &[("backend", "canary"), ("code", "200")])`,
/// summed over every series whose labels include the given ones.
pub fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

impl Weir {
    /// `GET /rollout` as JSON.
    pub async fn rollout(&self) -> serde_json::Value {
        let (status, body) = client::get_text(self.admin, "/rollout").await;
        assert_eq!(status, 200, "{body}");
        // The wire format is the typed status: an answer `weir status` could not read back
        // fails every test that looks at it.
        if let Err(e) = serde_json::from_str::<weir_control::rollout::RolloutStatus>(&body) {
            panic!("GET /rollout is not a RolloutStatus: {e}\n{body}");
        }
        serde_json::from_str(&body).unwrap()
    }

    /// Polls `/rollout` until `done` holds or `limit` passes (then panics with the status).
    pub async fn wait_rollout(
        &self,
        limit: Duration,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + limit;
        loop {
            let s = self.rollout().await;
            if done(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "rollout never got there; status:\n{s:#}\nlog:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
