#!/usr/bin/env bash
# Assembles the root filesystem of weir's container image in OUTDIR:
#   /usr/local/bin/weir                  BINARY, stripped
#   the shared libraries it links        as `ldd` finds them, the dynamic loader included, each
#                                        at the path the loader will look for it again
#   /etc/ssl/certs/ca-certificates.crt   the CA bundle (upstream TLS, the Kubernetes API)
#   /etc/passwd, /etc/group              root and the user weir runs as, weir (65532:65532)
#   /etc/nsswitch.conf                   names from /etc/hosts before DNS (below)
#   /tmp                                 empty, sticky and world-writable (below)
# and nothing else: no shell, no package manager.
#
# Usage: build/image-rootfs.sh BINARY OUTDIR
#   OUTDIR must be missing or empty, so nothing stale from an earlier run gets into an image.
#   WEIR_CA_BUNDLE names another CA bundle (default /etc/ssl/certs/ca-certificates.crt).
#
# One script for both builds of the image: the Containerfile's builder stage runs it in the
# official Rust image, and tests/run.sh runs it on the test machine before building the
# Containerfile's final stage from its output (offline, with buildah's --build-context).
set -euo pipefail

die() {
  echo "image-rootfs.sh: $*" >&2
  exit 1
}

[ $# -eq 2 ] || die "usage: $0 BINARY OUTDIR"
binary=$1
out=$2
ca_bundle=${WEIR_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

[ -f "$binary" ] && [ -x "$binary" ] || die "$binary: not an executable file"
[ -s "$ca_bundle" ] || die "$ca_bundle: no CA bundle (Debian's ca-certificates package has it)"
command -v ldd >/dev/null || die "ldd not found (Debian's libc-bin package has it)"
command -v strip >/dev/null || die "strip not found (Debian's binutils package has it)"
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
  die "$out is not empty"
fi
mkdir -p "$out"

# The binary, stripped: release builds keep line tables (debug = 1 in Cargo.toml) for
# profiling, about half the file, which a deployed proxy never reads.
install -D -m 0755 "$binary" "$out/usr/local/bin/weir"
strip --strip-all "$out/usr/local/bin/weir"

# The libraries, from ldd's two kinds of lines:
#   libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)     a library and where it was found
#   /lib64/ld-linux-x86-64.so.2 (0x...)                       the loader, by its PT_INTERP path
# (linux-vdso.so.1 is the kernel's, no file). A static binary needs none: ldd says so and fails.
if ! listing=$(ldd "$out/usr/local/bin/weir" 2>&1); then
  case $listing in
    *"not a dynamic executable"* | *"statically linked"*) listing="" ;;
    *) die "ldd $binary: $listing" ;;
  esac
fi
case $listing in
  *"not found"*) die "ldd $binary: a library is missing: $listing" ;;
esac
libraries=$(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$listing")
for lib in $libraries; do
  # -L: the file a symlink such as libc.so.6 names, under the name the loader asks for. No
  # ld.so.cache is shipped: the loader finds these in its built-in directories, which are
  # where ldd found them.
  install -D -m 0755 "$(readlink -f "$lib")" "$out$lib"
done

install -D -m 0644 "$ca_bundle" "$out/etc/ssl/certs/ca-certificates.crt"

# 65532, the uid distroless and many charts use for "nonroot": not 0, above the ranges
# distributions give system and login users, so it owns no host file under a shared uid.
install -d -m 0755 "$out/etc"
cat >"$out/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
weir:x:65532:65532:weir:/nonexistent:/usr/sbin/nologin
EOF
cat >"$out/etc/group" <<'EOF'
root:x:0:
weir:x:65532:
EOF
# Without this file glibc asks DNS before /etc/hosts, so `localhost` and a pod's hostAliases
# (which Kubernetes writes to the /etc/hosts it mounts) would go to the cluster's DNS first.
cat >"$out/etc/nsswitch.conf" <<'EOF'
passwd: files
group: files
hosts: files dns
EOF
chmod 0644 "$out/etc/passwd" "$out/etc/group" "$out/etc/nsswitch.conf"
# `weir demo` writes its manifests to the temp dir: with /tmp, `docker run weir:VERSION demo`
# works. Deployed with a read-only root filesystem, weir writes nothing there.
install -d -m 1777 "$out/tmp"

echo "image-rootfs.sh: $out: $(du -sh "$out" | cut -f1), $(echo "$libraries" | wc -w) libraries"
