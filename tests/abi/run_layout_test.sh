#!/usr/bin/env bash
# Compiles and runs the XLA FFI layout test against one XLA include directory.
#
#   tests/abi/run_layout_test.sh "$(python3 -c 'import jax.ffi; print(jax.ffi.include_dir())')"
#
# Needs only a C++17 compiler ($CXX, default g++); exits with the test's status.
set -euo pipefail

if [[ $# -ne 1 || ! -f "$1/xla/ffi/api/c_api.h" ]]; then
    echo "usage: $0 INCLUDE_DIR   (a directory holding xla/ffi/api/c_api.h," >&2
    echo "       e.g. the output of: python3 -c 'import jax.ffi; print(jax.ffi.include_dir())')" >&2
    exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# No -pedantic: XLA's own c_api.h does not compile under g++ -pedantic (its Api
# fields reuse their typedef names).
"${CXX:-g++}" -std=c++17 -Wall -Wextra -Werror \
    -I "$root/runtime/include" -I "$1" \
    "$here/layout_test.cpp" -o "$out/layout_test"
"$out/layout_test"
