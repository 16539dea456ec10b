#!/usr/bin/env bash
# brainevent's own tests for its CUDA backends, run on a GPU machine with
# brainevent's own build pipeline and with every kernel built by bekc
# (bekc.use_for_brainevent()). See docs/gpu.md.
#
#   bash tests/gpu/brainevent_suite.sh [brainevent|bekc|both|parallel|compare] [DIR...]
#
# DIR defaults to _csr _dense _event _fcn _jit_normal _jit_scalar _jit_uniform,
# and _tcsr where the installed release has it (0.3.0). brainevent and its
# dependencies come from .whl/ when not installed (docs/gpu.md). Settings:
#   BEKC_SUITE_WORKERS  pytest-xdist workers (default 8)
#   BEKC_SUITE_SHARD    K/N: run only shard K of N (tests split by a hash of
#                       their id); the first shard of a mode starts from empty
#                       caches, later shards reuse them (FRESH=1/0 overrides)
#   BEKC_SUITE_LIMIT    seconds after which the shard is stopped (SIGINT, then
#                       SIGKILL 20 s later); outcomes of the finished tests stay
#   BEKC_SUITE_RESUME   1: run only the tests with no outcome yet (the next
#                       command after one its limit stopped); implies FRESH=0
#   BEKC_SUITE_DIST     pytest-xdist's --dist (default loadfile; `load` spreads
#                       one file's tests over every worker, for suites whose
#                       largest files outlast the rest)
#   BEKC_SUITE_PREBUILD 1: in the bekc run, `bekc build <package> -j N` first,
#                       timed on its own (what a user or a wheel build does)
#   BEKC_SUITE_REFERENCE a recorded run of brainevent's pipeline (a gzipped
#                       JSON of outcomes, bench/brainevent/results/RELEASE/) to
#                       compare with when RESULTS holds no brainevent run
# Every test's outcome is appended to $RESULTS/outcomes-MODE/*.jsonl as it
# finishes (brainevent_plugin.py), so shards cut short still count, and
# `compare` merges every shard. The last line reads
# "brainevent suite: N passed, N failed", where a failure is a test that
# brainevent's pipeline passes and bekc's run does not, or a kernix compile in
# bekc's run. Results go to $BEKC_SUITE_RESULTS, else $OUT, else
# build/brainevent-suite (on the lent GPU machine $OUT is emptied before each
# command: keep them elsewhere there when a later command resumes).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
MODE=${1:-both}; shift || true
PY=${PYTHON:-python3}
RESULTS=${BEKC_SUITE_RESULTS:-${OUT:-$ROOT/build/brainevent-suite}}
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
VERSION=$($PY -c 'import importlib.metadata as m; print(m.version("brainevent"))' 2>/dev/null || echo '?')
DIRS=("$@")
if ((${#DIRS[@]} == 0)); then
  DIRS=(_csr _dense _event _fcn _jit_normal _jit_scalar _jit_uniform)
  [[ -d $BE/_tcsr ]] && DIRS+=(_tcsr)
fi
tests=()
for d in "${DIRS[@]}"; do tests+=("$BE/$d"); done
WORKERS=${BEKC_SUITE_WORKERS:-8}
SHARD=${BEKC_SUITE_SHARD:-1/1}
LIMIT=${BEKC_SUITE_LIMIT:-0}
tag=${SHARD/\//-of-}

run() {  # run MODE
  local mode=$1 start=$SECONDS fresh=${FRESH:-}
  [[ ${BEKC_SUITE_RESUME:-0} == 1 ]] && fresh=0
  [[ -n $fresh ]] || { [[ ${SHARD%%/*} == 1 ]] && fresh=1 || fresh=0; }
  if [[ $fresh == 1 ]]; then
    rm -rf "/tmp/bekc-suite-$mode" "$RESULTS/counts-$mode" "$RESULTS/outcomes-$mode" "$RESULTS/$mode".*
  fi
  mkdir -p "$RESULTS/outcomes-$mode"
  export BRAINEVENT_CACHE_DIR=/tmp/bekc-suite-$mode/brainevent BEKC_CACHE_DIR=/tmp/bekc-suite-$mode/bekc
  echo "=== $mode: brainevent $VERSION, shard $SHARD of ${DIRS[*]} with $WORKERS workers"
  if [[ $mode == bekc && ${BEKC_SUITE_PREBUILD:-0} == 1 && $fresh == 1 ]]; then
    local t0=$SECONDS
    "$BEKC" build "$BE" -j "$(nproc)" > "$RESULTS/bekc.prebuild.log" 2>&1
    echo "bekc prebuild: exit $?, wall $((SECONDS - t0)) s: $(tail -1 "$RESULTS/bekc.prebuild.log")" \
      | tee "$RESULTS/bekc.prebuild.time"
    start=$SECONDS
  fi
  local guard=() n=1
  while [[ -e $RESULTS/$mode.$tag.$n.time || -e $RESULTS/$mode.$tag.$n.log ]]; do n=$((n + 1)); done
  local part=$mode.$tag.$n
  ((LIMIT > 0)) && guard=(timeout -s INT -k 20 "$LIMIT")
  local gpus=${CUDA_VISIBLE_DEVICES:-$(seq -s, 0 $(($(nvidia-smi -L 2>/dev/null | wc -l) - 1)) 2>/dev/null)}
  BEKC_SUITE_GPUS=$gpus BEKC_SUITE_MODE=$mode BEKC_SUITE_COUNTS=$RESULTS/counts-$mode BEKC_SUITE_SHARD=$SHARD \
  BEKC_SUITE_OUTCOMES=$RESULTS/outcomes-$mode \
    "${guard[@]}" $PY -m pytest -q -p brainevent_plugin -p no:cacheprovider -n "$WORKERS" \
        --dist "${BEKC_SUITE_DIST:-loadfile}" --junitxml="$RESULTS/$part.xml" "${tests[@]}" \
        > "$RESULTS/$part.log" 2>&1
  local rc=$?
  echo "$mode shard $SHARD (part $n): pytest exit $rc, wall $((SECONDS - start)) s" | tee "$RESULTS/$part.time"
  tail -3 "$RESULTS/$part.log"
}

case $MODE in
  brainevent|bekc) run "$MODE" ;;
  both) run brainevent; run bekc ;;
  compare) ;;
  parallel)  # both runs at once, GPUs split between them (a machine with cores to spare)
    ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
    if ((ngpu >= 2)); then half=$((ngpu / 2))
      be_gpus=$(seq -s, 0 $((half - 1))); bk_gpus=$(seq -s, "$half" $((ngpu - 1)))
    else be_gpus=0; bk_gpus=0; fi
    CUDA_VISIBLE_DEVICES=$be_gpus run brainevent > "$RESULTS/parallel-brainevent.out" 2>&1 &
    CUDA_VISIBLE_DEVICES=$bk_gpus run bekc > "$RESULTS/parallel-bekc.out" 2>&1 &
    wait; cat "$RESULTS/parallel-brainevent.out" "$RESULTS/parallel-bekc.out" ;;
  *) echo "usage: $0 [brainevent|bekc|both|parallel|compare] [DIR...]" >&2; exit 2 ;;
esac
ref=()
[[ -n ${BEKC_SUITE_REFERENCE:-} ]] && ref=(--reference "$BEKC_SUITE_REFERENCE")
$PY "$ROOT/tests/gpu/compare_suites.py" "$RESULTS" "${ref[@]}"
