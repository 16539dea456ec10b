#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs every test: the optimized build's own
# tests (ctest), the Python and integration suites (pytest, JAX on the CPU),
# the unit tests under ASan+UBSan, the scanner fuzzer for a bounded time, the
# layering checks
# (lib/ and python/bekc),
# the length of lib/'s functions (scripts/check_function_length.py) and
# clang-format.
# Ends with one line "N passed, N failed". Exit status 0 only when all pass.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RESULTS=$ROOT/build/test-results
FUZZ_SECONDS=${FUZZ_SECONDS:-30}

# The unit tests are built and run once, under ASan+UBSan (below): building
# them in the optimized build too cost about two minutes on 2 cores.
BEKC_UNIT_TESTS=OFF bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
rm -rf "$RESULTS"; mkdir -p "$RESULTS"
status=0
step() { printf '\n=== %s (at %ds)\n' "$*" "$SECONDS"; }

step "the optimized build's tests (ctest: the XLA FFI layout, the handler harness)"
(cd build && ctest --output-on-failure -j"$(nproc)" --output-junit "$RESULTS/ctest.xml") || status=1

step "Python and integration tests (pytest, JAX CPU)"
export BEKC_BINARY=$ROOT/build/bekc
# Separate runs: each folder has its own conftest module. pytest-xdist runs
# each test file on one of up to 4 workers (--dist loadfile: a file's
# module-scoped fixtures are built once); the suites spend much of their time
# waiting on compilers and servers.
workers=$(nproc); ((workers > 4)) && workers=4
for suite in python integration; do
  .venv/bin/python -m pytest -q -n "$workers" --dist loadfile \
      --junitxml="$RESULTS/pytest-$suite.xml" "tests/$suite" || status=1
done

step "Python suite and loading integration tests against the newest jax"
# .venv-jax-newest (scripts/setup.sh): the test requirements with the newest
# jax and jaxlib on PyPI, on Python 3.12. Of the integration tests, those that
# load bekc-built libraries into JAX (test_spec_mismatch.py) and the one that
# compiles against jaxlib's own XLA FFI headers; the rest do not depend on
# jax's release. About 3 minutes on 2 cores.
NEWEST_INTEGRATION=(tests/integration/test_spec_mismatch.py
  tests/integration/test_brainevent_kernels.py::test_xla_headers_from_the_environment_and_active_virtualenv)
if [[ -x .venv-jax-newest/bin/python ]]; then
  # Separate runs, as above: each folder has its own conftest module.
  .venv-jax-newest/bin/python -m pytest -q -n "$workers" --dist loadfile \
      --junitxml="$RESULTS/pytest-python-jax-newest.xml" tests/python || status=1
  .venv-jax-newest/bin/python -m pytest -q -n "$workers" --dist loadfile \
      --junitxml="$RESULTS/pytest-integration-jax-newest.xml" "${NEWEST_INTEGRATION[@]}" || status=1
  # bekc's binding of the FFI C ABI against the newest jaxlib's c_api.h.
  newest_xla=$(.venv-jax-newest/bin/python -c 'import jax.ffi; print(jax.ffi.include_dir())')
  if bash tests/abi/run_layout_test.sh "$newest_xla" > "$RESULTS/abi-jax-newest.log" 2>&1; then
    echo '<testsuite><testcase name="abi-layout-jax-newest"/></testsuite>' > "$RESULTS/abi-jax-newest.xml"
  else
    tail -20 "$RESULTS/abi-jax-newest.log"
    echo '<testsuite><testcase name="abi-layout-jax-newest"><failure message="layout differs"/></testcase></testsuite>' \
      > "$RESULTS/abi-jax-newest.xml"; status=1
  fi
else
  echo "skipped: no .venv-jax-newest (scripts/setup.sh needs a Python 3.12 for it)"
fi

step "unit tests under ASan+UBSan"
# -g1: line tables only, which is all ASan's file:line reports need; full
# debug information made this build about 40 s longer on a 2-core machine.
if BUILD_DIR=build-asan BUILD_TYPE=Debug BEKC_UNIT_TESTS=ON CMAKE_EXTRA="-DBEKC_SANITIZE=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1" \
   BUILD_TARGETS="bekc bekc_unit_tests bekc_numba_harness" bash scripts/setup.sh; then
  # The unit tests (which also run the sanitized bekc binary where they spawn
  # it) and libbekc_numba's harness.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j"$(nproc)" -L 'unit|sanitized' --output-junit "$RESULTS/ctest-asan.xml") || status=1
else
  echo '<testsuite><testcase name="asan-build"><failure message="build failed"/></testcase></testsuite>' \
    > "$RESULTS/asan-build.xml"; status=1
fi

step "scanner fuzzing (${FUZZ_SECONDS}s)"
if [[ -f tests/fuzz/run_fuzz.sh ]]; then
  if bash tests/fuzz/run_fuzz.sh "$FUZZ_SECONDS" > "$RESULTS/fuzz.log" 2>&1; then
    echo '<testsuite><testcase name="fuzz_scanner"/></testsuite>' > "$RESULTS/fuzz.xml"
  else
    tail -30 "$RESULTS/fuzz.log"
    echo '<testsuite><testcase name="fuzz_scanner"><failure message="fuzzer found a problem"/></testcase></testsuite>' > "$RESULTS/fuzz.xml"
    status=1
  fi
fi

# check NAME LOG MESSAGE COMMAND...: a check that prints its problems; the
# first 40 lines of them when it fails.
check() {
  local name=$1 log=$RESULTS/$2 message=$3
  shift 3
  if "$@" > "$log" 2>&1; then
    echo "<testsuite><testcase name=\"$name\"/></testsuite>" > "${log%.log}.xml"
  else
    head -40 "$log"
    echo "<testsuite><testcase name=\"$name\"><failure message=\"$message\"/></testcase></testsuite>" \
      > "${log%.log}.xml"
    status=1
  fi
}

step "layering (scripts/check_layers.py)"
# No folder includes a header of a folder above it in docs/ARCHITECTURE.md's
# folder table.
check layering layers.log "an include points up" .venv/bin/python scripts/check_layers.py
step "Python layering (scripts/check_python_layers.py)"
# No module of python/bekc imports one of a layer above it in
# docs/ARCHITECTURE.md's table of the package's layers, and none in a cycle.
check python-layering python-layers.log "an import points up or goes round" \
  .venv/bin/python scripts/check_python_layers.py
step "function length (lib/: at most 80 lines a function)"
check function-length function-length.log "split the functions listed" \
  .venv/bin/python scripts/check_function_length.py lib

step "clang-format"
mapfile -t sources < <(git ls-files 'lib/*.cpp' 'lib/*.hpp' 'cli/*.cpp' 'cli/*.hpp' 'tests/unit/*.cpp' \
                         'runtime/numba/*.cpp' 'tests/harness/numba_harness.cpp' 'tests/harness/fake_libcuda.cpp')
if clang-format --dry-run --Werror "${sources[@]}" > "$RESULTS/format.log" 2>&1; then
  echo '<testsuite><testcase name="clang-format"/></testsuite>' > "$RESULTS/format.xml"
else
  head -40 "$RESULTS/format.log"
  echo '<testsuite><testcase name="clang-format"><failure message="run clang-format -i"/></testcase></testsuite>' > "$RESULTS/format.xml"
  status=1
fi

step "summary"
.venv/bin/python scripts/summarize_junit.py "$RESULTS"/*.xml || status=1
exit $status
