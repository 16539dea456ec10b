#!/usr/bin/env bash
# The build benchmarks on the GPU machine's cores (docs/benchmarks.md):
#   bash tests/gpu/build_benches.sh [OLD_BEKC]
# bench/build/bench_multiarch.py (multi-architecture builds) and bench/build/bench_build.py
# (cold and hit times; with OLD_BEKC, beside an earlier bekc). Expects bekc at
# $BEKC (default build/bekc); brainevent 0.2.1 comes from .whl/ when it is not
# installed.
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
echo "=== bench/build/bench_multiarch.py"
$PY bench/build/bench_multiarch.py --bekc "$BEKC" --reps "${REPS:-2}" \
    --package-files "${PACKAGE_FILES:-0}" ${OLD:+--baseline-bekc "$OLD"} || status=1
echo "=== bench/build/bench_build.py"
$PY bench/build/bench_build.py --bekc "$BEKC" --cold-reps 3 --hit-reps 40 --jobs-reps 1 \
    ${OLD:+--baseline-bekc "$OLD"} || status=1
exit $status
