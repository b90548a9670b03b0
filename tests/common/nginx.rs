//! A real nginx (Debian's `nginx-light`, installed by tests/run.sh) on 127.0.0.1 as an
//! upstream, for behaviour only a real server shows as it is: its cap on streams a connection
//! (`keepalive_requests`), ended with one GOAWAY that leaves the streams past it unprocessed;
//! its verification of a client's certificate (`ssl_verify_client on`, OpenSSL's).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    dir: PathBuf,
}

/// The nginx binary, or a panic that says how to get it.
fn binary() -> &'static str {
    for path in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
        if std::path::Path::new(path).exists() {
            return path;
        }
    }
    panic!("`nginx` is not installed: run tests/run.sh, which installs Debian's `nginx-light`");
}

impl Nginx {
    /// One worker answering every request `200 <name>\n` over h2c, ending each connection after
    /// `keepalive_requests` streams.
    pub fn h2c(name: &str, keepalive_requests: u32) -> Nginx {
        Nginx::serving(
            &format!("keepalive_requests {keepalive_requests};"),
            |addr| format!("listen {addr} http2; location / {{ return 200 \"{name}\\n\"; }}"),
        )
    }

    /// One worker with `http` settings `http_extra` and one `server` block, whose contents
    /// `server` writes for the address it is given.
    pub fn serving(http_extra: &str, server: impl FnOnce(SocketAddr) -> String) -> Nginx {
        let dir = super::temp_dir("nginx");
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let d = dir.display();
        let conf = format!(
            "worker_processes 1; daemon off; master_process off; pid {d}/nginx.pid;\n\
             error_log {d}/error.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{ access_log off; {http_extra}\n\
             client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};\n\
             uwsgi_temp_path {d}; scgi_temp_path {d};\n\
             server {{ {} }} }}\n",
            server(addr)
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(binary())
            .arg("-c")
            .arg(&path)
            .arg("-p")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen on {addr} within 10 s; its log: {}",
                std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nginx { child, addr, dir }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
