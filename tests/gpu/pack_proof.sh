#!/usr/bin/env bash
# Kernels without compiling, on the lent GPU machine (docs/packs.md, docs/gpu.md):
#
#   REL=030 bash tests/gpu/pack_proof.sh record  # the release's suite through bekc after its
#                                         # prebuild, recording its loads (REL=021: 0.2.1)
#   bash tests/gpu/pack_proof.sh pack     # the packs of 0.3.0 and 0.2.1, each its package
#                                         # plus its recordings, for sm_80, sm_90, sm_100
#                                         # and sm_120 plus PTX
#   bash tests/gpu/pack_proof.sh hidden   # 0.3.0's suite from its pack alone, nvcc hidden
#   bash tests/gpu/pack_proof.sh hidden021  # 0.2.1's suite from its pack alone, nvcc hidden
#   bash tests/gpu/pack_proof.sh firstcall  # 0.3.0: the first load of each module and the
#                                         # first call of an op, from the pack alone
#
# State between the commands lives in $STATE (default /tmp/bekc-pack-proof) on
# the lent machine, which keeps it while it stays warm; recordings are also
# copied to $OUT. nvcc is hidden in a private mount namespace (/dev/null over
# every nvcc; ptxas, which JAX's own compiles need, stays). Each suite run is
# compared with the recorded run of brainevent's pipeline
# (BEKC_SUITE_REFERENCE) where there is one; the own cache's counters show the
# loads served and that none missed.
# Settings: DIRS (the suite's folders, default all), SHARD (K/N), PACKS
# ("030 021"), EXTRA_RECORDINGS / EXTRA_RECORDINGS_021 (more recordings for a
# pack, e.g. of other folders from an earlier command), RECORD_PREBUILD (0:
# the recording run skips the prebuild), PACK_CACHE (the cache the packs build
# in; default a fresh one each), ARCHS, WORKERS, SUITE_LIMIT.
# BEKC: the bekc binary (libbekc_lookup.so beside it). PREBUILD_021: brainevent
# 0.2.1's package directory (an unpacked wheel).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
USAGE="usage: pack_proof.sh record|pack|hidden|hidden021|firstcall"
PHASE=${1:?$USAGE}
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
    rel=${REL:-030}
    [[ ${SHARD:-1/1} == 1/* ]] && rm -f "$STATE/rec-$rel.jsonl"
    [[ $rel == 021 ]] && export PYTHONPATH=$(dirname "${PREBUILD_021:?}"):${PYTHONPATH:-}
    bash "$0" "_record$rel" | tail -4
    [[ -n ${OUT:-} ]] && cp "$STATE/rec-$rel.jsonl" "$OUT/"
    echo "recorded loads ($rel): $(wc -l < "$STATE/rec-$rel.jsonl") lines, $(sort -u "$STATE/rec-$rel.jsonl" | wc -l) distinct"
    ;;
  _record030)
    suite "$STATE/suite-record" BEKC_SUITE_PREBUILD=${RECORD_PREBUILD:-1} BEKC_RECORD="$STATE/rec-030.jsonl" ;;
  _record021)
    REF= suite "$STATE/suite-record021" BEKC_SUITE_PREBUILD=${RECORD_PREBUILD:-1} \
      BEKC_RECORD="$STATE/rec-021.jsonl" ;;
  pack)
    for rel in ${PACKS-030 021}; do
      src=("$BE" "$STATE/rec-030.jsonl" ${EXTRA_RECORDINGS:-})
      if [[ $rel == 021 ]]; then
        src=("${PREBUILD_021:?PREBUILD_021: the 0.2.1 package directory}" ${EXTRA_RECORDINGS_021:-})
        [[ -f $STATE/rec-021.jsonl ]] && src+=("$STATE/rec-021.jsonl")
      fi
      rm -rf "$STATE/pack-$rel" "$STATE/pack-cache-$rel"
      t0=$EPOCHREALTIME
      "$BEKC" pack "${src[@]}" -o "$STATE/pack-$rel" --name "brainevent_$rel" --arch "$ARCHS" \
        -j "$(nproc)" --cache-dir "${PACK_CACHE:-$STATE/pack-cache-$rel}" > "$STATE/pack-$rel.log" 2>&1
      rc=$?
      echo "pack $rel: exit $rc, $(awk "BEGIN{printf \"%.1f\", $EPOCHREALTIME - $t0}") s at -j $(nproc), $(du -sh "$STATE/pack-$rel" 2>/dev/null | cut -f1): $(tail -1 "$STATE/pack-$rel.log")"
    done
    ;;
  firstcall)
    bench=(bench/brainevent/bench_brainevent.py --bekc "$BEKC" --out "$STATE/first-call")
    $PYTHON "${bench[0]}" modules "${bench[@]:1}" || exit 1
    without_nvcc env PYTHONPATH="$ROOT/python:${PYTHONPATH:-}" $PYTHON "${bench[0]}" first-call \
      "${bench[@]:1}" --pack "$STATE/pack-030" --modules "$STATE/first-call/modules.json" --reps 5
    $PYTHON "${bench[0]}" report "${bench[@]:1}"
    [[ -n ${OUT:-} ]] && cp "$STATE/first-call/first-call.json" "$OUT/"
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
  *) echo "$USAGE" >&2; exit 2 ;;
esac
