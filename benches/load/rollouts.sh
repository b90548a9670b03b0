#!/usr/bin/env bash
# Many rollouts in one weir (issue 48): the same weir with ONE rollout and with N (default 200),
# each rollout on its own route (its own host) with a background analysis measuring every second.
#
# Measured for each, in the same run:
#   - RSS once every rollout is under way (paused at 20 %, its analysis running): memory per
#     rollout = (RSS with N - RSS with one) / (N - 1);
#   - the process's CPU per second at rest (no traffic), over REST seconds (utime + stime from
#     /proc): what N drivers, N analyses and the page's sampling cost with nothing to proxy;
#   - user-space instructions per proxied request on one route (callgrind, as
#     benches/load/instructions.sh: wrk for DURATION seconds, an idle run of the same length
#     subtracted, which takes the analyses' own work out): the data path with N routes and
#     rollouts against one.
#   N=200 REST=30 DURATION=10 benches/load/rollouts.sh
#   WEIR_BIN=/path/to/weir   # measure this build instead of building target/release/weir
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-200}
REST=${REST:-30}
DURATION=${DURATION:-10}
BASE_PORT=${BASE_PORT:-18280}

. benches/load/upstreams.sh

cat >"$dir/analysis.yaml" <<'YAML'
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: live}
spec:
  args:
  - name: route
  metrics:
  - name: success-rate
    interval: 1s
    successCondition: result >= 0.98
    inconclusiveLimit: 1000000
    provider:
      plugin:
        weir/live: {route: "{{args.route}}", backend: canary, metric: success-rate, window: 5s, minRequests: 30}
YAML

# config COUNT: a config with COUNT routes r1..rCOUNT (hosts rI.example), a rollout on each.
config() {
  local count=$1 out="$dir/weir-$1.yaml"
  {
    echo "listeners: [{address: \"127.0.0.1:$proxy_port\"}]"
    echo "admin: {address: \"127.0.0.1:$admin\"}"
    echo "routes:"
    for i in $(seq "$count"); do
      echo "- name: r$i"
      echo "  match: {hosts: [r$i.example]}"
      echo "  stable: {addresses: [\"127.0.0.1:$stable\"]}"
      echo "  canary: {addresses: [\"127.0.0.1:$canary\"]}"
    done
    echo "rollouts:"
    for i in $(seq "$count"); do
      echo "- manifests: [rollout-$i.yaml, analysis.yaml]"
      echo "  route: r$i"
    done
  } >"$out"
  for i in $(seq "$count"); do
    [ -f "$dir/rollout-$i.yaml" ] && continue
    cat >"$dir/rollout-$i.yaml" <<YAML
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: r$i}
spec:
  strategy:
    canary:
      analysis: {templates: [{templateName: live}], args: [{name: route, value: r$i}]}
      steps:
      - setWeight: 20
      - pause: {}
YAML
  done
  echo "$out"
}

# Waits until every rollout of the weir on $admin is paused (under way, its analysis running).
wait_paused() {
  local count=$1
  for _ in $(seq 600); do
    local paused
    paused=$(curl -s "http://127.0.0.1:$admin/rollouts" | grep -o '"phase": *"Paused"' | wc -l || true)
    [ "$paused" -ge "$count" ] && return 0
    sleep 0.1
  done
  echo "the rollouts did not all pause" >&2
  exit 1
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# rest COUNT: prints "RSS_KIB CPU_PER_SECOND" for a weir with COUNT rollouts at rest.
rest() {
  local count=$1 cfg
  cfg=$(config "$count")
  taskset -c 0 "$weir" --workers 1 run --config "$cfg" >"$dir/weir-$count.log" 2>&1 &
  local pid=$!
  wait_port "$admin"
  wait_paused "$count"
  sleep 5 # every analysis measured a few times
  local rss t0 t1
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  t0=$(cpu_ticks "$pid")
  sleep "$REST"
  t1=$(cpu_ticks "$pid")
  kill -TERM "$pid"
  wait "$pid" || true
  local hz
  hz=$(getconf CLK_TCK)
  echo "$rss $(awk -v a="$t0" -v b="$t1" -v s="$REST" -v hz="$hz" 'BEGIN {printf "%.4f", (b - a) / hz / s}')"
}

# instructions COUNT: user-space instructions per request on route r1, weir with COUNT rollouts.
instructions() {
  local count=$1 cfg total=()
  cfg=$(config "$count")
  for load in no yes; do
    local out="$dir/callgrind.$count.$load" requests=0
    taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out" "$weir" --workers 1 run --config "$cfg" >/dev/null 2>&1 &
    local vg=$!
    wait_port "$proxy_port"
    wait_port "$admin"
    wait_paused "$count"
    if [ "$load" = yes ]; then
      requests=$(taskset -c 1 wrk -t1 -c16 -d"${DURATION}s" -H "Host: r1.example" "http://127.0.0.1:$proxy_port/" | awk '/requests in/ {print $1}')
    else
      sleep "$DURATION"
    fi
    kill -TERM "$vg"
    wait "$vg" || true
    local sum
    sum=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !seen {gsub(",", "", $1); print $1; seen = 1}')
    total+=("$sum" "$requests")
  done
  echo "$(((total[2] - total[0]) / total[3])) ${total[3]}"
}

read -r rss1 cpu1 < <(rest 1)
read -r rssn cpun < <(rest "$N")
read -r ins1 req1 < <(instructions 1)
read -r insn reqn < <(instructions "$N")

echo
echo "| rollouts | RSS at rest | CPU at rest (s per s) | instructions per request on r1 (requests) |"
echo "|---|---|---|---|"
echo "| 1 | $((rss1 / 1024)) MiB | $cpu1 | $ins1 ($req1) |"
echo "| $N | $((rssn / 1024)) MiB | $cpun | $insn ($reqn) |"
echo
echo "memory per rollout: $(((rssn - rss1) / (N - 1))) KiB; instructions per request, $N against 1: $(awk -v a="$insn" -v b="$ins1" 'BEGIN {printf "%.4f", a / b}')"
