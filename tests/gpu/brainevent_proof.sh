#!/usr/bin/env bash
# What `bekc build <package dir>` gains brainevent, measured on a lent GPU
# machine in commands that each fit its 10-minute limit, for the brainevent
# release carried in .whl/:
#
#   bash tests/gpu/brainevent_proof.sh 1   # prebuild benchmark, brainevent's
#                                          # one-by-one compiles (8 shards in the
#                                          # background), bekc's run of the suite
#   bash tests/gpu/brainevent_proof.sh 2   # the rest of the suite, the first-call
#                                          # benchmark, both reports
#
# Results stay in /tmp/bekc-proof (kept between commands on a warm machine)
# and are packed into $OUT/proof.tgz after each stage. brainevent's own
# pipeline run of the same suite is `brainevent_suite.sh brainevent` with the
# same BEKC_SUITE_RESULTS (tests/gpu/brainevent_suite.sh; docs/gpu.md).
# Settings: WORKERS (suite workers, default nproc - 8), SUITE_LIMIT (s, 420),
# KERNIX_SHARDS (8), KERNIX_BUDGET (s, 380).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
STAGE=${1:?usage: brainevent_proof.sh 1|2}
PY=${PYTHON:-python3}
WORK=/tmp/bekc-proof
BENCH=$WORK/bench
mkdir -p "$BENCH"
if ! $PY -c 'import brainevent, brainstate, braintools' 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/bekc-suite-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/bekc-suite-site${PYTHONPATH:+:$PYTHONPATH}
fi
BEKC=${BEKC:-$ROOT/build/bekc}
bench() { PYTHONPATH=$ROOT/python:${PYTHONPATH:-} $PY bench/brainevent/bench_brainevent.py "$@" --bekc "$BEKC" --out "$BENCH"; }
suite() {
  BEKC_SUITE_RESULTS=$WORK/suite BEKC_SUITE_WORKERS=${WORKERS:-$(($(nproc) - 8))} BEKC_SUITE_DIST=load \
    BEKC_SUITE_LIMIT=${SUITE_LIMIT:-420} bash tests/gpu/brainevent_suite.sh "$@"
}
pack() { tar czf "${OUT:-$WORK}/proof.tgz" -C "$WORK" suite bench 2>/dev/null; }

case $STAGE in
  1)
    bench prebuild --jobs "$(nproc)" | tail -3
    n=${KERNIX_SHARDS:-8}
    for k in $(seq 1 "$n"); do
      bench kernix --shard "$k/$n" --budget "${KERNIX_BUDGET:-380}" > "$BENCH/kernix-$k.log" 2>&1 &
    done
    BEKC_SUITE_PREBUILD=1 suite bekc
    wait
    ;;
  2)
    BEKC_SUITE_RESUME=1 SUITE_LIMIT=${SUITE_LIMIT:-240} suite bekc
    bench first-call --reps 3 > /dev/null
    bench report
    suite compare
    ;;
  *) echo "usage: $0 1|2" >&2; exit 2 ;;
esac
pack
