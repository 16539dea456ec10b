#!/usr/bin/env bash
# Installs what bekc needs on Debian 12 (as root), creates the Python venv from
# requirements-test.txt, and builds bekc into build/. Safe to run again: each
# step is skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(cmake make g++ python3 python3-venv
              libcli11-dev libfmt-dev libspdlog-dev libxxhash-dev libssl-dev
              nlohmann-json3-dev catch2 clang-14 libclang-rt-14-dev clang-format
              ccache sccache nginx curl)

log() { printf '[setup] %s\n' "$*" >&2; }

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python venv, rebuilt only when the pinned requirements change.
PY=${PYTHON:-python3}
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements-test.txt | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  log "creating .venv from requirements-test.txt"
  rm -rf .venv
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -r requirements-test.txt
  echo "$want" > "$stamp"
fi

# bekc is built while the other environments below download and install: the
# build needs only .venv's jaxlib (for its XLA FFI headers), and on a fresh
# machine pip spends most of its time waiting on the network.
XLA_INCLUDE=$(.venv/bin/python -c 'import jax.ffi; print(jax.ffi.include_dir())')
BUILD_DIR=${BUILD_DIR:-build}
build_bekc() {
  log "building bekc in $BUILD_DIR"
  # Release: debug information costs about 40% of the compile time of lib/,
  # and CI builds twice (the ASan pass is a Debug build). Unity build: sources
  # are compiled eight to a translation unit, which halves the build on two
  # cores (docs/ARCHITECTURE.md, "Unity builds"). BEKC_UNIT_TESTS=OFF leaves
  # the unit tests out (scripts/test.sh runs them in its ASan build only).
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} -DCMAKE_UNITY_BUILD=ON \
        -DBEKC_BUILD_TESTS=ON -DBEKC_UNIT_TESTS="${BEKC_UNIT_TESTS:-ON}" \
        -DBEKC_XLA_INCLUDE_DIR="$XLA_INCLUDE" ${CMAKE_EXTRA:-} >/dev/null
  # BUILD_TARGETS narrows the build (the ASan pass builds only what it runs).
  local targets=()
  for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
  cmake --build "$BUILD_DIR" -j"$(nproc)" "${targets[@]}" >/dev/null
}
build_bekc &
build_pid=$!
trap 'pkill -P "$build_pid" 2>/dev/null; kill "$build_pid" 2>/dev/null' EXIT

# brainevent 0.3.0, the newest release (it needs Python 3.12, and installs on
# 3.11 as pure Python): a second compatibility reference beside the pinned
# 0.2.1, in its own directory so that both can be read in one run. pip's own
# download cache keeps a rerun offline. tests/brainevent_releases.py finds it.
BE_NEW=0.3.0
be_dir=.deps/brainevent-$BE_NEW
if [[ ! -f "$be_dir/brainevent/_version.py" ]]; then
  log "installing brainevent $BE_NEW into $be_dir"
  rm -rf "$be_dir"
  .venv/bin/python -m pip install -q --no-deps --ignore-requires-python --no-compile \
      --target "$be_dir" "brainevent==$BE_NEW"
fi

# A CUDA toolkit from pip (requirements-toolkit.txt) in a venv of its own, as
# a user of jax[cuda13] has it: tests/integration/test_pip_toolkit.py builds
# with it while the system CUDA is hidden. Rebuilt only when the pins change.
stamp=.venv-toolkit/.requirements.sha256
want=$(sha256sum requirements-toolkit.txt | cut -d' ' -f1)
if [[ ! -x .venv-toolkit/bin/python3 || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  log "creating .venv-toolkit from requirements-toolkit.txt"
  rm -rf .venv-toolkit
  "$PY" -m venv --without-pip .venv-toolkit
  site=$(.venv-toolkit/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  .venv/bin/python -m pip install -q --no-deps --no-compile --target "$site" -r requirements-toolkit.txt
  echo "$want" > "$stamp"
fi

# The newest jax beside the pinned one: the Python suite and the
# loading integration tests run against it too (scripts/test.sh). jax 0.11 and
# later need Python 3.12, which pyenv provides on the CI machine; without one
# the step is skipped with a message.
JAX_NEWEST=0.12.0.1
py312=$(command -v python3.12 2>/dev/null || true)
[[ -n "$py312" ]] && ! "$py312" -c '' 2>/dev/null && py312=""  # a pyenv shim with no 3.12 selected
if [[ -z "$py312" ]] && command -v pyenv >/dev/null; then
  for d in "$(pyenv root)"/versions/3.1[2-9]*; do
    [[ -x "$d/bin/python3" ]] && { py312="$d/bin/python3"; break; }
  done
fi
stamp=.venv-jax-newest/.requirements.sha256
want=$( { sha256sum requirements-test.txt; echo "$JAX_NEWEST"; } | sha256sum | cut -d' ' -f1)
if [[ -n "$py312" && ( ! -x .venv-jax-newest/bin/python || "$(cat "$stamp" 2>/dev/null)" != "$want" ) ]]; then
  log "creating .venv-jax-newest (jax $JAX_NEWEST, $py312)"
  rm -rf .venv-jax-newest
  "$py312" -m venv .venv-jax-newest
  # The test requirements with jax and jaxlib at the newest release, and the
  # numpy and ml_dtypes it asks for.
  grep -vE '^(jax|jaxlib|numpy|ml_dtypes)==' requirements-test.txt > .venv-jax-newest/requirements.txt
  .venv-jax-newest/bin/python -m pip install -q -r .venv-jax-newest/requirements.txt \
      "jax==$JAX_NEWEST" "jaxlib==$JAX_NEWEST"
  echo "$want" > "$stamp"
elif [[ -z "$py312" ]]; then
  log "no Python 3.12 or newer: the newest-jax suite (jax $JAX_NEWEST) will be skipped"
fi

wait "$build_pid"  # its failure fails the setup (set -e)
trap - EXIT
log "bekc is at $BUILD_DIR/bekc"
