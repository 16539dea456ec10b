#!/usr/bin/env bash
# On the GPU machine's cores: where a multi-architecture miss spends its
# time, then the package against its bounds.
#   bash tests/gpu/multiarch_probe.sh            (bekc at $BEKC, default build/bekc)
# BREAKDOWN=0 skips tests/gpu/multiarch_breakdown.py, VARIANTS=1 adds
# tests/gpu/nvcc_variants.sh, PACKAGE=0 skips the package; PACKAGE_ARCH
# (default sm_80,sm_90,sm_100) is the package's --arch.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
BEKC=${BEKC:-$PWD/build/bekc}
if ! $PY -c 'import brainevent' 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/bekc-bench-site \
      .whl/brainevent-*.whl || exit 1
  export PYTHONPATH=/tmp/bekc-bench-site${PYTHONPATH:+:$PYTHONPATH}
fi
if [ "${BREAKDOWN:-1}" = 1 ]; then
  echo "=== tests/gpu/multiarch_breakdown.py"
  $PY tests/gpu/multiarch_breakdown.py --bekc "$BEKC" --reps "${REPS:-3}"
fi
if [ "${VARIANTS:-0}" = 1 ]; then
  echo "=== tests/gpu/nvcc_variants.sh (REPS=${REPS:-3})"
  BEKC=$BEKC bash tests/gpu/nvcc_variants.sh
fi
if [ "${PACKAGE:-1}" = 1 ]; then
  echo "=== bench/build/bench_multiarch.py (package, --arch ${PACKAGE_ARCH:-sm_80,sm_90,sm_100})"
  $PY bench/build/bench_multiarch.py --bekc "$BEKC" --reps "${PACKAGE_REPS:-1}" --package-files 0 \
      --critical 3 --arch "${PACKAGE_ARCH:-sm_80,sm_90,sm_100}"
fi
