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
cargo bench --locked --bench soak --no-run
exec taskset -c 1 cargo bench --locked --bench soak -- --bench
