#!/usr/bin/env bash
# Writes build/hot-functions.txt: the symbol of every function a release weir runs from start
# through a mix of real traffic, hottest first, for build.rs to hand to the linker (LLD's
# --symbol-ordering-file) so that code sits together in the binary.
#
# Run it after a change that renames or adds much of the data path, or after a toolchain or
# dependency update, or after adding a dependency to a crate of the workspace (symbols carry
# each crate's hash, and a crate's hash changes with its dependencies, so every name of that
# crate changes; the linker skips names it does not find: the build still works, it only keeps
# more code pages resident — 7.4 → 9.3 MiB at 256 connections when memchr became a dependency
# of weir-proxy):
#   build/hot-functions.sh            # builds target/release/weir, runs it, rewrites the list
# then rebuild (`cargo build --release`): the list changes the layout, not the names.
#
# The traffic: plaintext HTTP/1.1 and h2c on one listener, HTTP/1.1 and HTTP/2 over TLS on
# another, each to a route of HTTP/1 upstreams and to one of h2c upstreams (nginx), idle keep-alive clients long enough
# to be parked, /metrics and /routes scrapes and a config reload, with one worker (`--workers
# 1`) and with the default, a worker per core (the worker threads, their balance and the
# per-worker pools run code one worker does not). Every function counts once it ran at all: what matters for the pages is
# whether code runs, not how often.
set -euo pipefail
cd "$(dirname "$0")/.."

. benches/load/packages.sh
need valgrind valgrind
need callgrind_annotate valgrind
need nginx nginx-light
need h2load nghttp2-client
need curl curl
need openssl openssl
install_needed
export PATH="$PATH:/usr/sbin"

cargo build --release --locked --bin weir
weir="$PWD/target/release/weir"
dir=$(mktemp -d)
mkdir -p "$dir/tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

base=${BASE_PORT:-19300}
h1=$base h2c=$((base + 1)) plain=$((base + 2)) tls=$((base + 3)) admin=$((base + 4))
wait_port() {
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on $1" >&2
  exit 1
}

cat >"$dir/nginx.conf" <<EOF
worker_processes 1; daemon off; master_process off; error_log stderr error; pid $dir/nginx.pid;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp;
  fastcgi_temp_path $dir/tmp; uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  server { listen 127.0.0.1:$h1; location / { return 200 "stable\n"; } }
  server { listen 127.0.0.1:$h2c http2; location / { return 200 "canary\n"; } } }
EOF
nginx -p "$dir" -c "$dir/nginx.conf" &
pids+=($!)
wait_port "$h1"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
  -keyout "$dir/tls.key" -out "$dir/tls.crt" -days 2 2>/dev/null
cat >"$dir/weir.yaml" <<EOF
listeners:
- {address: "127.0.0.1:$plain"}
- {address: "127.0.0.1:$tls", tls: {cert: tls.crt, key: tls.key}}
admin: {address: "127.0.0.1:$admin"}
routes:
- name: grpc
  match: {path_prefix: /grpc}
  stable: {addresses: ["127.0.0.1:$h2c"], protocol: http2}
  canary: {addresses: ["127.0.0.1:$h2c"], protocol: http2}
  canary_weight: 20
- name: web
  stable: {addresses: ["127.0.0.1:$h1"]}
  canary: {addresses: ["127.0.0.1:$h1"]}
  canary_weight: 20
EOF

run() { # $1: output file, then weir's global flags
  local out=$1
  shift
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$out" \
    "$weir" "$@" run --config "$dir/weir.yaml" >"$dir/weir.log" 2>&1 &
  local vp=$!
  wait_port "$plain"
  local path
  for path in / /grpc; do
    h2load -n 2000 -c 16 --h1 "http://127.0.0.1:$plain$path" >/dev/null
    h2load -n 2000 -c 16 -m 10 "http://127.0.0.1:$plain$path" >/dev/null
    h2load -n 2000 -c 16 -m 10 "https://127.0.0.1:$tls$path" >/dev/null
    h2load -n 500 -c 16 --h1 "https://127.0.0.1:$tls$path" >/dev/null
  done
  # Keep-alive clients idle long enough to be parked, then served again.
  python3 - "$plain" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
for _ in range(2):
    for s in socks:
        s.sendall(req)
        s.recv(4096)
    time.sleep(2.5)
PY
  for _ in 1 2 3; do
    curl -s -o /dev/null "http://127.0.0.1:$admin/metrics"
    curl -s -o /dev/null "http://127.0.0.1:$admin/routes"
    sleep 1
  done
  touch "$dir/weir.yaml" # a reload with nothing changed
  sleep 2
  h2load -n 200 -c 4 --h1 "http://127.0.0.1:$plain/" >/dev/null
  kill "$vp"
  wait "$vp" 2>/dev/null || true
}
run "$dir/one.out" --workers 1
run "$dir/many.out"

# Each run's functions of weir's own binary, hottest first, the first run's before the second's;
# `'N` marks a recursion depth in callgrind's names, not part of the symbol.
for f in "$dir/one.out" "$dir/many.out"; do
  callgrind_annotate --auto=no --threshold=100 "$f" 2>/dev/null |
    grep -F "[$weir]" | sed -E 's/^.*:([^ :]+) \[[^]]*\]$/\1/; s/'"'"'[0-9]+$//'
done | awk '!seen[$0]++' >build/hot-functions.txt
echo "build/hot-functions.txt: $(wc -l <build/hot-functions.txt) functions"
