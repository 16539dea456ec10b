#!/usr/bin/env bash
# Issue 44's whole-package first builds, on the lent GPU machine (every core):
#
#   PYTHON=/opt/torch/.venv/bin/python BEKC=.carry/bin/bekc bash tests/gpu/first_builds.sh [package|pack|alone|small]
#
#   package  brainevent 0.3.0's prebuild for sm_90 in a fresh cache, -j (cores),
#            with --trace; its critical path (bench/trace_summary.py)
#   pack     its pack for sm_80, sm_90, sm_100 and sm_120 plus PTX, in a fresh
#            cache, with --trace; the time beside the prebuild's
#   alone    the package's longest module (by the prebuild's trace) built alone
#            in a fresh cache, with the flags the prebuild gave it
#   small    bench/build/two_kernels.cu for sm_90: a first build in an empty
#            cache, a new file in a cache that has seen one, an edit; each
#            with --trace and its steps on one clock, beside bare nvcc
#
# With no argument, all four in that order. Times and traces go to $OUT (or
# /tmp/bekc-first-builds). brainevent comes from .whl/ when Python cannot
# import it.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
BEKC=$(readlink -f "${BEKC:-$ROOT/build/bekc}")
DEST=${OUT:-/tmp/bekc-first-builds}
WORK=$(mktemp -d /tmp/bekc-first-builds.XXXXXX)
JOBS=${JOBS:-$(nproc)}
mkdir -p "$DEST"
if ! $PYTHON -c 'import brainevent' 2>/dev/null; then
  $PYTHON -m pip install -q --no-index --no-deps --no-compile --target "$WORK/site" \
      .whl/brainevent-0.3.0-py3-none-any.whl || exit 1
  export PYTHONPATH=$WORK/site${PYTHONPATH:+:$PYTHONPATH}
fi
BE=$($PYTHON -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("brainevent").origin))')

seconds() {  # seconds COMMAND...: runs it, prints its wall time; its output to $WORK/last.log
  local start end
  start=$(date +%s.%N)
  "$@" > "$WORK/last.log" 2>&1 || { tail -20 "$WORK/last.log" >&2; echo "FAILED: $*" >&2; }
  end=$(date +%s.%N)
  $PYTHON -c "print(f'{$end - $start:.2f}')"
}

package() {
  local t
  t=$(seconds "$BEKC" build "$BE" --arch sm_90 -j "$JOBS" --cache-dir "$WORK/pkg-cache" \
        --trace "$DEST/prebuild-sm_90.json")
  tail -2 "$WORK/last.log"
  echo "$t" > "$DEST/prebuild-seconds"
  echo "prebuild, sm_90, -j $JOBS, fresh cache: $t s"
  $PYTHON bench/trace_summary.py "$DEST/prebuild-sm_90.json" | head -12
}

pack() {
  local t
  t=$(seconds "$BEKC" pack "$BE" -o "$WORK/pack" --arch sm_80,sm_90,sm_100,sm_120 -j "$JOBS" \
        --cache-dir "$WORK/pack-cache" --trace "$DEST/pack-4arch.json")
  tail -2 "$WORK/last.log"
  echo "pack, sm_80,sm_90,sm_100,sm_120 + PTX, -j $JOBS, fresh cache: $t s"
  if [[ -f $DEST/prebuild-seconds ]]; then
    $PYTHON -c "p=float(open('$DEST/prebuild-seconds').read()); print(f'pack / prebuild: {$t / p:.2f}x (goal <= 1.5x)')"
  fi
  $PYTHON bench/trace_summary.py "$DEST/pack-4arch.json" | head -12
}

alone() {
  local module line t
  module=$($PYTHON - "$DEST/prebuild-sm_90.json" <<'EOF'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
mods = [e for e in events if e.get("ph") == "X" and e.get("cat") == "module"]
print(max(mods, key=lambda e: e["dur"])["args"]["module"])
EOF
)
  line=$("$BEKC" build "$BE" --arch sm_90 -j "$JOBS" --dry-run --cache-dir "$WORK/alone-cache" 2>/dev/null \
         | grep -- "--name=$module ")
  read -ra argv <<< "$line"
  t=$(seconds "${argv[@]}")
  echo "$module alone, fresh cache: $t s"
  if [[ -f $DEST/prebuild-seconds ]]; then
    $PYTHON -c "p=float(open('$DEST/prebuild-seconds').read()); print(f'prebuild / its longest module alone: {p / $t:.2f}x (goal <= 1.1x at -j 64)')"
  fi
}

small() {
  local src=$WORK/small/two_kernels.cu nvcc cxx
  mkdir -p "$WORK/small"
  cp bench/build/two_kernels.cu "$src"
  "$BEKC" build "$src" --arch sm_90 --cache-dir "$WORK/small-cache" --trace "$DEST/small-empty.json" -q > /dev/null
  cp "$src" "$WORK/small/two_kernels_new.cu"
  "$BEKC" build "$WORK/small/two_kernels_new.cu" --arch sm_90 --cache-dir "$WORK/small-cache" \
      --trace "$DEST/small-new.json" -q > /dev/null
  echo '__device__ int bekc_edit() { return 1; }' >> "$src"
  "$BEKC" build "$src" --arch sm_90 --cache-dir "$WORK/small-cache" --trace "$DEST/small-edit.json" -q > /dev/null
  for kind in empty new edit; do
    echo "== two_kernels.cu, $kind"
    $PYTHON - "$DEST/small-$kind.json" <<'EOF'
import json, sys
sys.path.insert(0, "bench")
from trace_events import load_events
xs = sorted((e for e in load_events(sys.argv[1]) if e.get("ph") == "X"), key=lambda e: e["ts"])
t0 = xs[0]["ts"]
for e in xs:
    print(f"{(e['ts'] - t0) / 1e3:8.1f} ms +{e.get('dur', 0) / 1e3:7.1f} ms  {e.get('cat', '')}: {e['name'][:60]}")
EOF
  done
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cxx=$(command -v g++)
  for i in 1 2 3; do
    echo "bare nvcc: $(seconds "$nvcc" -std=c++17 -O3 -ccbin "$cxx" -Xcompiler -fPIC,-fvisibility=hidden \
        -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
        -I runtime/include -shared "$src" -o "$WORK/bare.so") s"
  done
}

if (($# == 0)); then set -- package pack alone small; fi
for phase in "$@"; do
  echo "=== $phase"
  "$phase"
done
rm -rf "$WORK"
