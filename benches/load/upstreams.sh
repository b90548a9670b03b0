# Sourced by the callgrind harnesses (instructions.sh, rollouts.sh, access_log.sh) after
# BASE_PORT is set: installs valgrind, nginx and wrk if missing, builds weir (unless WEIR_BIN),
# and starts the two nginx upstreams on CPU 1, `stable` and `canary`, each answering
# `200 NAME` with `X-Backend: NAME`. Sets weir, dir (removed on exit), pids, proxy_port, stable,
# canary, admin, temp_paths (nginx's temporary paths, inside dir) and wait_port PORT.
. benches/load/packages.sh
need valgrind valgrind
need nginx nginx-light
need wrk wrk
install_needed
export PATH="$PATH:/usr/sbin"

if [ -z "${WEIR_BIN:-}" ]; then
  cargo build --release --locked --bin weir
fi
weir="${WEIR_BIN:-$PWD/target/release/weir}"
dir=$(mktemp -d)
mkdir -p "$dir/tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

proxy_port=$BASE_PORT
stable=$((BASE_PORT + 1))
canary=$((BASE_PORT + 2))
admin=$((BASE_PORT + 3))
temp_paths="client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp; uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;"

wait_port() {
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on $1" >&2
  exit 1
}

for name in stable canary; do
  port=${!name}
  cat >"$dir/up-$name.conf" <<CONF
worker_processes 1; daemon off; master_process off; user root; error_log stderr error; pid $dir/$name.pid;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 100000000; keepalive_timeout 300s; $temp_paths
server { listen 127.0.0.1:$port backlog=4096; location / { add_header X-Backend $name always; return 200 "$name\n"; } } }
CONF
  taskset -c 1 nginx -p "$dir" -c "$dir/up-$name.conf" &
  pids+=($!)
  wait_port "$port"
done
