#!/usr/bin/env bash
# A refactor's "behaviour and speed unchanged" check on a quiet machine: the
# hit, cold-build and warm-load benchmarks of this checkout's bekc beside an
# earlier checkout's, each as ratios in one run (docs/benchmarks.md).
#   PYTHON=/opt/torch/.venv/bin/python BEKC=.carry/bin/bekc \
#     bash tests/gpu/before_after_benches.sh EARLIER_CHECKOUT
# EARLIER_CHECKOUT holds python/ and build/bekc (with libbekc_lookup.so
# beside it). JSON goes to $OUT when set.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
BEKC=${BEKC:-$PWD/build/bekc}
OLD=${1:?an earlier checkout}
status=0
echo "=== cold builds and hits: bench/build/bench_build.py"
$PY bench/build/bench_build.py --bekc "$BEKC" --baseline-bekc "$OLD/build/bekc" \
    --cold-reps "${COLD_REPS:-8}" --hit-reps 40 --jobs-reps 1 \
    ${OUT:+--json "$OUT/before_after_build.json"} || status=1
echo "=== direct-mode hits: bench/bench_record_hit.py"
$PY bench/bench_record_hit.py --bekc "$BEKC" --baseline-bekc "$OLD/build/bekc" \
    --reps "${HIT_REPS:-200}" || status=1
echo "=== warm loads: bench/bench_warm_load.py"
$PY bench/bench_warm_load.py --bekc "$BEKC" --tools bekc,bekc-binary,bekc-earlier,bekc-binary-earlier --baseline "$OLD" \
    --reps "${REPS:-21}" ${OUT:+--json "$OUT/before_after_warm.json"} || status=1
exit $status
