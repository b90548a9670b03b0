//! weir at the edge and beyond plaintext HTTP/1 (issue 16): TLS 1.3 termination, HTTP/2 from
//! clients (h2c and h2 over TLS) to HTTP/1 and to HTTP/2 upstreams, and two workers on two
//! cores — each against nginx and HAProxy configured the same way. Run it with
//! benches/load/edge.sh, which installs the peers and h2load.
//!
//! Upstreams are nginx on CPU 1: two HTTP/1 (stable, canary) and two h2c ones, each pair split
//! 80/20 by every proxy, which adds X-Forwarded-For, -Proto and -Host as weir does. Each proxy
//! runs in turn on CPU 0 with one worker or thread (the two-worker scenarios, plaintext and
//! h2c to h2c: two, on CPUs 0 and 1). The load comes from h2load (`-c 64`, `-m 10` for HTTP/2,
//! `-m 1` for HTTP/1) or, for handshakes, from a rustls client in this process: each of 32
//! connections (HANDSHAKE_CLIENTS) makes one request with `Connection: close` and connects
//! again, with session resumption off
//! (every handshake full) or on (the client offers a ticket it was given; the share actually
//! resumed is printed). Before each timed run 200 requests must succeed over the expected
//! protocol.
//!
//! Mutual TLS (issue 49): the same handshakes with the client presenting an ECDSA P-256
//! certificate that every proxy verifies against one CA and a CRL of `REVOKED` serials
//! (weir's `client_auth`, nginx's `ssl_verify_client on`, HAProxy's `verify required`), and
//! keep-alive requests from the harness's own rustls client with and without the certificate
//! (h2load cannot present one). Before those runs, a client without a certificate must be
//! refused by every contender.
//!
//! The same for every contender: one ECDSA P-256 certificate, TLS 1.3 with
//! TLS_AES_128_GCM_SHA256 and X25519 (the clients offer nothing else), ALPN h2 and http/1.1
//! offered by every server. The clients do not verify the certificate (h2load never does; the
//! rustls client skips it so that its own core is not the limit). Resumption is each server's
//! default: nginx and HAProxy issue session tickets, weir (rustls) its stateful session cache.
//!
//! Rounds are interleaved (scenario by scenario, every contender in each, the contenders'
//! order reversed every other round) and every round's value printed; ratios are against the
//! better of nginx and HAProxy in the same run, taken round by round, their median with a
//! distribution-free 95 % interval from six rounds on (`median_interval`). The load generator
//! and the upstreams share the machine's second core with nothing else; in the two-worker
//! scenarios they share both cores with the proxy, so a scaling factor (two workers over one)
//! is a lower bound and CPU per request the fairer figure there. Loopback only, every run
//! bounded in time. Reports; asserts nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod support;
use support::{
    against_better, benching, env_or, free_port, listed, median, median_interval, nginx_preamble,
    nginx_upstream_with, run_dir, signal, wait_for_port, weir, weir_binaries, Proc,
};

/// What the client speaks to the proxy.
#[derive(Clone, Copy, PartialEq)]
enum Front {
    /// HTTP/1.1 in the clear.
    Plain,
    /// HTTP/2 with prior knowledge, in the clear.
    H2c,
    /// TLS 1.3; ALPN picks HTTP/2 or HTTP/1.1.
    Tls,
    /// TLS 1.3 with the client's certificate required and verified against one CA and a CRL
    /// (issue 49): weir's `client_auth`, nginx's `ssl_verify_client on`, HAProxy's `verify
    /// required`.
    MutualTls,
}

/// What the proxy speaks to the upstreams.
#[derive(Clone, Copy, PartialEq)]
enum Back {
    Http1,
    H2c,
}

#[derive(Clone, Copy, PartialEq)]
enum Load {
    /// h2load over HTTP/1.1 (`-m 1`) or HTTP/2 (`-m 10`), 64 connections.
    H2load { h2: bool },
    /// New connections, one request each; resumption offered or not.
    Handshakes { resume: bool },
    /// Keep-alive HTTP/1.1 over TLS from the harness's own rustls client (h2load cannot
    /// present a client certificate), so that with and without client auth the load is the
    /// same client's.
    KeepAlive,
}

