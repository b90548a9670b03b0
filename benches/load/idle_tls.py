#!/usr/bin/env python3
"""Idle TLS keep-alive clients (issue 16): what each one costs weir's RSS, and the peers'.

    cargo build --release && benches/load/idle_tls.py target/release/weir [OLD_WEIR ...]
    CLIENTS=3000 ROUNDS=2 benches/load/idle_tls.py target/release/weir /path/to/old/weir
    PEERS= benches/load/idle_tls.py target/release/weir      # weir builds only

Each weir binary in turn, one worker pinned to CPU 0, terminates TLS 1.3 (a fresh ECDSA P-256
certificate, HTTP/1.1 by ALPN) in front of a small upstream in this script; then each of PEERS
(default `nginx,haproxy`, those installed) the same way, one process or thread on CPU 0. 50
clients warm it; then CLIENTS more each make one request and stay open (idle timeouts raised so
that none is closed before the last connects); the RSS difference over CLIENTS is one idle TLS
connection's cost. Loopback only; needs `openssl` and CLIENTS + 100 open files.
"""

import http.server
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

CLIENTS = int(os.environ.get("CLIENTS", "3000"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))


class Ok(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        # One write: a head and body in two segments met delayed ACKs (40 ms a request).
        self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def client(ctx, port):
    """A TLS client that made one request and read its whole answer."""
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                        server_hostname="localhost")
    s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    data = b""
    while not data.endswith(b"\r\n\r\nok"):
        chunk = s.recv(4096)
        if not chunk:
            raise RuntimeError(f"closed after {data!r}")
        data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"answered {data!r}")
    return s


def nginx_command(port, workdir, upstream):
    config = os.path.join(workdir, "nginx.conf")
    with open(config, "w") as f:
        f.write(f"""worker_processes 1;
master_process off;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log;
events {{ worker_connections {CLIENTS + 200}; }}
http {{
  access_log off;
  keepalive_timeout 300s;
  keepalive_requests 100000;
  upstream up {{ server 127.0.0.1:{upstream}; keepalive 64; }}
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {workdir}/cert.pem;
    ssl_certificate_key {workdir}/key.pem;
    ssl_protocols TLSv1.3;
    location / {{
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}
}}
""")
    return ["nginx", "-p", workdir, "-c", config]


def haproxy_command(port, workdir, upstream):
    with open(os.path.join(workdir, "both.pem"), "w") as both:
        for part in ("cert.pem", "key.pem"):
            with open(os.path.join(workdir, part)) as f:
                both.write(f.read())
    config = os.path.join(workdir, "haproxy.cfg")
    with open(config, "w") as f:
        f.write(f"""global
  nbthread 1
  maxconn {CLIENTS + 200}
defaults
  mode http
  timeout connect 5s
  timeout client 300s
  timeout server 60s
  timeout http-keep-alive 300s
  option http-keep-alive
frontend fe
  bind 127.0.0.1:{port} ssl crt {workdir}/both.pem alpn http/1.1 ssl-min-ver TLSv1.3
  default_backend be
backend be
  server s1 127.0.0.1:{upstream}
""")
    return ["haproxy", "-db", "-f", config]


def weir_command(binary, port, workdir, upstream):
    admin = free_port()
    config = os.path.join(workdir, "weir.yaml")
    with open(config, "w") as f:
        f.write(f"""listeners:
- address: "127.0.0.1:{port}"
  tls: {{cert: {workdir}/cert.pem, key: {workdir}/key.pem}}
admin: {{address: "127.0.0.1:{admin}"}}
# The clients connect one after another: the first ones must not time out before the last.
limits: {{header_read_timeout: 300s}}
routes:
- name: web
  stable: {{addresses: ["127.0.0.1:{upstream}"]}}
""")
    return [binary, "--workers", "1", "run", "--config", config]


def measure(contender, workdir, upstream):
    port = free_port()
    if contender == "nginx":
        command = nginx_command(port, workdir, upstream)
    elif contender == "haproxy":
        command = haproxy_command(port, workdir, upstream)
    else:
        command = weir_command(contender, port, workdir, upstream)
    proxy = subprocess.Popen(["taskset", "-c", "0"] + command,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"{contender} did not start listening")
                time.sleep(0.1)
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.set_alpn_protocols(["http/1.1"])
        warm = [client(ctx, port) for _ in range(50)]
        time.sleep(0.5)
        before = rss_kib(proxy.pid)
        idle = [client(ctx, port) for _ in range(CLIENTS)]
        time.sleep(1)
        after = rss_kib(proxy.pid)
        for s in warm + idle:
            s.close()
        return before, after
    finally:
        proxy.kill()
        proxy.wait()


def main():
    binaries = sys.argv[1:]
    if not binaries:
        sys.exit(__doc__)
    peers = [p for p in os.environ.get("PEERS", "nginx,haproxy").split(",")
             if p and (shutil.which(p) or shutil.which(f"/usr/sbin/{p}"))]
    os.environ["PATH"] += ":/usr/sbin"
    binaries += peers
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as workdir:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                        "-subj", "/CN=localhost", "-keyout", f"{workdir}/key.pem",
                        "-out", f"{workdir}/cert.pem"], check=True, capture_output=True)
        results = {b: [] for b in binaries}
        for _ in range(ROUNDS):
            for binary in binaries:
                results[binary].append(measure(binary, workdir, server.server_address[1]))
    print(f"\n{CLIENTS} idle TLS 1.3 keep-alive clients, {ROUNDS} interleaved rounds, "
          "per-round values in parentheses\n")
    print("| contender | RSS warm, MiB | with the idle clients, MiB | per idle TLS connection, bytes |")
    print("|---|---:|---:|---:|")
    for binary, rounds in results.items():
        per = [round((a - b) * 1024 / CLIENTS) for b, a in rounds]
        print(f"| {binary} | {rounds[0][0] / 1024:.1f} | {rounds[0][1] / 1024:.1f} | "
              f"{sorted(per)[len(per) // 2]} ({', '.join(map(str, per))}) |")


if __name__ == "__main__":
    main()
