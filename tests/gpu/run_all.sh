#!/usr/bin/env bash
# Every GPU check, in one run on the GPU machine (see docs/gpu.md):
#   bash tests/gpu/run_all.sh            # expects bekc at build/bekc (or $BEKC)
# Prints each step's output; the last line is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
export BEKC=${BEKC:-$PWD/build/bekc}
export BEKC_BINARY=${BEKC_BINARY:-$BEKC}
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
export BEKC_CACHE_DIR=${BEKC_CACHE_DIR:-/tmp/bekc-gpu-cache}
# Command buffers (CUDA graphs) for custom calls, so the fori_loop test runs
# bekc's handlers inside a captured graph.
export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"
PY=${PYTHON:-python3}
passed=0; failed=0
step() {  # step NAME COMMAND...
  local name=$1; shift
  printf '\n=== %s\n' "$name"
  if "$@"; then passed=$((passed + 1)); echo "--- $name: PASS"
  else failed=$((failed + 1)); echo "--- $name: FAIL"; fi
}

step "portable bekc runs here" "$BEKC" --version
step "doctor" "$BEKC" doctor
XLA_INC=$($PY -c 'import jax.ffi; print(jax.ffi.include_dir())')
step "ABI layout vs this jaxlib" bash tests/abi/run_layout_test.sh "$XLA_INC"
step "pytest tests/gpu" $PY -m pytest -q -p no:cacheprovider tests/gpu
if [[ -d "${BRAINEVENT_WHEELS:-$PWD/.whl}" ]]; then
  step "brainevent 0.2.1's Numba-CUDA tests against bekc" bash tests/gpu/brainevent_numba_suite.sh bekc
fi
if $PY -c 'import numba.cuda' 2>/dev/null || $PY -c 'import numpy as np; np.row_stack = np.vstack; import numba.cuda' 2>/dev/null; then
  step "bench: Numba-CUDA kernels per call and in a fori_loop" \
    $PY bench/numba/bench_numba.py --calls "${BEKC_NUMBA_BENCH_CALLS:-10000}"
fi
if [[ -f bench/overhead/bench_gpu_overhead.py ]]; then
  step "bench: per-call overhead on CUDA" $PY bench/overhead/bench_gpu_overhead.py
fi
if [[ -f bench/build/bench_build.py && -n "${BEKC_GPU_BUILD_BENCH:-}" ]]; then
  step "bench: build times" $PY bench/build/bench_build.py
fi
printf '\nGPU: %d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
