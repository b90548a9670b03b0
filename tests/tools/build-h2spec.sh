#!/usr/bin/env bash
# Builds h2spec (tests/tools/h2spec, its Go source as upstream published it; SOURCE.md) into
# OUT, offline: Debian's Go toolchain and the Debian packages of every library it imports, in
# GOPATH mode (go.mod's module versions are not fetched). Installs the packages if missing.
#   tests/tools/build-h2spec.sh target/tools/h2spec
set -euo pipefail
out=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)
packages=(golang-go golang-github-fatih-color-dev golang-github-spf13-cobra-dev
  golang-golang-x-net-dev golang-github-mattn-go-colorable-dev golang-github-mattn-go-isatty-dev
  golang-github-spf13-pflag-dev golang-golang-x-sys-dev golang-github-inconshreveable-mousetrap-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "build-h2spec: installing Debian's ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/github.com/summerwind" "$(dirname "$out")"
cp -r "$here/h2spec" "$work/src/github.com/summerwind/h2spec"
cd "$work/src/github.com/summerwind/h2spec"
GO111MODULE=off GOPATH="$work:/usr/share/gocode" GOCACHE="$work/cache" \
  go build -trimpath -o "$out" ./cmd/h2spec
echo "build-h2spec: $out"
