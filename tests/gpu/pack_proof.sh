#!/usr/bin/env bash
# Kernels without compiling, on the lent GPU machine (docs/packs.md, docs/gpu.md):
#
#   bash tests/gpu/pack_proof.sh record   # 0.3.0's suite through bekc after its prebuild,
#                                         # recording its loads; then the packs of 0.3.0
#                                         # (package + recording) and 0.2.1 (package) for
#                                         # sm_80, sm_90, sm_100 and sm_120 plus PTX
#   bash tests/gpu/pack_proof.sh hidden   # 0.3.0's suite from its pack alone, nvcc hidden
#   bash tests/gpu/pack_proof.sh hidden021  # 0.2.1's suite from its pack alone, nvcc hidden
#
# State between the commands lives in $STATE (default /tmp/bekc-pack-proof) on
# the lent machine, which keeps it while it stays warm. nvcc is hidden in a
# private mount namespace (/dev/null over every nvcc; ptxas, which JAX's own
# compiles need, stays). Each suite run is compared with the recorded run of
# brainevent's pipeline (BEKC_SUITE_REFERENCE) where there is one; the own
# cache's counters show the loads served and that none missed.
# Settings: DIRS (the suite's folders, default all), SHARD (K/N), PACKS
# ("030 021"), EXTRA_RECORDINGS (more recordings for 0.3.0's pack),
# RECORD_PREBUILD (0: the recording run skips the prebuild), PACK_CACHE (the cache the packs build in; default a fresh one
# each), ARCHS, WORKERS, SUITE_LIMIT.
# BEKC: the bekc binary (libbekc_lookup.so beside it). PREBUILD_021: brainevent
# 0.2.1's package directory (an unpacked wheel).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PHASE=${1:?usage: pack_proof.sh record|hidden|hidden021}
export PYTHON=${PYTHON:-python3} BEKC=${BEKC:-$ROOT/build/bekc} WORKERS=${WORKERS:-48}
export SUITE_LIMIT=${SUITE_LIMIT:-420}
STATE=${STATE:-/tmp/bekc-pack-proof}
ARCHS=${ARCHS:-sm_80,sm_90,sm_100,sm_120}
REF=${BEKC_SUITE_REFERENCE:-$ROOT/bench/brainevent/results/0.3.0/suite-outcomes-brainevent.json.gz}
mkdir -p "$STATE"
if ! $PYTHON -c 'import brainevent, brainstate, braintools' 2>/dev/null; then
  $PYTHON -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/bekc-suite-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/bekc-suite-site${PYTHONPATH:+:$PYTHONPATH}
fi
BE=$($PYTHON -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("brainevent").origin))')
OWN=/tmp/bekc-suite-bekc/bekc  # brainevent_suite.sh's own cache for bekc's run

# Runs "$@" with every nvcc hidden; prints how.
without_nvcc() {
  local nvccs=() n
  for n in /usr/local/cuda*/bin/nvcc /usr/bin/nvcc $(command -v nvcc 2>/dev/null); do
    [[ -e $n ]] && nvccs+=("$(readlink -f "$n")")
  done
  if unshare -m --propagation private true 2>/dev/null; then
    echo "nvcc hidden: /dev/null over ${nvccs[*]:-nothing} (ptxas: $(command -v ptxas || ls /usr/local/cuda/bin/ptxas))"
    unshare -m --propagation private bash -c '
      for n in "${@:2:$1}"; do mount --bind /dev/null "$n" || exit 97; done
      shift $(($1 + 1)); nvcc --version >/dev/null 2>&1 && { echo "nvcc still runs" >&2; exit 98; }
      exec "$@"' _ "${#nvccs[@]}" "${nvccs[@]}" "$@"
  else
    echo "nvcc hidden: unshare -m is not allowed here; BEKC_NVCC names a missing nvcc instead"
    BEKC_NVCC=/nonexistent/nvcc CUDA_HOME=/nonexistent "$@"
  fi
}

stats() {  # the own cache's counters after a run
  "$BEKC" cache stats --cache-dir "$1" 2>&1 | sed -n '1,12p'
}

# suite RESULTS [VAR=VALUE...]: brainevent_suite.sh's bekc run of $DIRS (all
# of the release's CUDA folders when empty), shard $SHARD (K/N; the first
# starts from empty results and caches, the others add to them).
suite() {
  local results=$1; shift
  [[ ${SHARD:-1/1} == 1/* ]] && rm -rf "$results"
  env "$@" BEKC_SUITE_RESULTS="$results" BEKC_SUITE_REFERENCE="$REF" BEKC_SUITE_SHARD=${SHARD:-1/1} \
    BEKC_SUITE_WORKERS=$WORKERS BEKC_SUITE_DIST=load BEKC_SUITE_LIMIT=$SUITE_LIMIT \
    bash tests/gpu/brainevent_suite.sh bekc ${DIRS:-}
}

case $PHASE in
  record)
    rm -f "$STATE/rec-030.jsonl"
    suite "$STATE/suite-record" BEKC_SUITE_PREBUILD=${RECORD_PREBUILD:-1} \
      BEKC_RECORD="$STATE/rec-030.jsonl" | tail -4
    echo "recorded loads: $(wc -l < "$STATE/rec-030.jsonl") lines, $(sort -u "$STATE/rec-030.jsonl" | wc -l) distinct"
    for rel in ${PACKS:-030 021}; do
      src=("$BE" "$STATE/rec-030.jsonl" ${EXTRA_RECORDINGS:-})
      [[ $rel == 021 ]] && src=("${PREBUILD_021:?PREBUILD_021: the 0.2.1 package directory}")
      rm -rf "$STATE/pack-$rel" "$STATE/pack-cache-$rel"
      t0=$EPOCHREALTIME
      "$BEKC" pack "${src[@]}" -o "$STATE/pack-$rel" --name "brainevent_$rel" --arch "$ARCHS" \
        -j "$(nproc)" --cache-dir "${PACK_CACHE:-$STATE/pack-cache-$rel}" > "$STATE/pack-$rel.log" 2>&1
      rc=$?
      echo "pack $rel: exit $rc, $(awk "BEGIN{printf \"%.1f\", $EPOCHREALTIME - $t0}") s at -j $(nproc), $(du -sh "$STATE/pack-$rel" 2>/dev/null | cut -f1): $(tail -1 "$STATE/pack-$rel.log")"
    done
    ;;
  hidden|hidden021)
    rel=030; [[ $PHASE == hidden021 ]] && rel=021
    [[ ${SHARD:-1/1} == 1/* ]] && rm -rf /tmp/bekc-suite-bekc
    t0=$EPOCHREALTIME
    without_nvcc env BEKC_READ_ONLY_CACHES="$STATE/pack-$rel" bash "$0" "_suite$rel" | tail -6
    echo "suite from the pack alone: $(awk "BEGIN{printf \"%.1f\", $EPOCHREALTIME - $t0}") s"
    stats "$OWN"
    ;;
  _suite030)  # inside without_nvcc
    suite "$STATE/suite-hidden" BEKC_SUITE_PREBUILD=0 ;;
  _suite021)
    PYTHONPATH=$(dirname "${PREBUILD_021:?}"):${PYTHONPATH:-} REF= \
      suite "$STATE/suite-hidden021" BEKC_SUITE_PREBUILD=0 ;;
  *) echo "usage: $0 record|hidden|hidden021" >&2; exit 2 ;;
esac
