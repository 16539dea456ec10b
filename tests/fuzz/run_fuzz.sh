#!/usr/bin/env bash
# Builds the scanner's libFuzzer target with clang++-14 (ASan + UBSan) and runs
# it for a bounded time:
#
#   tests/fuzz/run_fuzz.sh [SECONDS]        # default 60
#
# The seed corpus is the scanner corpus (tests/data/corpus) plus the seeds in
# tests/fuzz/seeds, which include every input that once crashed or hung the
# scanner. New corpus entries go to $BEKC_FUZZ_DIR/corpus (default
# build-fuzz/), failing inputs to $BEKC_FUZZ_DIR/artifacts. Exits non-zero on
# any crash, leak, timeout (2 s per input) or out-of-memory (2 GiB).
#
# Environment: CXX_FUZZ (default clang++-14), BEKC_FUZZ_DIR, BEKC_FUZZ_ARGS
# (extra libFuzzer flags, e.g. "-jobs=2 -workers=2").
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${BEKC_FUZZ_DIR:-$root/build-fuzz}"
cxx="${CXX_FUZZ:-clang++-14}"

if ! command -v "$cxx" >/dev/null; then
    echo "run_fuzz.sh: error: $cxx not found; set CXX_FUZZ to a clang++ with libFuzzer" >&2
    exit 2
fi

mkdir -p "$out/corpus" "$out/artifacts"
bin="$out/fuzz_scanner"
# The scanner and diagnostics depend on the standard library only.
sources=("$root/tests/fuzz/fuzz_scanner.cpp" "$root"/lib/scan/*.cpp "$root"/lib/diag/*.cpp)
if [[ ! -x "$bin" ]] || [[ -n "$(find "${sources[@]}" "$root"/lib/scan/*.hpp "$root"/lib/diag/*.hpp \
        -newer "$bin" 2>/dev/null)" ]]; then
    echo "run_fuzz.sh: building $bin" >&2
    "$cxx" -std=c++2b -g -O1 -fno-omit-frame-pointer \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$root/lib" "${sources[@]}" -o "$bin"
fi

seeds="$out/seeds"
rm -rf "$seeds"
mkdir -p "$seeds"
cp "$root"/tests/fuzz/seeds/* "$seeds"/ 2>/dev/null || true
for f in "$root"/tests/data/corpus/*.cu "$root"/tests/data/corpus/*.cpp; do
    [[ -e "$f" ]] && cp "$f" "$seeds/"
done

echo "run_fuzz.sh: fuzzing for ${seconds}s ($(ls "$seeds" | wc -l) seeds)" >&2
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# shellcheck disable=SC2086
exec "$bin" "$out/corpus" "$seeds" \
    -max_total_time="$seconds" -timeout=2 -rss_limit_mb=2048 -max_len=16384 \
    -dict="$root/tests/fuzz/scanner.dict" -artifact_prefix="$out/artifacts/" \
    -print_final_stats=1 ${BEKC_FUZZ_ARGS:-}