#[derive(Clone, Copy)]
struct Scenario {
    key: &'static str,
    name: &'static str,
    front: Front,
    back: Back,
    load: Load,
    /// Proxy workers (threads, processes) and the cores it gets: 1 → CPU 0, 2 → CPUs 0 and 1.
    workers: u32,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        key: "tls-keepalive",
        name: "HTTPS keep-alive (HTTP/1.1 over TLS 1.3), h2load --h1 -c 64",
        front: Front::Tls,
        back: Back::Http1,
        load: Load::H2load { h2: false },
        workers: 1,
    },
    Scenario {
        key: "tls-full",
        name: "a full TLS 1.3 handshake per request (resumption off), 32 clients",
        front: Front::Tls,
        back: Back::Http1,
        load: Load::Handshakes { resume: false },
        workers: 1,
    },
    Scenario {
        key: "tls-resumed",
        name: "a TLS 1.3 handshake per request, resumption offered, 32 clients",
        front: Front::Tls,
        back: Back::Http1,
        load: Load::Handshakes { resume: true },
        workers: 1,
    },
    Scenario {
        key: "mtls-full",
        name: "a full TLS 1.3 handshake per request with the client's certificate verified (CA and CRL), 32 clients",
        front: Front::MutualTls,
        back: Back::Http1,
        load: Load::Handshakes { resume: false },
        workers: 1,
    },
    Scenario {
        key: "tls-keepalive-rustls",
        name: "HTTPS keep-alive, the harness's rustls client, 32 connections",
        front: Front::Tls,
        back: Back::Http1,
        load: Load::KeepAlive,
        workers: 1,
    },
    Scenario {
        key: "mtls-keepalive-rustls",
        name: "HTTPS keep-alive with the client's certificate verified, the harness's rustls client, 32 connections",
        front: Front::MutualTls,
        back: Back::Http1,
        load: Load::KeepAlive,
        workers: 1,
    },
    Scenario {
        key: "h2-tls-h1",
        name: "HTTP/2 over TLS to HTTP/1 upstreams, h2load -c 64 -m 10",
        front: Front::Tls,
        back: Back::Http1,
        load: Load::H2load { h2: true },
        workers: 1,
    },
    Scenario {
        key: "h2c-h1",
        name: "h2c to HTTP/1 upstreams, h2load -c 64 -m 10",
        front: Front::H2c,
        back: Back::Http1,
        load: Load::H2load { h2: true },
        workers: 1,
    },
    Scenario {
        key: "h2-tls-h2",
        name: "HTTP/2 over TLS to h2c upstreams, h2load -c 64 -m 10",
        front: Front::Tls,
        back: Back::H2c,
        load: Load::H2load { h2: true },
        workers: 1,
    },
    Scenario {
        key: "h2c-h2",
        name: "h2c to h2c upstreams, h2load -c 64 -m 10",
        front: Front::H2c,
        back: Back::H2c,
        load: Load::H2load { h2: true },
        workers: 1,
    },
    Scenario {
        key: "plain-1",
        name: "plaintext HTTP/1.1 keep-alive, one worker on CPU 0, h2load --h1 -c 64 -t 2",
        front: Front::Plain,
        back: Back::Http1,
        load: Load::H2load { h2: false },
        workers: 1,
    },
    Scenario {
        key: "plain-2",
        name: "plaintext HTTP/1.1 keep-alive, two workers on CPUs 0-1 (shared with the load), h2load --h1 -c 64 -t 2",
        front: Front::Plain,
        back: Back::Http1,
        load: Load::H2load { h2: false },
        workers: 2,
    },
    Scenario {
        key: "h2c-h2-2",
        name: "h2c to h2c upstreams, two workers on CPUs 0-1 (shared with the load), h2load -c 64 -m 10 -t 2",
        front: Front::H2c,
        back: Back::H2c,
        load: Load::H2load { h2: true },
        workers: 2,
    },
];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Weir,
    Baseline,
    Nginx,
    Haproxy,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Weir => "weir",
            Kind::Baseline => "baseline weir",
            Kind::Nginx => "nginx",
            Kind::Haproxy => "HAProxy",
        }
    }
}

struct Setup {
    dir: PathBuf,
    weir: PathBuf,
    baseline: Option<PathBuf>,
    cert: PathBuf,
    key: PathBuf,
    /// Certificate and key in one file, as HAProxy takes them.
    bundle: PathBuf,
    /// Mutual TLS: the CA that issues clients' certificates, its CRL, and the client's own.
    clients: ClientPki,
    h1: (u16, u16),
    h2: (u16, u16),
}

/// The TLS 1.3 suite and group every client offers (and so every server uses).
const CIPHER: &str = "TLS_AES_128_GCM_SHA256";
/// nginx's idle upstream connections per worker (for both addresses): weir keeps up to 1,024
/// per address by default and HAProxy does not cap them, so nginx gets as many. With fewer
/// than the 640 requests h2load keeps in flight, a proxy closes and reopens connections all
/// the time (weir did at its old 256: 13 % of requests opened one).
const NGINX_KEEPALIVE: usize = 2048;
const SERVER_NAME: &str = "bench.test";

/// A self-signed ECDSA P-256 certificate for `SERVER_NAME`, written as PEM.
fn certificate(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("P-256 key");
    let cert = rcgen::CertificateParams::new(vec![SERVER_NAME.to_string()])
        .and_then(|p| p.self_signed(&key))
        .expect("self-signed certificate");
    let (cert_pem, key_pem) = (cert.pem(), key.serialize_pem());
    let paths = (
        dir.join("cert.pem"),
        dir.join("key.pem"),
        dir.join("bundle.pem"),
    );
    std::fs::write(&paths.0, &cert_pem).expect("write cert.pem");
    std::fs::write(&paths.1, &key_pem).expect("write key.pem");
    std::fs::write(&paths.2, format!("{cert_pem}{key_pem}")).expect("write bundle.pem");
    paths
}

