#!/usr/bin/env bash
# Large bodies (issue 16, scenario 5): 1 MiB and 64 MiB downloads and uploads over HTTP/1.1
# through weir, nginx and HAProxy, and direct to the upstream, one command. Installs Debian's
# nginx and haproxy when missing, builds weir in release, and runs benches/bodies.rs pinned to
# CPU 1 (the proxies are pinned to CPU 0 by the harness). Knobs, defaults shown:
#   ROUNDS=2      interleaved rounds (each scenario: weir, nginx, HAProxy, direct), medians
#   DURATION=10   seconds of back-to-back transfers per contender and scenario
#   CONNS=4       client connections, each one transfer at a time
#   NGINX_BUFFER_KIB=64  nginx's one buffer each way when unbuffered (proxy_buffer_size,
#                 client_body_buffer_size); 0 keeps nginx's defaults (4 KiB and 16 KiB)
#   ROUNDS=1 DURATION=3 benches/load/bodies.sh   # a quick run
set -euo pipefail
cd "$(dirname "$0")/../.."

. benches/load/packages.sh
need nginx nginx-light
need haproxy haproxy
need ss iproute2
install_needed
export PATH="$PATH:/usr/sbin"

cargo build --release --locked --bin weir
# The harness builds in a directory of its own: `cargo bench` links weir's binary too, with the
# bench profile, whose symbols differ from the release build's, so in target/release it would
# replace the binary laid out by build/hot-functions.txt (build.rs) with one that is not.
export CARGO_TARGET_DIR="$PWD/target/bench"
cargo bench --locked --bench bodies --no-run
export WEIR_BIN="$PWD/target/release/weir"
exec taskset -c 1 cargo bench --locked --bench bodies -- --bench
