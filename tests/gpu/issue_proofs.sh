#!/usr/bin/env bash
# One lent-machine command for the proofs a change to keys, nvcc's commands or
# the package prebuild must pass again (docs/gpu.md):
#   1. `bekc build <brainevent 0.2.1>` from an unpacked wheel (PREBUILD_021, a
#      package directory), exit status and last line;
#   2. brainevent 0.3.0's own CUDA suite through bekc after its prebuild,
#      compared with the recorded run of brainevent's pipeline
#      (BEKC_SUITE_REFERENCE), on all GPUs but the last;
#   3. beside it, on the last GPU, `pytest tests/gpu` (SASS and PTX against one
#      nvcc's, the handlers, Numba).
# BEKC: the bekc binary (libbekc_lookup.so and libbekc_numba.so beside it).
# SUITE_LIMIT (s, default 380). Logs go to $OUT, the suite's results to
# /tmp/bekc-proofs-suite, packed into $OUT/suite.tgz (the lent machine returns
# at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PYTHON=${PYTHON:-python3} BEKC=${BEKC:-$ROOT/build/bekc}
OUT=${OUT:-/tmp/bekc-proofs}
mkdir -p "$OUT"
# brainevent and what its tests need, from .whl/ when not installed (docs/gpu.md).
if ! $PYTHON -c 'import brainevent, brainstate, braintools' 2>/dev/null; then
  $PYTHON -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/bekc-suite-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/bekc-suite-site${PYTHONPATH:+:$PYTHONPATH}
fi
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
last=$((ngpu - 1))
if [[ -n ${PREBUILD_021:-} ]]; then
  t0=$SECONDS
  "$BEKC" build "$PREBUILD_021" -j "$(nproc)" --cache-dir /tmp/bekc-021 > "$OUT/prebuild-021.log" 2>&1
  echo "brainevent 0.2.1 prebuild: exit $?, $((SECONDS - t0)) s: $(tail -1 "$OUT/prebuild-021.log")"
fi
# Command buffers on for custom calls, as tests/gpu/run_all.sh sets them.
(CUDA_VISIBLE_DEVICES=$last PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH} BEKC_BINARY=$BEKC \
   XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1" \
   timeout "${SUITE_LIMIT:-380}" $PYTHON -m pytest -q -p no:cacheprovider tests/gpu \
   > "$OUT/pytest-gpu.log" 2>&1; echo "pytest tests/gpu: exit $?: $(tail -1 "$OUT/pytest-gpu.log")" \
   > "$OUT/pytest-gpu.status") &
gpus=$(seq -s, 0 $((last > 0 ? last - 1 : 0)))
SUITE=/tmp/bekc-proofs-suite
rm -rf "$SUITE"
CUDA_VISIBLE_DEVICES=$gpus BEKC_SUITE_RESULTS=$SUITE BEKC_SUITE_PREBUILD=1 \
  BEKC_SUITE_REFERENCE=${BEKC_SUITE_REFERENCE:-$ROOT/bench/brainevent/results/0.3.0/suite-outcomes-brainevent.json.gz} \
  BEKC_SUITE_WORKERS=${WORKERS:-48} BEKC_SUITE_DIST=load BEKC_SUITE_LIMIT=${SUITE_LIMIT:-380} \
  bash tests/gpu/brainevent_suite.sh bekc
wait
cat "$OUT/pytest-gpu.status"
tar czf "$OUT/suite.tgz" -C "$(dirname "$SUITE")" "$(basename "$SUITE")" 2>/dev/null
