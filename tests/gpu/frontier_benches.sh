#!/usr/bin/env bash
# Issue 30's build goals on the GPU machine (docs/benchmarks.md, "nvcc's
# phases"), on every core and on two (taskset -c 0,1):
#   bash tests/gpu/frontier_benches.sh [OLD_BEKC]
# bench/build/bench_build.py (one architecture: a cold build against bare
# nvcc), bench/build/bench_multiarch.py (sm_80,sm_90,sm_100 and PTX against
# `nvcc --threads 0`, then two_kernels.cu for sm_90: first build, edit and
# --force against bare nvcc) and bench/build/bench_new_arch.py (one more
# architecture against a full rebuild). Expects bekc at $BEKC (default
# build/bekc); brainevent comes from .whl/ when it is not installed. JSON goes
# to $OUT when set. CORES="all 2" (the default) picks the runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
BEKC=${BEKC:-$PWD/build/bekc}
OLD=${1:-}
if ! $PY -c 'import brainevent' 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/bekc-bench-site \
      .whl/brainevent-*.whl || exit 1
  export PYTHONPATH=/tmp/bekc-bench-site${PYTHONPATH:+:$PYTHONPATH}
fi
status=0
for cores in ${CORES:-all 2}; do
  pin=()
  [[ $cores == all ]] || pin=(taskset -c "0-$((cores - 1))")
  tag=${cores}cores
  echo "=== $tag: bench/build/bench_build.py"
  "${pin[@]}" $PY bench/build/bench_build.py --bekc "$BEKC" --cold-reps "${COLD_REPS:-6}" \
      --hit-reps 20 --jobs-reps 1 ${OLD:+--baseline-bekc "$OLD"} \
      ${OUT:+--json "$OUT/build_$tag.json"} || status=1
  echo "=== $tag: bench/build/bench_multiarch.py"
  # On two cores only the issue's file, no package.
  few=()
  [[ $cores == all ]] || few=(--files _dense/binary_densemv.cu --no-package)
  "${pin[@]}" $PY bench/build/bench_multiarch.py --bekc "$BEKC" --reps "${REPS:-3}" \
      --package-files "${PACKAGE_FILES:-4}" --critical 1 ${OLD:+--baseline-bekc "$OLD"} \
      "${few[@]}" ${OUT:+--json "$OUT/multiarch_$tag.json"} || status=1
  echo "=== $tag: bench/build/bench_multiarch.py, two_kernels.cu for sm_90"
  # The three cold builds (first, edit, --force) of one architecture.
  "${pin[@]}" $PY bench/build/bench_multiarch.py --bekc "$BEKC" --reps "${COLD_REPS:-6}" \
      --files '' --source bench/build/two_kernels.cu --arch sm_90 --no-package \
      ${OLD:+--baseline-bekc "$OLD"} ${OUT:+--json "$OUT/first_$tag.json"} || status=1
  echo "=== $tag: bench/build/bench_new_arch.py"
  "${pin[@]}" $PY bench/build/bench_new_arch.py --bekc "$BEKC" --reps "${REPS:-3}" \
      ${OUT:+--json "$OUT/new_arch_$tag.json"} || status=1
done
exit $status
