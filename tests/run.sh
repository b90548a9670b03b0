#!/usr/bin/env bash
# The test command: installs what the tests need on a fresh Debian machine, then runs every test.
#   - Debian's `prometheus` package: `promtool check metrics` and a real Prometheus server that
#     scrapes weir in tests/prometheus.rs;
#   - Debian's `chromium` and `chromium-driver`: the rollout page tested in a real headless
#     browser (tests/ui.rs);
#   - Debian's `nginx-light`: a real h2c upstream ending connections at its request cap
#     (tests/h2_pool.rs);
#   - Debian's `buildah`: the container image built from the Containerfile, offline, and weir
#     run from its root filesystem (tests/image.rs; below).
#   - Debian's Go toolchain and the libraries h2spec imports: h2spec, the HTTP/2 conformance
#     suite, built offline from its source in tests/tools/h2spec and run against both of weir's
#     HTTP/2 listeners (tests/h2spec.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
[ -x /usr/sbin/nginx ] || missing+=(nginx-light)
[ -x /usr/bin/buildah ] || missing+=(buildah)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "tests/run.sh: installing Debian's ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

log=$(mktemp)
image_dir=$(mktemp -d)
# buildah's storage is its own, in image_dir, so nothing is left behind on the machine.
buildah=(buildah --root "$image_dir/storage" --runroot "$image_dir/run" --storage-driver vfs)
cleanup() {
  rm -f "$log"
  if [ -d "$image_dir/storage" ]; then
    "${buildah[@]}" rm --all >/dev/null 2>&1 || true
  fi
  rm -rf "$image_dir"
}
trap cleanup EXIT

# The container image, as the Containerfile's final stage, without a registry: its `rootfs`
# stage (which would pull the official Rust image and build there) is stood in for by the root
# filesystem build/image-rootfs.sh assembles here from this release build; buildah skips a stage
# that --build-context replaces. Then a container of the image is mounted, and tests/image.rs
# checks its config and contents and runs weir from it with chroot, which needs root (CI is).
if [ "$(id -u)" -eq 0 ]; then
  cargo build --release --locked --bin weir
  build/image-rootfs.sh target/release/weir "$image_dir/context/rootfs"
  version=$(cargo pkgid --locked -p weir)
  version=${version##*[@#]}
  "${buildah[@]}" build --quiet --isolation chroot --pull=never \
    --build-context rootfs="$image_dir/context" -t "weir:$version" -f Containerfile . >/dev/null
  "${buildah[@]}" images "weir:$version"
  "${buildah[@]}" inspect --type image "weir:$version" >"$image_dir/inspect.json"
  container=$("${buildah[@]}" from --pull=never "weir:$version")
  WEIR_IMAGE_ROOTFS=$("${buildah[@]}" mount "$container")
  export WEIR_IMAGE_ROOTFS WEIR_IMAGE_INSPECT="$image_dir/inspect.json"
else
  echo "tests/run.sh: not root: the container image is not built (tests/image.rs skips it)"
fi

# h2spec, built once into target/ (again when its source changes).
h2spec=target/tools/h2spec
if [ ! -x "$h2spec" ] || [ -n "$(find tests/tools/h2spec tests/tools/build-h2spec.sh -newer "$h2spec" -print -quit)" ]; then
  tests/tools/build-h2spec.sh "$h2spec"
fi
export WEIR_H2SPEC="$PWD/$h2spec"

# Keep the runner's own output, then close with one total line ("N passed, N failed").
set +e
cargo test --workspace --locked 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
awk '/^test result:/ { for (i = 2; i <= NF; i++) { if ($i ~ /^passed;?$/) p += $(i-1); if ($i ~ /^failed;?$/) f += $(i-1) } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
