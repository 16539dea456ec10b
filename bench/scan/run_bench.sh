#!/usr/bin/env bash
# Generates kernel files of 25k, 50k, 100k and 200k lines (one exported
# function per 50 lines, 90% of them from macros) and times bekc's scanner on
# each with bekc_bench_scan:
#
#   cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-release --target bekc_bench_scan
#   bench/scan/run_bench.sh [BENCH_BINARY] [--runs N]
#
# BENCH_BINARY defaults to build-release/tests/bekc_bench_scan. The files go
# to a temporary directory, removed afterwards.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bench="${1:-$root/build-release/tests/bekc_bench_scan}"
shift || true
if [[ ! -x "$bench" ]]; then
    echo "run_bench.sh: error: $bench is not built; see the comment at the top of this script" >&2
    exit 2
fi

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
files=()
for lines in 25000 50000 100000 200000; do
    f="$dir/kernels_$((lines / 1000))k.cu"
    python3 "$root/bench/scan/gen_scan_input.py" --lines "$lines" -o "$f"
    files+=("$f")
done
"$bench" "$@" "${files[@]}"
