#!/usr/bin/env bash
# brainevent 0.2.1's own tests for its CUDA backends, run twice on a GPU
# machine: with brainevent's own build pipeline, then with every kernel built
# by bekc (bekc.use_for_brainevent()). See docs/gpu.md.
#
#   bash tests/gpu/brainevent_suite.sh [brainevent|bekc|both] [DIR...]
#
# DIR defaults to _csr _dense _event _fcn _jit_normal _jit_scalar _jit_uniform.
# brainevent and its dependencies come from .whl/ when not installed (see
# docs/gpu.md for the wheels). Each run starts from an empty cache, so its
# wall time includes compiling the kernels it uses. Results (JUnit XML and a
# summary) go to $OUT or build/brainevent-suite. The last line reads
# "brainevent suite: N passed, N failed", where a failure is a test that
# brainevent's pipeline passes and bekc's run does not, or a kernix compile in
# bekc's run.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
MODE=${1:-both}; shift || true
DIRS=("$@"); ((${#DIRS[@]})) || DIRS=(_csr _dense _event _fcn _jit_normal _jit_scalar _jit_uniform)
PY=${PYTHON:-python3}
RESULTS=${OUT:-$ROOT/build/brainevent-suite}
mkdir -p "$RESULTS"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
export BEKC=${BEKC:-$ROOT/build/bekc}
if ! $PY -c 'import brainevent, brainstate, braintools' 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/bekc-suite-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/bekc-suite-site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$ROOT/tests/gpu:$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
BE=$($PY -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("brainevent").origin))')
tests=()
for d in "${DIRS[@]}"; do tests+=("$BE/$d"); done
WORKERS=${BEKC_SUITE_WORKERS:-8}

run() {  # run MODE
  local mode=$1 start=$SECONDS
  rm -rf "/tmp/bekc-suite-$mode" "$RESULTS/counts-$mode"
  echo "=== $mode: ${DIRS[*]} with $WORKERS workers"
  BEKC_SUITE_MODE=$mode BEKC_SUITE_COUNTS=$RESULTS/counts-$mode \
  BRAINEVENT_CACHE_DIR=/tmp/bekc-suite-$mode/brainevent BEKC_CACHE_DIR=/tmp/bekc-suite-$mode/bekc \
    $PY -m pytest -q -p brainevent_plugin -p no:cacheprovider -n "$WORKERS" --dist loadfile \
        --junitxml="$RESULTS/$mode.xml" "${tests[@]}" > "$RESULTS/$mode.log" 2>&1
  echo "$mode: pytest exit $?, wall $((SECONDS - start)) s" | tee "$RESULTS/$mode.time"
  tail -3 "$RESULTS/$mode.log"
}

case $MODE in
  brainevent|bekc) run "$MODE" ;;
  both) run brainevent; run bekc ;;
  *) echo "usage: $0 [brainevent|bekc|both] [DIR...]" >&2; exit 2 ;;
esac
$PY "$ROOT/tests/gpu/compare_suites.py" "$RESULTS"
