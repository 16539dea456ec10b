#!/usr/bin/env bash
# Sets up (scripts/setup.sh), builds the bundled example with bekc (a CPU
# module, and a CUDA module compiled with nvcc), loads both into JAX, and calls
# the CPU kernels (and the CUDA ones when a GPU is present).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
export BEKC_CACHE_DIR=${BEKC_CACHE_DIR:-$PWD/build/example-cache}
set -x
build/bekc inspect examples/quickstart
cpu=$(build/bekc build examples/quickstart/cpu_kernels.cpp --name quickstart -o build/example/cpu)
gpu=$(build/bekc build examples/quickstart/gpu_kernels.cu --name quickstart_gpu -o build/example/gpu)
build/bekc build examples/quickstart/cpu_kernels.cpp --name quickstart --json
.venv/bin/python examples/quickstart/run.py "$cpu" "$gpu"
