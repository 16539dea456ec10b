#!/usr/bin/env bash
# Issue 15 on the GPU machine's cores: where a multi-architecture miss spends
# its time, then the package against its bounds.
#   bash tests/gpu/issue15_probe.sh            (bekc at $BEKC, default build/bekc)
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
BEKC=${BEKC:-$PWD/build/bekc}
if ! $PY -c 'import brainevent' 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/bekc-bench-site \
      .whl/brainevent-*.whl || exit 1
  export PYTHONPATH=/tmp/bekc-bench-site${PYTHONPATH:+:$PYTHONPATH}
fi
echo "=== tests/gpu/multiarch_breakdown.py"
$PY tests/gpu/multiarch_breakdown.py --bekc "$BEKC" --reps "${REPS:-3}"
if [ "${PACKAGE:-1}" = 1 ]; then
  echo "=== bench/build/bench_multiarch.py (package)"
  $PY bench/build/bench_multiarch.py --bekc "$BEKC" --reps 1 --package-files 0 --critical 3
fi
