#!/usr/bin/env bash
# gRPC unary through weir, nginx and HAProxy to an upstream with a stream limit of 10, 100 and
# 1,000 (issue 18), one command. Installs Debian's nginx, haproxy and nghttp2-client (h2load)
# when missing, builds weir in release, and runs benches/grpc.rs pinned to CPU 1 (proxies are
# pinned to CPU 0 by the harness).
#   ROUNDS=2 DURATION=30 LIMITS=10,100,1000 benches/load/grpc.sh
#   DURATION=60 ROUNDS=1 benches/load/grpc.sh      # the 60 s collapse check
#   PROXIES=weir LIMITS=100 benches/load/grpc.sh   # some contenders only (direct, weir, nginx,
#                                                  # haproxy, baseline), e.g. to profile weir
#   INSTRUCTIONS=20000 PROXIES=baseline,weir WEIR_BASELINE_BIN=/old/weir ROUNDS=2 benches/load/grpc.sh
#                     # instructions per call under callgrind (repeatable on a noisy machine)
set -euo pipefail
cd "$(dirname "$0")/../.."

. benches/load/packages.sh
need nginx nginx-light
need haproxy haproxy
need h2load nghttp2-client
need valgrind valgrind
install_needed

cargo build --release --locked --bin weir
# The harness builds in a directory of its own: `cargo bench` links weir's binary too, with the
# bench profile, whose symbols differ from the release build's, so in target/release it would
# replace the binary laid out by build/hot-functions.txt (build.rs) with one that is not.
export CARGO_TARGET_DIR="$PWD/target/bench"
cargo bench --locked --bench grpc --no-run
export WEIR_BIN="$PWD/target/release/weir"
exec taskset -c 1 cargo bench --locked --bench grpc -- --bench
