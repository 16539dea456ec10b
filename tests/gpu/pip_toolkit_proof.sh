#!/usr/bin/env bash
# A CUDA toolkit from pip on the GPU machine, as root: bekc finds it with the
# system CUDA gone, and builds and runs kernels with it:
#
#   bash tests/gpu/pip_toolkit_proof.sh [PYTHON]
#
# PYTHON (default /opt/torch/.venv/bin/python) holds JAX with CUDA. The wheels
# of requirements-toolkit.txt must be in .whl/ (no index is reached):
# nvidia_cuda_nvcc, nvidia_cuda_crt, nvidia_nvvm, nvidia_cuda_runtime and
# nvidia_cuda_cccl, *.whl for manylinux x86_64. bekc is build/bekc (or $BEKC).
#
# 1. Installs the wheels with pip --prefix into a fresh directory: a Python
#    environment's layout (lib/python3.X/site-packages/nvidia/cu13). With
#    TOOLKIT_TAR=FILE.tar.xz, unpacks that instead: the same wheels unzipped
#    into one site-packages tree (for a carry limit the wheels exceed).
# 2. In a private mount namespace with /usr/local/cuda hidden
#    (tests/integration/hide_system_cuda.py): `bekc doctor` must choose the pip
#    nvcc; the quickstart example (raw JAX: bekc build, then
#    examples/quickstart/run.py) builds and runs on the GPU; pytest tests/gpu
#    runs with the loaders finding the toolkit through PYTHONPATH.
# 3. With both toolkits present: for brainevent's preferences pip and system,
#    bekc's choice while routing brainevent (bekc.use_for_brainevent()) must be
#    the nvcc brainevent's own pipeline picks (kernix_toolchain._select_nvcc),
#    and a kernel built through the loaders runs.
# The last line reads "pip toolkit proof: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PY=${1:-/opt/torch/.venv/bin/python}
export BEKC=${BEKC:-$ROOT/build/bekc}
unset BEKC_NVCC BEKC_NVCC_PREFER BRAINEVENT_NVCC_PATH BRAINEVENT_NVCC_PREFER
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
WORK=${WORK:-$(mktemp -d /tmp/bekc-pip-toolkit.XXXXXX)}
PREFIX=$WORK/prefix

if [[ "${1:-}" == --inside ]]; then
  # Phase 2, inside the namespace: the environment comes from the caller.
  PY=$2
  passed=0; failed=0
  step() { local name=$1; shift; printf '\n=== %s\n' "$name"
    if "$@"; then passed=$((passed + 1)); echo "--- $name: PASS"
    else failed=$((failed + 1)); echo "--- $name: FAIL"; fi; }
  step "no system nvcc is left" bash -c '! command -v nvcc && [[ ! -x /usr/local/cuda/bin/nvcc ]]'
  step "doctor chooses the pip nvcc" bash -c '"$BEKC" doctor | tee /dev/stderr | grep -q "^nvcc chosen by *pip toolkit nvidia/cu13 in $VIRTUAL_ENV/"'
  step "quickstart: bekc build (CLI)" bash -c '
    "$BEKC" build examples/quickstart/cpu_kernels.cpp --name quickstart -o "$WORK/ex/cpu" > "$WORK/cpu.path" &&
    "$BEKC" build examples/quickstart/gpu_kernels.cu --name quickstart_gpu -o "$WORK/ex/gpu" --explain-key > "$WORK/gpu.out" 2> "$WORK/gpu.err" &&
    grep "^bekc: nvcc" "$WORK/gpu.err" && grep -q "nvidia/cu13/bin/nvcc (chosen by pip toolkit" "$WORK/gpu.err"'
  step "quickstart: run.py on the GPU" bash -c '"$0" examples/quickstart/run.py "$(cat "$WORK/cpu.path")" "$(tail -n 1 "$WORK/gpu.out")"' "$PY"
  step "the library links no libcudart.so (static runtime from the toolkit)" bash -c '
    lib=$(dirname "$(tail -n 1 "$WORK/gpu.out")")/libquickstart_gpu.so; ! ldd "$lib" | grep -q libcudart'
  # Numba-CUDA's tests are left out here: Numba compiles their kernels itself
  # with the NVVM library, which its cuda.pathfinder looks for in the system
  # toolkit and its own interpreter's site-packages, not in a prefix on
  # PYTHONPATH; they need nothing of bekc's toolkit discovery. On the H100
  # all 31 failed here in Numba's compile, and bekc's 33 passed.
  step "pytest tests/gpu (bekc's kernels)" "$PY" -m pytest -q -p no:cacheprovider tests/gpu \
    --ignore=tests/gpu/test_numba_cuda.py --ignore=tests/gpu/test_numba_tutorial.py
  printf '\nhidden: %d passed, %d failed\n' "$passed" "$failed"
  echo "$passed $failed" > "$WORK/inside.counts"
  exit 0
fi

passed=0; failed=0
step() { local name=$1; shift; printf '\n=== %s\n' "$name"
  if "$@"; then passed=$((passed + 1)); echo "--- $name: PASS"
  else failed=$((failed + 1)); echo "--- $name: FAIL"; fi; }

