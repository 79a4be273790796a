#!/usr/bin/env bash
# Build and run the fuzz targets for a bounded time each on the stable toolchain.
# Usage: crates/fwd/fuzz/run.sh [SECONDS [TARGET...]]   (default 30 s of fuzzing per target;
# targets: parse_frame, media_packet; default both)
# cargo-fuzz is not needed: it only adds these flags. Exits 0 with a message when a C++
# compiler (for libFuzzer itself) is missing.
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-30}"
if ! command -v c++ >/dev/null 2>&1; then
  echo "fuzz: skipped: no C++ compiler to build libFuzzer (apt-get install g++)"
  exit 0
fi
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(pwd)/target}"
# An explicit --target keeps RUSTFLAGS off build scripts (as cargo-fuzz does).
host="$(rustc -vV | sed -n 's/^host: //p')"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(parse_frame media_packet)
cargo build --release --quiet --target "$host" --bins
for t in "${targets[@]}"; do
  corpus="$CARGO_TARGET_DIR/corpus-$t"
  mkdir -p "$corpus"
  "$CARGO_TARGET_DIR/$host/release/$t" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
  echo "fuzz: $t ran ${secs} s without a failure"
done
