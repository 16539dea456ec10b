#!/usr/bin/env bash
# Issue 30, goal 1, on the GPU machine (docs/benchmarks.md):
#   bash tests/gpu/start_benches.sh
# bench/bench_warm_load.py (warm load in a new process: bekc, brainevent's
# pipeline, tvm-ffi's load_inline) and bench/bench_brainevent_start.py (import
# brainevent and the first call of 10 ops, run on the GPU). Expects bekc at
# $BEKC (default build/bekc). What is not installed comes from .whl/: brainevent
# and its dependencies (docs/gpu.md), apache-tvm-ffi, typing_extensions and
# ninja (tvm-ffi runs `ninja` on every load), into /tmp/bekc-bench-site.
# Settings: REPS (default 9), START_REPS (bench_brainevent_start.py's, default REPS), COLD_REPS (default 1), PREBUILD=1 (bekc's cache
# from `bekc build <brainevent package>` instead of a first run), MODE (run,
# the default; lower without a GPU); JSON goes to $OUT when set.
set -uo pipefail
cd "$(dirname "$0")/../.."
export XLA_PYTHON_CLIENT_PREALLOCATE=false
PY=${PYTHON:-python3}
BEKC=${BEKC:-$PWD/build/bekc}
source tests/gpu/bench_site.sh || exit 1
status=0
echo "=== bench/bench_warm_load.py"
$PY bench/bench_warm_load.py --bekc "$BEKC" --reps "${REPS:-9}" --cold-reps "${COLD_REPS:-1}" \
    ${OUT:+--json "$OUT/warm_load.json"} || status=1
echo "=== bench/bench_brainevent_start.py"
$PY bench/bench_brainevent_start.py --bekc "$BEKC" --reps "${START_REPS:-${REPS:-9}}" --mode "${MODE:-run}" \
    ${PREBUILD:+--prebuild} ${OUT:+--json "$OUT/brainevent_start.json"} || status=1
exit $status