if [[ -n "${TOOLKIT_TAR:-}" ]]; then
  # The wheels already unpacked into one site-packages tree and packed as a
  # tar (the device's carry limit is 64 MiB, and nvvm's wheel alone is near
  # it): unpacked where pip --prefix would have put them.
  pyver=$("$PY" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')
  mkdir -p "$PREFIX/lib/$pyver/site-packages"
  step "unpack the toolkit ($(basename "$TOOLKIT_TAR"))" \
    tar -xJf "$TOOLKIT_TAR" -C "$PREFIX/lib/$pyver/site-packages"
else
  wheels=()
  while read -r line; do
    name=${line%%==*}; [[ -z "$name" || "$name" == \#* ]] && continue
    f=$(ls .whl/"${name//-/_}"-"${line##*==}"-*.whl 2>/dev/null | head -n 1)
    [[ -n "$f" ]] || { echo "missing .whl/${name//-/_}-${line##*==}-*.whl" >&2; exit 2; }
    wheels+=("$f")
  done < requirements-toolkit.txt
  step "pip install --prefix (no index) ${wheels[*]##*/}" \
    "$PY" -m pip install -q --no-index --no-deps --no-compile --prefix "$PREFIX" "${wheels[@]}"
fi
SITE=$(echo "$PREFIX"/lib/python3*/site-packages)
PIP_NVCC=$SITE/nvidia/cu13/bin/nvcc
step "the pip nvcc runs" "$PIP_NVCC" --version

# Phase 2: the system CUDA hidden, PATH without it, the prefix as the active
# environment for the CLI and on PYTHONPATH for the interpreter.
export WORK BEKC
env VIRTUAL_ENV="$PREFIX" BEKC_CACHE_DIR="$WORK/cache-hidden" \
    PATH="$(dirname "$PY"):/usr/sbin:/usr/bin:/sbin:/bin" \
    PYTHONPATH="$SITE:$ROOT/python:$ROOT/tests/gpu${PYTHONPATH:+:$PYTHONPATH}" \
  unshare -m --propagation private "$PY" tests/integration/hide_system_cuda.py \
    bash "$0" --inside "$PY"
read -r p f < "$WORK/inside.counts" 2>/dev/null || { p=0; f=1; }
passed=$((passed + p)); failed=$((failed + f))

# Phase 3: both toolkits; bekc's choice while routing brainevent is brainevent's.
# $CUDA_HOME and $CUDA_PATH would decide for both before the preference does.
if ! "$PY" -c 'import brainevent' 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$WORK/be" .whl/brainevent-0.2.1-*.whl \
    .whl/brainunit-*.whl .whl/saiunit-*.whl 2>/dev/null
  BE_PATH=$WORK/be
fi
cat > "$WORK/route.py" <<'EOF'
import os, subprocess, sys
import jax, jax.numpy as jnp, numpy as np
import bekc
from bekc import _compat
bekc.use_for_brainevent()
import brainevent, brainevent.config
from brainevent._op import kernix_toolchain as kt
prefer = sys.argv[1]
brainevent.config.prefer_system_nvcc(prefer == "system")
theirs = kt._select_nvcc()[0]
src = os.path.join(os.environ["WORK"], "k.cu")
open(src, "w").write('#include "brainevent/common.h"\n'
    "__global__ void k(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * 2.f; }\n"
    "// @BE twice\nvoid twice(const BE::Tensor x, BE::Tensor y, int64_t stream) {\n"
    "  int n = (int)x.numel(); k<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(\n"
    "    static_cast<const float*>(x.data_ptr()), static_cast<float*>(y.data_ptr()), n); }\n")
argv, _ = _compat._loader_argv([src], name="route_" + prefer, flag_kind="cuda")
r = subprocess.run([os.environ["BEKC"]] + argv[1:] + ["--dry-run", "--explain-key"],
                   capture_output=True, text=True)
ours = [l for l in r.stderr.splitlines() if l.startswith("bekc: nvcc ")]
print("brainevent:", theirs)
print("bekc:      ", ours[0] if ours else r.stderr)
assert ours and os.path.realpath(ours[0].split(" ")[2]) == os.path.realpath(theirs), "choices differ"
src_text = open(src).read()
mod = brainevent.load_cuda_inline(name="route_" + prefer, cuda_sources=src_text,
                                  functions={"twice": ["arg", "ret", "stream"]})
x = jnp.arange(1000, dtype=jnp.float32)
call = jax.ffi.ffi_call(f"route_{prefer}.twice", jax.ShapeDtypeStruct(x.shape, x.dtype))
y = jax.jit(call)(x)
assert np.allclose(np.asarray(y), 2 * np.asarray(x)), "wrong result"
print("kernel ran on", jax.devices()[0])
EOF
for prefer in pip system; do
  step "both toolkits, brainevent prefers $prefer: bekc chooses as brainevent does" \
    env -u CUDA_HOME -u CUDA_PATH -u BEKC_NVCC WORK="$WORK" BEKC_CACHE_DIR="$WORK/cache-both" \
        PATH="/usr/local/cuda/bin:$(dirname "$PY"):$PATH" \
        PYTHONPATH="$SITE:$ROOT/python${BE_PATH:+:$BE_PATH}${PYTHONPATH:+:$PYTHONPATH}" \
        "$PY" "$WORK/route.py" "$prefer"
done

printf '\npip toolkit proof: %d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