/// What mutual TLS needs: a CA (written as `ca.pem`), a CRL it signed revoking
/// `REVOKED` certificates (`crl.pem`; the client's is not among them, so each handshake looks
/// its serial up in a list of that many), and the client's certificate chain and key.
struct ClientPki {
    ca: PathBuf,
    crl: PathBuf,
    chain: Vec<rustls_pki_types::CertificateDer<'static>>,
    key_der: Vec<u8>,
}

/// Revoked serials in the bench's CRL.
const REVOKED: u64 = 100;

fn client_pki(dir: &Path) -> ClientPki {
    let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("P-256 key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "bench clients CA");
    let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
    let client_key =
        rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("P-256 key");
    let mut client = rcgen::CertificateParams::new(Vec::<String>::new()).expect("client params");
    client.subject_alt_names.push(rcgen::SanType::URI(
        "spiffe://bench/ns/load/sa/client"
            .try_into()
            .expect("a URI SAN"),
    ));
    client.serial_number = Some(rcgen::SerialNumber::from(7u64));
    client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let client_cert = client
        .signed_by(&client_key, &ca_cert, &ca_key)
        .expect("client certificate");
    let crl = rcgen::CertificateRevocationListParams {
        this_update: rcgen::date_time_ymd(2025, 1, 1),
        next_update: rcgen::date_time_ymd(2035, 1, 1),
        crl_number: rcgen::SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: (1000..1000 + REVOKED)
            .map(|serial| rcgen::RevokedCertParams {
                serial_number: rcgen::SerialNumber::from(serial),
                revocation_time: rcgen::date_time_ymd(2025, 6, 1),
                reason_code: Some(rcgen::RevocationReason::KeyCompromise),
                invalidity_date: None,
            })
            .collect(),
        key_identifier_method: rcgen::KeyIdMethod::Sha256,
    }
    .signed_by(&ca_cert, &ca_key)
    .expect("CRL");
    let pki = ClientPki {
        ca: dir.join("ca.pem"),
        crl: dir.join("crl.pem"),
        chain: vec![client_cert.der().clone()],
        key_der: client_key.serialize_der(),
    };
    std::fs::write(&pki.ca, ca_cert.pem()).expect("write ca.pem");
    std::fs::write(&pki.crl, crl.pem().expect("CRL as PEM")).expect("write crl.pem");
    pki
}

/// An nginx upstream on CPU 1 answering `<name>\n`, over HTTP/1.1 or h2c.
fn upstream(dir: &Path, name: &str, port: u16, h2c: bool) -> Proc {
    let http2 = if h2c { " http2" } else { "" };
    nginx_upstream_with(
        dir,
        name,
        port,
        &format!(
            "server {{ listen 127.0.0.1:{port}{http2} backlog=4096; location / {{ add_header X-Backend {name} always; return 200 \"{name}\\n\"; }} }}\n"
        ),
    )
}

/// A proxy process, with the CPU time of its worker processes (nginx with two workers is a
/// master and two children) and a graceful stop, so that no worker outlives the run.
struct Proxy {
    proc: Proc,
}

impl Proxy {
    fn cpu_seconds(&self) -> f64 {
        let root = self.proc.pid();
        let mut total = self.proc.cpu_seconds();
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
                let rest = stat.rsplit(')').next().unwrap_or("");
                let f: Vec<&str> = rest.split_whitespace().collect();
                if f.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(root) {
                    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
                    total += (ticks(11).unwrap_or(0.0) + ticks(12).unwrap_or(0.0)) / 100.0;
                }
            }
        }
        total
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // SIGTERM first: nginx's master then stops its workers before it exits.
        let pid = self.proc.pid();
        signal(pid, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && Path::new(&format!("/proc/{pid}/cmdline")).exists() {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn cpus(workers: u32) -> &'static str {
    if workers > 1 {
        "0,1"
    } else {
        "0"
    }
}

/// Starts `kind` for scenario `sc`; returns it and the port to load.
fn start(kind: Kind, sc: &Scenario, s: &Setup) -> (Proxy, u16) {
    let port = free_port();
    let (stable, canary) = match sc.back {
        Back::Http1 => s.h1,
        Back::H2c => s.h2,
    };
    let cpu = cpus(sc.workers);
    let proc = match kind {
        Kind::Weir | Kind::Baseline => {
            let tls = match sc.front {
                Front::Tls => format!(
                    ", tls: {{cert: \"{}\", key: \"{}\"}}",
                    s.cert.display(),
                    s.key.display()
                ),
                Front::MutualTls => format!(
                    ", tls: {{cert: \"{}\", key: \"{}\", client_auth: {{ca: \"{}\", crl: [\"{}\"]}}}}",
                    s.cert.display(),
                    s.key.display(),
                    s.clients.ca.display(),
                    s.clients.crl.display()
                ),
                _ => String::new(),
            };
            let protocol = match sc.back {
                Back::Http1 => "",
                Back::H2c => ", protocol: http2",
            };
            let yaml = format!(
                "listeners: [{{address: \"127.0.0.1:{port}\"{tls}}}]\nadmin: {{address: \"127.0.0.1:{admin}\"}}\nlimits: {{max_connections: 20000}}\n\
                 routes:\n- name: web\n  stable: {{addresses: [\"127.0.0.1:{stable}\"]{protocol}}}\n  canary: {{addresses: [\"127.0.0.1:{canary}\"]{protocol}}}\n  canary_weight: 20\n",
                admin = free_port()
            );
            let conf = s.dir.join("weir.yaml");
            std::fs::write(&conf, yaml).expect("write weir config");
            let binary = match (kind, &s.baseline) {
                (Kind::Baseline, Some(b)) => b,
                _ => &s.weir,
            };
            weir(cpu, binary, &conf, Some(sc.workers))
        }
        Kind::Nginx => {
            let listen = match sc.front {
                Front::Plain => String::new(),
                Front::H2c => " http2".to_string(),
                Front::Tls => format!(
                    " ssl http2; ssl_certificate {}; ssl_certificate_key {}; ssl_protocols TLSv1.2 TLSv1.3",
                    s.cert.display(),
                    s.key.display()
                ),
                Front::MutualTls => format!(
                    " ssl http2; ssl_certificate {}; ssl_certificate_key {}; ssl_protocols TLSv1.2 TLSv1.3; \
                     ssl_verify_client on; ssl_client_certificate {}; ssl_crl {}",
                    s.cert.display(),
                    s.key.display(),
                    s.clients.ca.display(),
                    s.clients.crl.display()
                ),
            };
            let pass = match sc.back {
                Back::Http1 => "proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\";\n\
                     proxy_set_header Host $host; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; proxy_set_header X-Forwarded-Proto $scheme; proxy_set_header X-Forwarded-Host $host;",
                Back::H2c => "grpc_pass grpc://app;\n\
                     grpc_set_header X-Forwarded-For $proxy_add_x_forwarded_for; grpc_set_header X-Forwarded-Proto $scheme; grpc_set_header X-Forwarded-Host $host;",
            };
            let preamble = nginx_preamble(&s.dir, "proxy", 16384).replace(
                "worker_processes 1; daemon off; master_process off;",
                &format!(
                    "worker_processes {}; daemon off; master_process {};",
                    sc.workers,
                    if sc.workers > 1 { "on" } else { "off" }
                ),
            );
            let conf = s.dir.join("nginx-proxy.conf");
            std::fs::write(
                &conf,
                format!(
                    "{preamble}\
                     upstream app {{ server 127.0.0.1:{stable} weight=4; server 127.0.0.1:{canary} weight=1; keepalive {NGINX_KEEPALIVE}; keepalive_requests 100000000; }}\n\
                     server {{ listen 127.0.0.1:{port} backlog=4096{listen}; location / {{ {pass} }} }} }}\n"
                ),
            )
            .expect("write nginx proxy config");
            Proc::pinned(
                cpu,
                "nginx",
                &[
                    "-p",
                    &s.dir.display().to_string(),
                    "-c",
                    &conf.display().to_string(),
                ],
            )
        }
        Kind::Haproxy => {
            let (bind, proto) = match sc.front {
                Front::Plain => (String::new(), "http"),
                Front::H2c => (" proto h2".to_string(), "http"),
                Front::Tls => (
                    format!(" ssl crt {} alpn h2,http/1.1", s.bundle.display()),
                    "https",
                ),
                Front::MutualTls => (
                    format!(
                        " ssl crt {} ca-file {} crl-file {} verify required alpn h2,http/1.1",
                        s.bundle.display(),
                        s.clients.ca.display(),
                        s.clients.crl.display()
                    ),
                    "https",
                ),
            };
            let server_proto = match sc.back {
                Back::Http1 => "",
                Back::H2c => " proto h2",
            };
            let conf = s.dir.join("haproxy.cfg");
            std::fs::write(
                &conf,
                format!(
                    "global\n  nbthread {workers}\n  maxconn 8000\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n  option http-keep-alive\n  http-reuse always\n\
                     frontend f\n  bind 127.0.0.1:{port}{bind}\n  option forwardfor\n  http-request set-header X-Forwarded-Proto {proto}\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  default_backend b\n\
                     backend b\n  balance roundrobin\n  server stable 127.0.0.1:{stable} weight 80{server_proto}\n  server canary 127.0.0.1:{canary} weight 20{server_proto}\n",
                    workers = sc.workers
                ),
            )
            .expect("write haproxy config");
            Proc::pinned(cpu, "haproxy", &["-db", "-f", &conf.display().to_string()])
        }
    };
    wait_for_port(port);
    (Proxy { proc }, port)
}

/// What h2load reported.
struct H2loadRun {
    rps: f64,
    ok: u64,
    failed: u64,
    /// "TLSv1.3 TLS_AES_128_GCM_SHA256 X25519 h2", or the protocol alone in the clear.
    negotiated: String,
}

/// h2load against `port` for `secs` seconds, or `-n requests` when `secs` is 0.
fn h2load(sc: &Scenario, port: u16, secs: u64, requests: u64) -> Result<H2loadRun, String> {
    let Load::H2load { h2 } = sc.load else {
        return Err("not an h2load scenario".into());
    };
    let mut cmd = if sc.workers > 1 {
        // Two workers: the load shares both cores with the proxy.
        let mut c = Command::new("taskset");
        c.args(["-c", "0,1", "h2load"]);
        c
    } else {
        Command::new("h2load")
    };
    // Two threads where one h2load thread would be the limit: plaintext HTTP/1, and any load
    // that has two cores.
    let threads = if sc.front == Front::Plain || sc.workers > 1 {
        "2"
    } else {
        "1"
    };
    cmd.args(["-c", "64", "-t", threads, "-m", if h2 { "10" } else { "1" }]);
    if !h2 {
        cmd.arg("--h1");
    }
    cmd.arg(format!("--tls13-ciphers={CIPHER}"));
    if secs > 0 {
        cmd.arg(format!("-D{secs}"));
    } else {
        cmd.arg(format!("-n{requests}"));
    }
    let scheme = if sc.front == Front::Tls {
        "https"
    } else {
        "http"
    };
    cmd.arg(format!("{scheme}://127.0.0.1:{port}/"));
    let out = cmd.output().map_err(|e| format!("running h2load: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = |prefix: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .map(|l| l.trim_start()[prefix.len()..].trim().to_string())
    };
    let rps = line("finished in")
        .and_then(|l| l.split(", ").nth(1).map(str::to_string))
        .and_then(|r| r.trim_end_matches(" req/s").parse::<f64>().ok())
        .ok_or_else(|| format!("no rate in h2load's output:\n{stdout}"))?;
    let ok = line("status codes:")
        .and_then(|l| l.split(' ').next().and_then(|n| n.parse::<u64>().ok()))
        .ok_or_else(|| format!("no status codes in h2load's output:\n{stdout}"))?;
    let total = line("requests:")
        .and_then(|l| l.split(' ').next().and_then(|n| n.parse::<u64>().ok()))
        .unwrap_or(ok);
    let mut negotiated = Vec::new();
    if sc.front == Front::Tls {
        negotiated.extend(line("TLS Protocol:"));
        negotiated.extend(line("Cipher:"));
        negotiated
            .extend(line("Server Temp Key:").and_then(|k| k.split(' ').next().map(str::to_string)));
    }
    negotiated.extend(line("Application protocol:"));
    Ok(H2loadRun {
        rps,
        ok,
        failed: total.saturating_sub(ok),
        negotiated: negotiated.join(" "),
    })
}

/// A certificate verifier that accepts anything: the clients here measure the servers, and
/// the client's core is not to be the limit (h2load does not verify either).
#[derive(Debug)]
struct AcceptAny(Vec<rustls::SignatureScheme>);

impl rustls::client::danger::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &[rustls_pki_types::CertificateDer<'_>],
        _: &rustls_pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.clone()
    }
}

/// The harness client's config: TLS 1.3, `CIPHER`, X25519, ALPN http/1.1; a session cache
/// when `resume`; the client's certificate when `pki` is given (mutual TLS).
fn client_config(resume: bool, pki: Option<&ClientPki>) -> Arc<rustls::ClientConfig> {
    let base = rustls::crypto::ring::default_provider();
    let schemes = base.signature_verification_algorithms.supported_schemes();
    let provider = rustls::crypto::CryptoProvider {
        cipher_suites: vec![rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256],
        kx_groups: vec![rustls::crypto::ring::kx_group::X25519],
        ..base
    };
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3 with the ring provider")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(schemes)));
    let mut config = match pki {
        Some(pki) => builder
            .with_client_auth_cert(
                pki.chain.clone(),
                rustls_pki_types::PrivateKeyDer::Pkcs8(pki.key_der.clone().into()),
            )
            .expect("the client's certificate and key"),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.resumption = if resume {
        rustls::client::Resumption::in_memory_sessions(1024)
    } else {
        rustls::client::Resumption::disabled()
    };
    Arc::new(config)
}

/// The client's certificate for a scenario that needs one.
fn pki_for<'s>(sc: &Scenario, s: &'s Setup) -> Option<&'s ClientPki> {
    (sc.front == Front::MutualTls).then_some(&s.clients)
}

#[derive(Default)]
struct Handshakes {
    ok: u64,
    failed: u64,
    resumed: u64,
}

/// `clients` connections in a loop for `secs` (at most `cap` each): connect, handshake, one
/// `GET /` with `Connection: close`, read to the end, check the status.
async fn handshakes(
    port: u16,
    config: Arc<rustls::ClientConfig>,
    clients: u64,
    secs: u64,
    cap: u64,
) -> Handshakes {
    let connector = tokio_rustls::TlsConnector::from(config);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let name = rustls_pki_types::ServerName::try_from(SERVER_NAME).expect("a DNS name");
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (connector, name) = (connector.clone(), name.clone());
        tasks.push(tokio::spawn(async move {
            let mut h = Handshakes::default();
            let mut answer = Vec::with_capacity(512);
            for _ in 0..cap {
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
                let one = async {
                    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
                    let _ = tcp.set_nodelay(true);
                    let mut tls = connector.connect(name.clone(), tcp).await?;
                    let resumed =
                        tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
                    tls.write_all(
                        b"GET / HTTP/1.1\r\nhost: bench.test\r\nconnection: close\r\n\r\n",
                    )
                    .await?;
                    answer.clear();
                    // A peer may end TLS without close_notify after `Connection: close`;
                    // what was read by then is the answer.
                    let _ = tls.read_to_end(&mut answer).await;
                    Ok::<_, std::io::Error>(resumed)
                };
                match tokio::time::timeout(Duration::from_secs(5), one).await {
                    Ok(Ok(resumed)) if answer.starts_with(b"HTTP/1.1 200") => {
                        h.ok += 1;
                        h.resumed += u64::from(resumed);
                    }
                    _ => h.failed += 1,
                }
            }
            h
        }));
    }
    let mut all = Handshakes::default();
    for t in tasks {
        if let Ok(h) = t.await {
            all.ok += h.ok;
            all.failed += h.failed;
            all.resumed += h.resumed;
        }
    }
    all
}

