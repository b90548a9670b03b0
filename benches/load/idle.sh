#!/usr/bin/env bash
# Many idle keep-alive clients (issue 16): weir vs nginx vs HAProxy, one command. Installs
# Debian's nginx and haproxy when missing, builds weir in release, and runs benches/idle.rs
# pinned to CPU 1 (proxies are pinned to CPU 0 by the harness). Needs a file-descriptor limit
# above IDLE + 200 (`ulimit -n`).
#   ROUNDS=2 IDLE=8000 RATE=1000 DURATION=10 benches/load/idle.sh
#   WEIR_BASELINE_BIN=/path/to/old/weir benches/load/idle.sh   # an earlier build beside
set -euo pipefail
cd "$(dirname "$0")/../.."

. benches/load/packages.sh
need nginx nginx-light
need haproxy haproxy
install_needed
export PATH="$PATH:/usr/sbin"

need_fds=$(( ${IDLE:-8000} + 200 ))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need_fds" ]; then
  ulimit -n "$need_fds" 2>/dev/null || {
    echo "idle.sh: needs $need_fds open files, and ulimit -n is $(ulimit -n) (hard $(ulimit -Hn))" >&2
    exit 1
  }
fi

cargo build --release --locked --bin weir
# The harness builds in a directory of its own: `cargo bench` links weir's binary too, with the
# bench profile, whose symbols differ from the release build's, so in target/release it would
# replace the binary laid out by build/hot-functions.txt (build.rs) with one that is not.
export CARGO_TARGET_DIR="$PWD/target/bench"
cargo bench --locked --bench idle --no-run
export WEIR_BIN="$PWD/target/release/weir"
exec taskset -c 1 cargo bench --locked --bench idle -- --bench
