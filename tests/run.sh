#!/usr/bin/env bash
# The test command: installs what the tests need on a fresh Debian machine, then runs every test.
#   - Debian's `prometheus` package: `promtool check metrics` and a real Prometheus server that
#     scrapes weir in tests/prometheus.rs.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "tests/run.sh: installing Debian's prometheus package (promtool, prometheus)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