/// `clients` TLS connections for `secs`, each sending `GET /` after `GET /` (at most `cap`
/// each) and reading each answer by its Content-Length; a connection that fails is counted and
/// replaced. Returns the requests answered 200, the failures, and what the first connection
/// negotiated.
async fn keepalive(
    port: u16,
    config: Arc<rustls::ClientConfig>,
    clients: u64,
    secs: u64,
    cap: u64,
) -> (u64, u64, String) {
    let connector = tokio_rustls::TlsConnector::from(config);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let name = rustls_pki_types::ServerName::try_from(SERVER_NAME).expect("a DNS name");
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (connector, name) = (connector.clone(), name.clone());
        tasks.push(tokio::spawn(async move {
            let (mut ok, mut failed, mut negotiated) = (0u64, 0u64, String::new());
            'connections: while ok + failed < cap && tokio::time::Instant::now() < deadline {
                let connected = async {
                    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
                    let _ = tcp.set_nodelay(true);
                    connector.connect(name.clone(), tcp).await
                };
                let mut tls = match tokio::time::timeout(Duration::from_secs(5), connected).await {
                    Ok(Ok(tls)) => tls,
                    _ => {
                        failed += 1;
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                if negotiated.is_empty() {
                    let c = tls.get_ref().1;
                    let shown = |v: Option<String>| v.unwrap_or_else(|| "-".into());
                    negotiated = format!(
                        "{} {} {}",
                        shown(c.protocol_version().map(|v| format!("{v:?}"))),
                        shown(
                            c.negotiated_cipher_suite()
                                .map(|s| format!("{:?}", s.suite()))
                        ),
                        String::from_utf8_lossy(c.alpn_protocol().unwrap_or(b"-"))
                    );
                }
                let mut buf = Vec::with_capacity(4096);
                while ok + failed < cap && tokio::time::Instant::now() < deadline {
                    let one = async {
                        tls.write_all(b"GET / HTTP/1.1\r\nhost: bench.test\r\n\r\n")
                            .await?;
                        read_answer(&mut tls, &mut buf).await
                    };
                    match tokio::time::timeout(Duration::from_secs(5), one).await {
                        Ok(Ok(200)) => ok += 1,
                        _ => {
                            failed += 1;
                            continue 'connections;
                        }
                    }
                }
                break;
            }
            (ok, failed, negotiated)
        }));
    }
    let (mut ok, mut failed, mut negotiated) = (0, 0, String::new());
    for t in tasks {
        if let Ok((o, f, n)) = t.await {
            ok += o;
            failed += f;
            if negotiated.is_empty() {
                negotiated = n;
            }
        }
    }
    (ok, failed, negotiated)
}

