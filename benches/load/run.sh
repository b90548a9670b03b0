#!/usr/bin/env bash
# The side-by-side load benchmark: weir vs nginx vs HAProxy (and straight to the upstream), one
# command. Installs Debian's nginx, haproxy and wrk when missing, builds weir in release, and runs
# benches/load.rs pinned to CPU 1 (proxies are pinned to CPU 0 by the harness).
#   ROUNDS=3 DURATION=10 RATE=5000 benches/load/run.sh
#   STORM_ONLY=1 RATE=1000 benches/load/run.sh     # only the swap storm, ROUNDS times
#   LATENCY_ONLY=1 RATE=1000 benches/load/run.sh   # only fixed-rate latency, every contender
#   CPU_ONLY=1 ROUNDS=30 DURATION=5 benches/load/run.sh  # only req/s and CPU a request, weir vs
#                                                  # nginx and HAProxy, many short rounds: the
#                                                  # median ratio with a 95 % interval
#   CPU_ONLY=1 CPU_RATE=20000 ROUNDS=16 DURATION=5 benches/load/run.sh  # the same at a fixed
#                                                  # offered rate (open loop, 64 connections)
#   PAGE_ONLY=1 benches/load/run.sh                # weir with the rollout page open vs closed
#   WEIR_BASELINE_BIN=/path/to/old/weir benches/load/run.sh  # a change's before and after, both
#                                                  # engines, interleaved (no nginx/HAProxy)
set -euo pipefail
cd "$(dirname "$0")/../.."

. benches/load/packages.sh
need nginx nginx-light
need haproxy haproxy
need wrk wrk
install_needed

cargo build --release --locked --bin weir
# The harness builds in a directory of its own: `cargo bench` links weir's binary too, with the
# bench profile, whose symbols differ from the release build's, so in target/release it would
# replace the binary laid out by build/hot-functions.txt (build.rs) with one that is not.
export CARGO_TARGET_DIR="$PWD/target/bench"
cargo bench --locked --bench load --no-run
export WEIR_BIN="$PWD/target/release/weir"
# The harness (load generator, wrk, upstreams) on CPU 1; it starts each proxy on CPU 0.
exec taskset -c 1 cargo bench --locked --bench load -- --bench
