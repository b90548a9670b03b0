#!/usr/bin/env bash
# The soak (issue 12): weir under a fixed mix of traffic — keep-alive and new-connection
# HTTP/1.1, h2c, upgrades, 4 MiB streamed bodies, slow clients, mirroring, reloads every 10 s and
# a 100/s swap storm every minute — for DURATION seconds, RSS, fds and threads sampled every
# 10 s, and whether they stay flat after WARMUP. Loopback only. weir on CPU 0, the load on CPU 1.
#   DURATION=600 WARMUP=120 benches/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${WEIR_BIN:-}" ]; then
  cargo build --release --locked --bin weir
fi
export WEIR_BIN="${WEIR_BIN:-$PWD/target/release/weir}"
# The harness builds in a directory of its own: `cargo bench` links weir's binary too, with the
# bench profile, whose symbols differ from the release build's, so in target/release it would
# replace the binary laid out by build/hot-functions.txt (build.rs) with one that is not.
export CARGO_TARGET_DIR="$PWD/target/bench"
cargo bench --locked --bench soak --no-run
exec taskset -c 1 cargo bench --locked --bench soak -- --bench