/// Reads one HTTP/1.1 response framed by Content-Length from `io` (bytes beyond it stay in
/// `buf` for the next); returns its status.
async fn read_answer<T: tokio::io::AsyncRead + Unpin>(
    io: &mut T,
    buf: &mut Vec<u8>,
) -> std::io::Result<u16> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let status = head
                .get(9..12)
                .and_then(|s| s.parse::<u16>().ok())
                .ok_or_else(|| bad("no status"))?;
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| bad("no content-length"))?;
            let total = end + 4 + length;
            while buf.len() < total {
                let mut chunk = [0u8; 4096];
                let n = io.read(&mut chunk).await?;
                if n == 0 {
                    return Err(bad("closed mid-body"));
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            buf.drain(..total);
            return Ok(status);
        }
        let mut chunk = [0u8; 4096];
        let n = io.read(&mut chunk).await?;
        if n == 0 {
            return Err(bad("closed before an answer"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[derive(Clone, Default)]
struct Run {
    rps: f64,
    cpu_us: f64,
    failed: u64,
    /// Handshakes: the share resumed, %.
    resumed: Option<f64>,
    negotiated: String,
}

/// Starts `kind`, checks 200 requests over the expected protocol, then times the load.
fn measure(rt: &tokio::runtime::Runtime, kind: Kind, sc: &Scenario, s: &Setup, secs: u64) -> Run {
    let (proxy, port) = start(kind, sc, s);
    let label = format!("{} in {}", kind.name(), sc.key);
    let pki = pki_for(sc, s);
    let mut run = Run::default();
    if sc.front == Front::MutualTls || sc.load == Load::KeepAlive {
        // h2load cannot present a certificate: the check is the harness's own client's, and
        // under mutual TLS a client without a certificate must be turned away.
        let (ok, failed, negotiated) =
            rt.block_on(keepalive(port, client_config(false, pki), 1, 10, 200));
        assert!(
            ok == 200 && failed == 0 && negotiated.ends_with("http/1.1"),
            "{label}: the check got {ok} of 200 answers ({failed} failed) over {negotiated:?}"
        );
        if pki.is_some() {
            let (ok, _, _) = rt.block_on(keepalive(port, client_config(false, None), 1, 2, 3));
            assert_eq!(
                ok, 0,
                "{label}: a client without a certificate was answered"
            );
        }
        run.negotiated = negotiated;
    } else {
        let check = Scenario {
            load: match sc.load {
                Load::Handshakes { .. } => Load::H2load { h2: false },
                l => l,
            },
            ..*sc
        };
        let checked = h2load(&check, port, 0, 200).unwrap_or_else(|e| panic!("{label}: {e}"));
        let want: &[&str] = match check.load {
            Load::H2load { h2: true } => &["h2", "h2c"],
            _ => &["http/1.1"],
        };
        let got = checked.negotiated.rsplit(' ').next().unwrap_or("");
        assert!(
            checked.ok == 200 && want.contains(&got),
            "{label}: the check got {} of 200 answers over {:?}, wanted {want:?}",
            checked.ok,
            checked.negotiated
        );
        run.negotiated = checked.negotiated;
    }
    match sc.load {
        Load::H2load { .. } => {
            let _ = h2load(sc, port, 1, 0); // warm the pools
            let cpu0 = proxy.cpu_seconds();
            let r = h2load(sc, port, secs, 0).unwrap_or_else(|e| panic!("{label}: {e}"));
            let cpu = proxy.cpu_seconds() - cpu0;
            run.rps = r.rps;
            run.failed = r.failed;
            run.cpu_us = cpu * 1e6 / (r.rps * secs as f64).max(1.0);
        }
        Load::Handshakes { resume } => {
            // HANDSHAKE_CLIENTS: connections at once (32).
            let clients = env_or("HANDSHAKE_CLIENTS", 32);
            let config = client_config(resume, pki);
            let _ = rt.block_on(handshakes(port, config.clone(), clients, 1, 1_000_000));
            let cpu0 = proxy.cpu_seconds();
            let t0 = Instant::now();
            let h = rt.block_on(handshakes(port, config, clients, secs, 1_000_000));
            let took = t0.elapsed().as_secs_f64();
            let cpu = proxy.cpu_seconds() - cpu0;
            run.rps = h.ok as f64 / took;
            run.failed = h.failed;
            run.cpu_us = cpu * 1e6 / (h.ok as f64).max(1.0);
            run.resumed = Some(100.0 * h.resumed as f64 / (h.ok as f64).max(1.0));
        }
        Load::KeepAlive => {
            let config = client_config(false, pki);
            let _ = rt.block_on(keepalive(port, config.clone(), 32, 1, u64::MAX));
            let cpu0 = proxy.cpu_seconds();
            let t0 = Instant::now();
            let (ok, failed, _) = rt.block_on(keepalive(port, config, 32, secs, u64::MAX));
            let took = t0.elapsed().as_secs_f64();
            let cpu = proxy.cpu_seconds() - cpu0;
            run.rps = ok as f64 / took;
            run.failed = failed;
            run.cpu_us = cpu * 1e6 / (ok as f64).max(1.0);
        }
    }
    drop(proxy);
    run
}

fn main() {
    if !benching() {
        return; // `cargo test --benches`: nothing to do
    }
    let rounds = env_or("ROUNDS", 2);
    let secs = env_or("DURATION", 10);
    let only = std::env::var("SCENARIOS").ok();
    let scenarios: Vec<&Scenario> = SCENARIOS
        .iter()
        .filter(|s| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|k| k == s.key))
        })
        .collect();
    assert!(
        !scenarios.is_empty(),
        "SCENARIOS names none of the scenarios"
    );
    let (weir, baseline) = weir_binaries("benches/load/edge.sh");
    let dir = run_dir("edge");
    let (cert, key, bundle) = certificate(&dir);
    let clients = client_pki(&dir);
    let s = Setup {
        clients,
        h1: (free_port(), free_port()),
        h2: (free_port(), free_port()),
        dir: dir.clone(),
        weir,
        baseline,
        cert,
        key,
        bundle,
    };
    let _upstreams = [
        upstream(&dir, "stable", s.h1.0, false),
        upstream(&dir, "canary", s.h1.1, false),
        upstream(&dir, "stable-h2", s.h2.0, true),
        upstream(&dir, "canary-h2", s.h2.1, true),
    ];
    let mut kinds = vec![Kind::Weir];
    if s.baseline.is_some() {
        kinds.push(Kind::Baseline);
    }
    kinds.extend([Kind::Nginx, Kind::Haproxy]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // results[scenario][kind][round]
    let mut results = vec![vec![Vec::<Run>::new(); kinds.len()]; scenarios.len()];
    for round in 0..rounds {
        for (i, sc) in scenarios.iter().enumerate() {
            // Reversed every other round: whoever runs first in a round (on a warmer or a
            // quieter machine) is not always the same contender.
            let mut order: Vec<usize> = (0..kinds.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for k in order {
                let kind = kinds[k];
                eprintln!("round {}/{rounds}: {} — {}", round + 1, sc.key, kind.name());
                results[i][k].push(measure(&rt, kind, sc, &s, secs));
            }
        }
    }
    println!("\n{rounds} rounds, {secs} s each; TLS 1.3 {CIPHER} X25519, ECDSA P-256; per-round values in parentheses; × = against the better of nginx and HAProxy (throughput: higher is better; CPU: lower is better).");
    let nginx = kinds.iter().position(|&k| k == Kind::Nginx).unwrap_or(0);
    let haproxy = kinds.iter().position(|&k| k == Kind::Haproxy).unwrap_or(0);
    for (i, sc) in scenarios.iter().enumerate() {
        let rs = &results[i];
        let med = |k: usize, f: fn(&Run) -> f64| median(rs[k].iter().map(f).collect());
        let best_rps = med(nginx, |r| r.rps).max(med(haproxy, |r| r.rps));
        let best_cpu = med(nginx, |r| r.cpu_us).min(med(haproxy, |r| r.cpu_us));
        let unit = match sc.load {
            Load::Handshakes { .. } => "conn",
            Load::H2load { .. } | Load::KeepAlive => "req",
        };
        println!("\n### {}\n", sc.name);
        println!("| proxy | {unit}/s | × | spread % | CPU µs/{unit} | × | failed | resumed % | negotiated |");
        println!("|---|---|---|---|---|---|---|---|---|");
        for (k, kind) in kinds.iter().enumerate() {
            let per = |f: fn(&Run) -> f64, d: usize| {
                rs[k]
                    .iter()
                    .map(|r| format!("{:.d$}", f(r)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let rps: Vec<f64> = rs[k].iter().map(|r| r.rps).collect();
            let spread = (rps.iter().cloned().fold(f64::MIN, f64::max)
                - rps.iter().cloned().fold(f64::MAX, f64::min))
                / median(rps.clone()).max(1.0)
                * 100.0;
            let resumed = rs[k]
                .iter()
                .filter_map(|r| r.resumed)
                .map(|v| format!("{v:.0}"))
                .collect::<Vec<_>>()
                .join(", ");
            println!(
                "| {} | {:.0} ({}) | {:.2} | {spread:.1} | {:.1} ({}) | {:.2} | {} | {} | {} |",
                kind.name(),
                med(k, |r| r.rps),
                per(|r| r.rps, 0),
                med(k, |r| r.rps) / best_rps,
                med(k, |r| r.cpu_us),
                per(|r| r.cpu_us, 1),
                med(k, |r| r.cpu_us) / best_cpu,
                rs[k].iter().map(|r| r.failed).sum::<u64>(),
                if resumed.is_empty() {
                    "–".into()
                } else {
                    resumed
                },
                rs[k].first().map_or("", |r| r.negotiated.as_str()),
            );
        }
        // weir is the first contender.
        let x_better = |f: fn(&Run) -> f64, higher_is_better: bool| {
            let per = |k: usize| rs[k].iter().map(f).collect::<Vec<_>>();
            let x = against_better(&per(0), &per(nginx), &per(haproxy), higher_is_better);
            let interval = median_interval(&x)
                .map(|(lo, hi, _)| format!(" [{lo:.2}, {hi:.2}]"))
                .unwrap_or_default();
            format!("{:.2}{interval} ({})", median(x.clone()), listed(&x, 2))
        };
        println!(
            "\nweir over the better peer round by round, median [95 % interval from 6 rounds] \
             (per round): {unit}/s {}; CPU {}",
            x_better(|r| r.rps, true),
            x_better(|r| r.cpu_us, false)
        );
    }
    // Scaling from one worker to two, for each two-worker scenario whose one-worker
    // counterpart ran: "X-2" against "X" or "X-1".
    for (two, sc) in scenarios.iter().enumerate() {
        let Some(base) = sc.key.strip_suffix("-2") else {
            continue;
        };
        let one_key = format!("{base}-1");
        let Some(one) = scenarios
            .iter()
            .position(|s| s.key == base || s.key == one_key)
        else {
            continue;
        };
        println!("\n### Scaling of {base}, one worker on one core to two on two (the load shares the two)\n");
        println!("| proxy | req/s, 1 | req/s, 2 | × | CPU µs/req, 1 | CPU µs/req, 2 |");
        println!("|---|---|---|---|---|---|");
        for (k, kind) in kinds.iter().enumerate() {
            let m = |i: usize, f: fn(&Run) -> f64| median(results[i][k].iter().map(f).collect());
            println!(
                "| {} | {:.0} | {:.0} | {:.2} | {:.1} | {:.1} |",
                kind.name(),
                m(one, |r| r.rps),
                m(two, |r| r.rps),
                m(two, |r| r.rps) / m(one, |r| r.rps),
                m(one, |r| r.cpu_us),
                m(two, |r| r.cpu_us),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
