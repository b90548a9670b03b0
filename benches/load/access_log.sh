#!/usr/bin/env bash
# What the access log costs (issue 48): the same weir with no access log and with one writing
# every request (the default JSON, to a file), beside nginx without and with its own default
# access log (`access_log FILE;`, the combined format, a write(2) per request), in front of the
# same two nginx upstreams as instructions.sh (80/20 split).
#
# Two measures, each proxy on CPU 0 with one worker and wrk -c16 on CPU 1:
#   1. CPU per request: the process's utime + stime (/proc, every thread: weir's log writer
#      too, and the kernel's share of the writes) over DURATION seconds of load, divided by the
#      requests served. ROUNDS rounds, the four proxies interleaved in each, so a noisy
#      neighbour hits all alike; the spread of a ratio over the rounds is its noise floor.
#   2. User-space instructions per request (callgrind, an idle run subtracted, as
#      instructions.sh), over CG_DURATION seconds: repeatable, but blind to the kernel.
#   ROUNDS=5 DURATION=10 CG_DURATION=10 benches/load/access_log.sh
#   WEIR_BIN=/path/to/weir   # measure this build instead of building target/release/weir
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
CG_DURATION=${CG_DURATION:-10}
BASE_PORT=${BASE_PORT:-18380}

. benches/load/upstreams.sh

log="$dir/access.log"
cat >"$dir/weir-off.yaml" <<EOF
listeners: [{address: "127.0.0.1:$proxy_port"}]
admin: {address: "127.0.0.1:$admin"}
routes:
- name: web
  stable: {addresses: ["127.0.0.1:$stable"]}
  canary: {addresses: ["127.0.0.1:$canary"]}
  canary_weight: 20
EOF
sed "s|^routes:|access_log: {path: \"$log\"}\nroutes:|" "$dir/weir-off.yaml" >"$dir/weir-on.yaml"
for mode in off on; do
  if [ "$mode" = on ]; then logging="access_log $log;"; else logging="access_log off;"; fi
  cat >"$dir/nginx-$mode.conf" <<EOF
worker_processes 1; daemon off; master_process off; user root; error_log stderr error; pid $dir/proxy.pid;
events { worker_connections 8192; }
http { $logging keepalive_requests 100000000; keepalive_timeout 300s; $temp_paths
upstream app { server 127.0.0.1:$stable weight=4; server 127.0.0.1:$canary weight=1; keepalive 256; keepalive_requests 100000000; }
server { listen 127.0.0.1:$proxy_port backlog=4096; location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection "";
proxy_set_header Host \$http_host; proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for; proxy_set_header X-Forwarded-Proto \$scheme; proxy_set_header X-Forwarded-Host \$http_host; } } }
EOF
done

# start KIND [PREFIX...]: starts the proxy on CPU 0 (under PREFIX, e.g. valgrind), sets $proxy
start() {
  local kind=$1
  shift
  rm -f "$log"
  case $kind in
    weir-off | weir-on) taskset -c 0 "$@" "$weir" --workers 1 run --config "$dir/$kind.yaml" >/dev/null 2>&1 & ;;
    nginx-off | nginx-on) taskset -c 0 "$@" nginx -p "$dir" -c "$dir/$kind.conf" >/dev/null 2>&1 & ;;
  esac
  proxy=$!
  wait_port "$proxy_port"
}

stop() {
  kill -TERM "$proxy"
  wait "$proxy" || true
}

ticks() {
  awk '{print $14 + $15}' "/proc/$1/stat"
}

kinds=(weir-off weir-on nginx-off nginx-on)
hz=$(getconf CLK_TCK)
declare -A cpu_us
echo "CPU per request, $ROUNDS rounds of ${DURATION}s:" >&2
for round in $(seq "$ROUNDS"); do
  for kind in "${kinds[@]}"; do
    start "$kind" env
    # A second of warm-up: connections pooled, buffers grown.
    taskset -c 1 wrk -t1 -c16 -d1s "http://127.0.0.1:$proxy_port/" >/dev/null
    before=$(ticks "$proxy")
    requests=$(taskset -c 1 wrk -t1 -c16 -d"${DURATION}s" "http://127.0.0.1:$proxy_port/" | awk '/requests in/ {print $1}')
    after=$(ticks "$proxy")
    lines=0
    [ -f "$log" ] && lines=$(wc -l <"$log")
    stop
    us=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$requests" 'BEGIN {printf "%.3f", t / hz * 1e6 / n}')
    cpu_us[$kind,$round]=$us
    echo "  round $round $kind: $requests requests, $us µs CPU each, $lines log lines" >&2
  done
done

# run KIND LOAD(yes|no) under callgrind: prints "instructions requests"
callgrind() {
  local kind=$1 load=$2 out="$dir/callgrind.$1.$2" requests=0
  start "$kind" valgrind --tool=callgrind --callgrind-out-file="$out"
  if [ "$load" = yes ]; then
    requests=$(taskset -c 1 wrk -t1 -c16 -d"${CG_DURATION}s" "http://127.0.0.1:$proxy_port/" | awk '/requests in/ {print $1}')
  else
    sleep "$CG_DURATION"
  fi
  stop
  local total
  total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !seen {gsub(",", "", $1); print $1; seen = 1}')
  echo "$total $requests"
}

declare -A instructions
for kind in "${kinds[@]}"; do
  read -r idle _ < <(callgrind "$kind" no)
  read -r loaded requests < <(callgrind "$kind" yes)
  instructions[$kind]=$(((loaded - idle) / requests))
  echo "$kind: $requests requests under callgrind, $loaded instructions loaded, $idle idle" >&2
done

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo
echo "| proxy | CPU µs per request (median of $ROUNDS) | log on / off, median (min–max over rounds) | instructions per request | log on / off |"
echo "|---|---|---|---|---|"
for kind in "${kinds[@]}"; do
  med=$(for r in $(seq "$ROUNDS"); do echo "${cpu_us[$kind,$r]}"; done | median)
  ratio="" range="" iratio=""
  case $kind in
    *-on)
      off=${kind%-on}-off
      ratios=$(for r in $(seq "$ROUNDS"); do awk -v a="${cpu_us[$kind,$r]}" -v b="${cpu_us[$off,$r]}" 'BEGIN {printf "%.3f\n", a / b}'; done)
      ratio=$(echo "$ratios" | median)
      range="($(echo "$ratios" | sort -g | head -1)–$(echo "$ratios" | sort -g | tail -1))"
      iratio=$(awk -v a="${instructions[$kind]}" -v b="${instructions[$off]}" 'BEGIN {printf "%.3f", a / b}')
      ;;
  esac
  echo "| $kind | $med | $ratio $range | ${instructions[$kind]} | $iratio |"
done
