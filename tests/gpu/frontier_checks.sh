#!/usr/bin/env bash
# Issue 30 on the GPU machine, in one command (docs/benchmarks.md, docs/gpu.md):
#   PYTHON=/opt/torch/.venv/bin/python bash tests/gpu/frontier_checks.sh [tests|suite|bench]...
# tests: pytest tests/gpu (the kernels, with the CUDA runtime each library
#        links: the shared one by default);
# suite: brainevent's own CUDA tests of $SUITE_DIRS (default _dense) with
#        every kernel built by bekc, stopped after $SUITE_LIMIT seconds
#        (tests/gpu/brainevent_suite.sh bekc);
# bench: tests/gpu/start_benches.sh (warm load in a new process, $REPS;
#        brainevent's process start, $START_REPS).
# Each part has its own time limit, so one command fits the machine's.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
export BEKC=${BEKC:-$PWD/build/bekc} BEKC_BINARY=${BEKC_BINARY:-${BEKC:-$PWD/build/bekc}}
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false
parts=("$@")
((${#parts[@]})) || parts=(tests suite bench)
status=0
for part in "${parts[@]}"; do
  case $part in
    tests)
      echo "=== pytest tests/gpu"
      ( source tests/gpu/bench_site.sh || exit 1  # brainevent, for docs/migrating.md's blocks
      BEKC_CACHE_DIR=/tmp/bekc-gpu-cache \
      XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1" \
        timeout "${TESTS_LIMIT:-300}" $PY -m pytest -q -p no:cacheprovider tests/gpu ) || status=1 ;;
    suite)
      echo "=== brainevent's CUDA tests through bekc: ${SUITE_DIRS:-_dense}"
      BEKC_SUITE_LIMIT=${SUITE_LIMIT:-150} BEKC_SUITE_RESULTS=/tmp/bekc-suite PYTHON=$PY \
        bash tests/gpu/brainevent_suite.sh bekc ${SUITE_DIRS:-_dense} || status=1 ;;
    bench)
      echo "=== tests/gpu/start_benches.sh"
      PYTHON=$PY REPS=${REPS:-9} timeout "${BENCH_LIMIT:-240}" bash tests/gpu/start_benches.sh \
        || status=1 ;;
    *) echo "unknown part: $part"; exit 2 ;;
  esac
done
exit $status
