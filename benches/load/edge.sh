#!/usr/bin/env bash
# weir against nginx and HAProxy beyond plaintext HTTP/1 (issue 16), one command: TLS 1.3
# termination (keep-alive, full handshakes, resumed handshakes), HTTP/2 from clients (h2c and
# over TLS) to HTTP/1 and to h2c upstreams, and two workers on two cores. Installs Debian's
# nginx, haproxy and nghttp2-client (h2load) when missing, builds weir in release, and runs
# benches/edge.rs pinned to CPU 1 (proxies are pinned to CPU 0, or 0-1 with two workers).
#   ROUNDS=2 DURATION=10 benches/load/edge.sh
#   SCENARIOS=tls-full,tls-resumed benches/load/edge.sh   # some scenarios only: tls-keepalive,
#       tls-full, tls-resumed, mtls-full, tls-keepalive-rustls, mtls-keepalive-rustls,
#       h2-tls-h1, h2c-h1, h2-tls-h2, h2c-h2, plain-1, plain-2, h2c-h2-2 (the two-worker
#       ones: plain-2, h2c-h2-2)
#   SCENARIOS=tls-full,mtls-full,tls-keepalive-rustls,mtls-keepalive-rustls ROUNDS=3 \
#       benches/load/edge.sh                              # mutual TLS's cost (issue 49)
#   WEIR_BASELINE_BIN=/path/to/old/weir benches/load/edge.sh  # an earlier build beside weir
#   HANDSHAKE_CLIENTS=8 SCENARIOS=tls-resumed benches/load/edge.sh  # handshakes at once (32)
set -euo pipefail
cd "$(dirname "$0")/../.."

. benches/load/packages.sh
need nginx nginx-light
need haproxy haproxy
need h2load nghttp2-client
install_needed

cargo build --release --locked --bin weir
# The harness builds in a directory of its own: `cargo bench` links weir's binary too, with the
# bench profile, whose symbols differ from the release build's, so in target/release it would
# replace the binary laid out by build/hot-functions.txt (build.rs) with one that is not.
export CARGO_TARGET_DIR="$PWD/target/bench"
cargo bench --locked --bench edge --no-run
export WEIR_BIN="$PWD/target/release/weir"
exec taskset -c 1 cargo bench --locked --bench edge -- --bench
