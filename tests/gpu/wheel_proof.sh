#!/usr/bin/env bash
# The wheel on a machine that never built bekc: a fresh venv that
# sees the machine's JAX, `pip install` of the wheel alone (no index, no
# dependencies), then the README's quickstart and a load_cuda_inline call, with
# no other set-up: no $BEKC, no PYTHONPATH, no build tree.
#
#   bash tests/gpu/wheel_proof.sh WHEEL [PYTHON]
#
# PYTHON (default python3) is the interpreter whose packages hold JAX. When it
# runs inside a venv, `venv --system-site-packages` exposes the base
# interpreter's packages, not that venv's, so the proof adds a .pth file naming
# them, as a user with JAX in another environment would.
set -euo pipefail
cd "$(dirname "$0")/../.."
WHEEL=$(realpath "$1")
PY=${2:-python3}
WORK=$(mktemp -d)
unset BEKC BEKC_BINARY BEKC_NUMBA_LIBRARY PYTHONPATH
export BEKC_CACHE_DIR=$WORK/cache PYTHONUNBUFFERED=1
say() { printf '\n=== %s\n' "$*"; }

say "fresh venv from $($PY -c 'import sys; print(sys.executable, sys.version.split()[0])')"
"$PY" -m venv --system-site-packages "$WORK/venv"
if ! "$WORK/venv/bin/python" -c 'import jax' 2>/dev/null; then
  purelib=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  echo "jax is not among the base interpreter's packages: adding $purelib through a .pth"
  "$WORK/venv/bin/python" -c 'import sys, sysconfig; open(sysconfig.get_path("purelib") + "/jax_env.pth", "w").write(sys.argv[1] + "\n")' "$purelib"
fi

say "pip install $(basename "$WHEEL")"
"$WORK/venv/bin/python" -m pip install --no-index --no-deps "$WHEEL"
source "$WORK/venv/bin/activate"
echo "bekc on PATH: $(command -v bekc)"; bekc --version
python -m bekc --version
python -c 'import bekc; print("package:", bekc.__file__); print("binary:", bekc.find_binary())'
bekc doctor || echo "(bekc doctor exited $?)"

say "README quickstart (examples/quickstart)"
cpu=$(bekc build examples/quickstart/cpu_kernels.cpp --name quickstart -o "$WORK/example/cpu")
gpu=$(bekc build examples/quickstart/gpu_kernels.cu --name quickstart_gpu -o "$WORK/example/gpu")
python examples/quickstart/run.py "$cpu" "$gpu"

say "load_cuda_inline"
python - <<'EOF'
import jax, jax.numpy as jnp
import bekc as brainevent

CUDA_SRC = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = a[idx] + b[idx];
}

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    int n = a.numel();
    add_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(a.data_ptr()), static_cast<const float*>(b.data_ptr()),
        static_cast<float*>(out.data_ptr()), n);
}
"""
mod = brainevent.load_cuda_inline(name="wheel_proof", cuda_sources=CUDA_SRC)
a = jnp.arange(1024, dtype=jnp.float32)
out = jax.jit(lambda x: jax.ffi.ffi_call("wheel_proof.vector_add",
                                         jax.ShapeDtypeStruct(x.shape, x.dtype))(x, x))(a)
assert jnp.allclose(out, 2 * a), out
print("load_cuda_inline vector_add on", jax.devices()[0], ": ok")
EOF
say "wheel proof: ok"
