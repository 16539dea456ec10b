#!/usr/bin/env bash
# Sourced by the GPU scripts (tests/gpu/start_benches.sh, frontier_checks.sh):
# what $PY cannot import of brainevent and its dependencies, apache-tvm-ffi,
# typing_extensions and ninja (tvm-ffi runs `ninja` on every load) is
# installed from .whl/ (docs/gpu.md) into /tmp/bekc-bench-site, byte-compiled
# as pip does (the benchmarks time imports), which goes on
# PYTHONPATH and PATH. Expects $PY; returns non-zero when pip fails.
SITE=/tmp/bekc-bench-site
need=()
$PY -c 'import brainevent' 2>/dev/null || need+=(brainevent brainunit saiunit brainstate braintools array_api_compat)
$PY -c 'import importlib.util as u, sys; sys.exit(u.find_spec("tvm_ffi") is None)' || need+=(apache_tvm_ffi typing_extensions)
command -v ninja >/dev/null || need+=(ninja)
if ((${#need[@]})); then
  wheels=()
  for n in "${need[@]}"; do
    for w in .whl/"$n"-*.whl; do [[ -e $w ]] && wheels+=("$w"); done
  done
  if ((${#wheels[@]})); then
    $PY -m pip install -q --no-index --no-deps --target "$SITE" "${wheels[@]}" || return 1
    # pip compiles nothing where PYTHONDONTWRITEBYTECODE is set (the GPU
    # machines set it); compileall does, so the peers' imports are timed as
    # an installed package's.
    $PY -m compileall -q "$SITE" >/dev/null 2>&1 || true  # a file that does not compile is imported as it is
    export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} PATH=$SITE/bin:$PATH
  fi
fi
