#!/usr/bin/env bash
# Which of bekc's differences from a bare `nvcc -shared` costs time on a
# multi-architecture compile: -c against -shared, -MD, the
# wrapper, --threads. Medians of REPS runs, interleaved.
#   bash tests/gpu/nvcc_variants.sh [FILE]   (brainevent's densemv by default)
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
BEKC=${BEKC:-$PWD/build/bekc}
FIND='import importlib.util as u, os; print(os.path.dirname(u.find_spec("brainevent").origin))'
if ! $PY -c "$FIND" >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/bekc-bench-site \
      .whl/brainevent-*.whl || exit 1
  export PYTHONPATH=/tmp/bekc-bench-site${PYTHONPATH:+:$PYTHONPATH}
fi
PKG=$($PY -c "$FIND")
SRC=${1:-$PKG/_dense/binary_densemv.cu}
W=$(mktemp -d)
export BEKC_CACHE_DIR=$W/cache
# bekc's wrapper, as it compiles it.
cat > "$W/keep.sh" <<EOS
#!/bin/bash
for a in "\$@"; do case "\$a" in *.bekc.cu) cp "\$a" $W/wrapper.cu;; esac; done
exec "\$@"
EOS
chmod +x "$W/keep.sh"
"$BEKC" build "$SRC" -I "$PKG/include" --arch sm_80,sm_90,sm_100 --launcher "$W/keep.sh" -q >/dev/null || exit 1
RT=$(ls -d "$W"/cache/runtime/*/include)
CXX=$(command -v g++)
NV=/usr/local/cuda/bin/nvcc
BASE=(-std=c++17 -O3 -ccbin "$CXX" -Xcompiler -fPIC,-fvisibility=hidden
      -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
      -gencode arch=compute_100,code=sm_100 -gencode arch=compute_100,code=compute_100
      -I"$PKG/include" -I"$RT")
declare -A T
names=("bare -shared t0" "bare -c t0" "bare -c t0 -MD" "bare -c t4 -MD" "wrapper -c t0" "wrapper -c t0 -MD"
       "wrapper -c t4 -MD" "wrapper -c t8 -MD" "wrapper -M")
run() {
  case "$1" in
    "bare -shared t0") $NV "${BASE[@]}" --threads 0 -shared "$SRC" -o $W/x.so ;;
    "bare -c t0") $NV "${BASE[@]}" --threads 0 -c "$SRC" -o $W/x.o ;;
    "bare -c t0 -MD") $NV "${BASE[@]}" --threads 0 -MD -MF $W/x.d -c "$SRC" -o $W/x.o ;;
    "bare -c t4 -MD") $NV "${BASE[@]}" --threads 4 -MD -MF $W/x.d -c "$SRC" -o $W/x.o ;;
    "wrapper -c t0") $NV "${BASE[@]}" --threads 0 -c $W/wrapper.cu -o $W/w.o ;;
    "wrapper -c t0 -MD") $NV "${BASE[@]}" --threads 0 -MD -MF $W/w.d -c $W/wrapper.cu -o $W/w.o ;;
    "wrapper -c t4 -MD") $NV "${BASE[@]}" --threads 4 -MD -MF $W/w.d -c $W/wrapper.cu -o $W/w.o ;;
    "wrapper -c t8 -MD") $NV "${BASE[@]}" --threads 8 -MD -MF $W/w.d -c $W/wrapper.cu -o $W/w.o ;;
    # The dependency scan alone, as a step of its own would run it.
    "wrapper -M") $NV "${BASE[@]}" -M -MF $W/m.d -MT $W/w.o $W/wrapper.cu ;;
  esac
}
for ((r = 0; r < ${REPS:-3}; r++)); do
  for n in "${names[@]}"; do
    s=$EPOCHREALTIME; run "$n" || exit 1; e=$EPOCHREALTIME
    T[$n]+="$(awk -v a="$e" -v b="$s" 'BEGIN { print a - b }') "
  done
done
for n in "${names[@]}"; do
  printf '%-22s %s\n' "$n" "$(echo ${T[$n]} | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)] " s (median of " NR ")"}')"
done
