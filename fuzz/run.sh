#!/usr/bin/env bash
# Runs every fuzz target (cargo-fuzz, libFuzzer) for RUNS executions each, or SECONDS at most,
# seeded from the repository's own tests, fixtures and deploy files; prints the executions of
# each and fails on any crash (its input is left in fuzz/artifacts/<target>/).
#   RUNS=10000000 SECONDS_EACH=3600 fuzz/run.sh            # every target
#   RUNS=100000 fuzz/run.sh http1_head condition           # some
#   SANITIZER=none fuzz/run.sh config argo_manifest        # without AddressSanitizer
# SANITIZER (default address) is passed to `cargo fuzz -s`. weir has no `unsafe` code, so ASan
# checks only its dependencies' unsafe code; `none` runs the YAML loaders about 10x faster.
# cargo-fuzz needs a nightly toolchain: without one this says so and skips (exit 0).
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-10000000}
SECONDS_EACH=${SECONDS_EACH:-3600}
SANITIZER=${SANITIZER:-address}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(http1_head http1_syntax config argo_manifest condition route_match hpack h2_frames h2_client h2_server)

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz: no nightly toolchain (rustup toolchain list); cargo-fuzz needs one. Skipped." >&2
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz" >&2
  cargo install --locked cargo-fuzz
fi

# Seeds: what the tests and fixtures already hold.
seed() { mkdir -p "corpus/$1"; cp -f "${@:2}" "corpus/$1/" 2>/dev/null || true; }
seed http1_head seeds/http1/*
seed http1_syntax seeds/http1/*
seed route_match seeds/http1/*
seed config ../deploy/*.yaml ../deploy/*/*.yaml
seed argo_manifest ../fixtures/argo-rollouts/examples/*.yaml ../deploy/analysis/*.yaml ../deploy/rollout/*.yaml
# HPACK: the RFC 7541 Appendix C blocks (seeds/hpack/), as a first byte of options and the blocks.
seed hpack seeds/hpack/*
# HTTP/2 frames: a first byte of options, then frames as a peer sends them (seeds/h2_frames/).
seed h2_frames seeds/h2_frames/*
# The client connection: an options byte, then a server's frames (seeds/h2_client/).
seed h2_client seeds/h2_client/*
# The server connection: an options byte, then a client's bytes (seeds/h2_server/).
seed h2_server seeds/h2_server/*
mkdir -p corpus/condition
grep -rhoE '(success|failure)Condition: .*' ../fixtures ../deploy | sed -E 's/^[a-zA-Z]+: //; s/^"(.*)"$/\1/' |
  sort -u | while IFS= read -r condition; do
    printf '%s' "$condition" >"corpus/condition/$(printf '%s' "$condition" | sha1sum | cut -c1-16)"
  done

status=0
summary=()
for target in "${targets[@]}"; do
  log="$(mktemp)"
  echo "fuzz: $target, up to $RUNS runs or ${SECONDS_EACH}s, sanitizer $SANITIZER" >&2
  if cargo +nightly fuzz run -s "$SANITIZER" "$target" "corpus/$target" -- \
      -runs="$RUNS" -max_total_time="$SECONDS_EACH" -print_final_stats=1 >"$log" 2>&1; then
    result=ok
  else
    result=CRASH
    status=1
    tail -40 "$log" >&2
  fi
  # A run that printed no statistics (it did not build, or was stopped) must not end the script
  # and lose the other targets' lines.
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)
  secs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | grep -oE 'in [0-9]+' | grep -oE '[0-9]+' | tail -1 || true)
  summary+=("| $target | ${runs:-?} | ${secs:-?} | $result |")
  # Each target's line as soon as it is known, so that a later target cannot lose it.
  echo "fuzz: | $target | ${runs:-?} | ${secs:-?} | $result |" >&2
  rm -f "$log"
done
echo
echo "| target | executions | seconds | result |"
echo "|---|---:|---:|---|"
printf '%s\n' "${summary[@]}"
exit $status
