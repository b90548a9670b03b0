#!/usr/bin/env bash
# What mirroring every request costs the clients (issue 50): one weir, canary at weight 0, with
# no mirror, and with every request mirrored to a canary that is healthy (an nginx upstream),
# 10 s slow (a listener that accepts and never answers: each copy waits out the backend's
# response timeout) or down (a closed port). Two controls tell weir's part from the rest:
# off-hyper, the route without a mirror under `http1_engine: hyper`; off-canary-busy, the route
# without a mirror while a wrk of its own sends the canary's nginx as many requests as the
# copies would, on the core the stable's nginx and the clients' wrk share (a 2-core machine
# has no third core for the canary).
#   MODES="off mirrored"   # a subset, in this order
# Each mode in turn, ROUNDS rounds interleaved, weir on CPU 0 with one worker, wrk on CPU 1:
#   1. at a fixed rate — wrk -c16 with each connection sending a request every 16 ms (about
#      1,000 requests/s): the clients' p50 and p99 (wrk --latency) and requests/s;
#   2. flat out — wrk -c16: requests/s and weir's CPU per request (every thread, /proc), which
#      says what the copies cost when CPU is what is short.
#   ROUNDS=3 DURATION=10 benches/load/mirror.sh
#   WEIR_BIN=/path/to/weir   # measure this build instead of building target/release/weir
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
BASE_PORT=${BASE_PORT:-18580}

. benches/load/upstreams.sh

silent=$((BASE_PORT + 4))
dead=$((BASE_PORT + 5))
# Accepts and never answers, holding every connection.
taskset -c 1 python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $silent)); s.listen(4096)
held = []
while True:
    held.append(s.accept()[0])
" &
pids+=($!)
wait_port "$silent"

config() { # NAME CANARY_PORT MIRROR(yes|no) [HTTP1_ENGINE]
  local mirror=""
  [ "$3" = yes ] && mirror="  mirror: {name: dark, percent: 100}"
  cat >"$dir/$1.yaml" <<EOF
listeners: [{address: "127.0.0.1:$proxy_port"}]
admin: {address: "127.0.0.1:$admin"}
limits: {http1_engine: ${4:-passthrough}}
upstream_defaults: {response_timeout: 10s}
routes:
- name: web
  stable: {addresses: ["127.0.0.1:$stable"]}
  canary: {addresses: ["127.0.0.1:$2"]}
  canary_weight: 0
$mirror
EOF
}
config off "$canary" no
config off-hyper "$canary" no hyper
cp "$dir/off.yaml" "$dir/off-canary-busy.yaml"
config mirrored "$canary" yes
config slow-canary "$silent" yes
config down-canary "$dead" yes

cat >"$dir/pace.lua" <<'EOF'
function delay() return 16 end
EOF

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The stable's upstream latency as weir measured it (request written → response head): its sum
# and count. What it gains under mirroring is the stable's own answer coming later, which weir
# does not control (here: the canary's nginx on the stable's core).
stable_upstream() {
  curl -s "http://127.0.0.1:$admin/metrics" | awk '
    /^weir_request_duration_seconds_sum\{.*backend="stable"/ {s = $2}
    /^weir_request_duration_seconds_count\{.*backend="stable"/ {c = $2}
    END {print s, c}'
}
hz=$(getconf CLK_TCK)
modes=(${MODES:-off off-hyper off-canary-busy mirrored slow-canary down-canary})
declare -A paced_rps p50 p99 flat_rps cpu_us upstream_us
for round in $(seq "$ROUNDS"); do
  for mode in "${modes[@]}"; do
    taskset -c 0 "$weir" --workers 1 run --config "$dir/$mode.yaml" >/dev/null 2>&1 &
    proxy=$!
    wait_port "$proxy_port"
    busy=
    if [ "$mode" = off-canary-busy ]; then
      # The canary's nginx answers as many requests as mirroring would send it, from a paced
      # wrk of its own on the same core: what the copies cost the shared core, without weir.
      taskset -c 1 wrk -t1 -c16 -d$((2 * DURATION + 5))s -s "$dir/pace.lua" "http://127.0.0.1:$canary/" >/dev/null &
      busy=$!
    fi
    taskset -c 1 wrk -t1 -c16 -d1s "http://127.0.0.1:$proxy_port/" >/dev/null
    before_up=$(stable_upstream)
    out=$(taskset -c 1 wrk -t1 -c16 -d"${DURATION}s" --latency -s "$dir/pace.lua" "http://127.0.0.1:$proxy_port/")
    after_up=$(stable_upstream)
    upstream_us[$mode,$round]=$(awk -v b="$before_up" -v a="$after_up" 'BEGIN {split(b, x, " "); split(a, y, " "); printf "%.0f", (y[1] - x[1]) / (y[2] - x[2]) * 1e6}')
    paced_rps[$mode,$round]=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    p50[$mode,$round]=$(awk '$1 == "50%" {print $2}' <<<"$out")
    p99[$mode,$round]=$(awk '$1 == "99%" {print $2}' <<<"$out")
    before=$(ticks "$proxy")
    out=$(taskset -c 1 wrk -t1 -c16 -d"${DURATION}s" "http://127.0.0.1:$proxy_port/")
    after=$(ticks "$proxy")
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    flat_rps[$mode,$round]=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    cpu_us[$mode,$round]=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$requests" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
    errors=$(awk '/Non-2xx|Socket errors/' <<<"$out")
    kill -TERM "$proxy"
    wait "$proxy" || true
    if [ -n "$busy" ]; then kill "$busy" 2>/dev/null || true; wait "$busy" 2>/dev/null || true; fi
    echo "  round $round $mode: paced ${paced_rps[$mode,$round]} req/s p50 ${p50[$mode,$round]} p99 ${p99[$mode,$round]} stable upstream mean ${upstream_us[$mode,$round]}us; flat out ${flat_rps[$mode,$round]} req/s, ${cpu_us[$mode,$round]} µs CPU each ${errors}" >&2
  done
done

list() { local -n values=$1; local m=$2; for r in $(seq "$ROUNDS"); do printf '%s ' "${values[$m,$r]}"; done; }
echo
echo "| mode | paced req/s (per round) | p50 (per round) | p99 (per round) | stable's upstream latency, mean µs (per round) | flat-out req/s (per round) | CPU µs a request (per round) |"
echo "|---|---|---|---|---|---|---|"
for mode in "${modes[@]}"; do
  echo "| $mode | $(list paced_rps "$mode")| $(list p50 "$mode")| $(list p99 "$mode")| $(list upstream_us "$mode")| $(list flat_rps "$mode")| $(list cpu_us "$mode")|"
done
