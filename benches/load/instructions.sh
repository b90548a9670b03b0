#!/usr/bin/env bash
# User-space instructions per proxied request, weir (both HTTP/1 engines) vs nginx, counted by
# callgrind. Unlike
# seconds, instruction counts repeat on a shared, noisy machine, so this is the number to
# optimise against; the side-by-side run (run.sh) says what they are worth in req/s.
#
# Each proxy runs under `valgrind --tool=callgrind` (weir with one worker, nginx with one
# worker), in front of the same two nginx upstreams as run.sh, with the same 80/20 split and
# forwarding headers. wrk drives it for DURATION seconds; an idle run of the same length is
# subtracted, so start-up and timers do not count.
#   DURATION=20 benches/load/instructions.sh
#   WEIR_BIN=/path/to/weir   # measure this build instead of building target/release/weir
#   WEIR_BASELINE_BIN=/path/to/old/weir benches/load/instructions.sh   # also an earlier build,
#                                                   # both engines: a change's before and after
#   CALLGRIND_KEEP=/tmp/cg   # keep each loaded run's callgrind output there (callgrind.KIND,
#                            # KIND.requests), to find where a change's instructions went:
#                            # callgrind_annotate --auto=no per function, or with a source
#                            # file's path per line, divided by the run's requests
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-20}
BASE_PORT=${BASE_PORT:-18180}

. benches/load/upstreams.sh

cat >"$dir/weir.yaml" <<EOF
listeners: [{address: "127.0.0.1:$proxy_port"}]
admin: {address: "127.0.0.1:$admin"}
routes:
- name: web
  stable: {addresses: ["127.0.0.1:$stable"]}
  canary: {addresses: ["127.0.0.1:$canary"]}
  canary_weight: 20
EOF
# The same, with every HTTP/1 request through hyper's server and client: the reference the
# byte-forwarding engine is measured against.
sed 's/^routes:/limits: {http1_engine: hyper}\nroutes:/' "$dir/weir.yaml" >"$dir/weir-hyper.yaml"
cat >"$dir/nginx-proxy.conf" <<EOF
worker_processes 1; daemon off; master_process off; user root; error_log stderr error; pid $dir/proxy.pid;
events { worker_connections 8192; }
http { access_log off; keepalive_requests 100000000; keepalive_timeout 300s; $temp_paths
upstream app { server 127.0.0.1:$stable weight=4; server 127.0.0.1:$canary weight=1; keepalive 256; keepalive_requests 100000000; }
server { listen 127.0.0.1:$proxy_port backlog=4096; location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection "";
proxy_set_header Host \$http_host; proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for; proxy_set_header X-Forwarded-Proto \$scheme; proxy_set_header X-Forwarded-Host \$http_host; } } }
EOF

# run KIND LOAD(yes|no): prints "instructions requests"
run() {
  local kind=$1 load=$2 out="$dir/callgrind.$1.$2" requests=0
  case $kind in
    weir) taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out" "$weir" --workers 1 run --config "$dir/weir.yaml" >/dev/null 2>&1 & ;;
    weir-hyper) taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out" "$weir" --workers 1 run --config "$dir/weir-hyper.yaml" >/dev/null 2>&1 & ;;
    baseline) taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out" "$WEIR_BASELINE_BIN" --workers 1 run --config "$dir/weir.yaml" >/dev/null 2>&1 & ;;
    baseline-hyper) taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out" "$WEIR_BASELINE_BIN" --workers 1 run --config "$dir/weir-hyper.yaml" >/dev/null 2>&1 & ;;
    nginx) taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out" nginx -p "$dir" -c "$dir/nginx-proxy.conf" >/dev/null 2>&1 & ;;
  esac
  local vg=$!
  wait_port "$proxy_port"
  if [ "$load" = yes ]; then
    requests=$(taskset -c 1 wrk -t1 -c16 -d"${DURATION}s" "http://127.0.0.1:$proxy_port/" | awk '/requests in/ {print $1}')
  else
    sleep "$DURATION"
  fi
  kill -TERM "$vg"
  wait "$vg" || true
  local total
  total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !seen {gsub(",", "", $1); print $1; seen = 1}')
  echo "$total $requests"
}

kinds=(weir weir-hyper nginx)
if [ -n "${WEIR_BASELINE_BIN:-}" ]; then
  kinds=(weir baseline weir-hyper baseline-hyper nginx)
fi
declare -A per_request
for kind in "${kinds[@]}"; do
  read -r idle _ < <(run "$kind" no)
  read -r loaded requests < <(run "$kind" yes)
  if [ -n "${CALLGRIND_KEEP:-}" ]; then
    mkdir -p "$CALLGRIND_KEEP"
    cp "$dir/callgrind.$kind.yes" "$CALLGRIND_KEEP/callgrind.$kind"
    echo "$requests" > "$CALLGRIND_KEEP/$kind.requests"
  fi
  per_request[$kind]=$(((loaded - idle) / requests))
  echo "$kind: $requests requests, $loaded instructions loaded, $idle idle" >&2
done

echo
echo "| proxy | instructions per request (user space) | vs nginx |"
echo "|---|---|---|"
for kind in "${kinds[@]}"; do
  ratio=$(awk -v a="${per_request[$kind]}" -v b="${per_request[nginx]}" 'BEGIN {printf "%.2f", a / b}')
  echo "| $kind | ${per_request[$kind]} | $ratio |"
done
