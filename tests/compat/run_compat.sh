#!/usr/bin/env bash
# One bekc-built CPU library against several jaxlib releases.
#
#   tests/compat/run_compat.sh [VERSION...]
#
# Builds tests/harness/kernels/handlers_cpu.cpp once with bekc, then for each
# jax/jaxlib release creates (or reuses) a virtual environment under
# $BEKC_COMPAT_DIR/venv-VERSION, installs jax==VERSION jaxlib==VERSION, and
# runs tests/compat/check_handlers.py: register every target with
# jax.ffi.register_ffi_target, call under jit, check results and error paths.
# Prints a table and exits non-zero when any release fails.
#
# Default releases span what bekc supports (see the history in
# runtime/include/bekc/xla_ffi_abi.h): 0.5.0 is the first jax with the public
# jax.ffi.register_ffi_target (0.4.38 has only jax.extend.ffi); 0.8.0 is the
# last that requires the handler's API version to equal 0.1 and 0.8.1 the
# first that accepts a range; 0.6.2 has the larger Api table of 0.6.0; 0.9.0
# is the oldest brainevent 0.3.0 accepts; 0.10.2 is the newest for Python
# 3.11 (CI's pin); 0.11.2 and 0.12.0.1, the newest on PyPI, need Python 3.12.
# Missing venvs are created in parallel ($BEKC_COMPAT_JOBS at a time, default
# 3); existing ones are reused.
#
# Environment:
#   BEKC_COMPAT_DIR     venvs, cache and logs (default: build/compat)
#   BEKC_COMPAT_PYTHON  interpreter for the venvs up to 0.10 (default: python3.11, else python3)
#   BEKC_COMPAT_PYTHON312  interpreter for 0.11 and later (default: python3.12, else
#                       pyenv's newest 3.12+)
#   BEKC_BINARY         the bekc binary (default: build/bekc)
#   PIP_INDEX_URL etc.  passed on to pip as usual
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
compat_dir="${BEKC_COMPAT_DIR:-$root/build/compat}"
bekc="${BEKC_BINARY:-$root/build/bekc}"
python="${BEKC_COMPAT_PYTHON:-$(command -v python3.11 || command -v python3)}"

if [[ $# -gt 0 ]]; then
    versions=("$@")
else
    versions=(0.5.0 0.6.2 0.8.0 0.8.1 0.9.0 0.10.2 0.11.2 0.12.0.1)
fi

python312="${BEKC_COMPAT_PYTHON312:-}"
if [[ -z "$python312" ]]; then
    python312="$(command -v python3.12 || true)"
    [[ -n "$python312" ]] && ! "$python312" -c '' 2>/dev/null && python312=""
    if [[ -z "$python312" ]] && command -v pyenv >/dev/null; then
        for d in "$(pyenv root)"/versions/3.1[2-9]*; do
            [[ -x "$d/bin/python3" ]] && { python312="$d/bin/python3"; break; }
        done
    fi
fi

# jax 0.11 and later are published for Python 3.12 and newer only.
python_for() {
    case "$1" in
        0.[5-9].* | 0.10.*) echo "$python" ;;
        *) echo "${python312:-$python}" ;;
    esac
}

if [[ ! -x "$bekc" ]]; then
    echo "run_compat.sh: no bekc binary at $bekc (build it, or set BEKC_BINARY)" >&2
    exit 2
fi
mkdir -p "$compat_dir/logs"

# numpy pins for releases whose wheels predate a numpy ABI or API change.
numpy_pin() {
    case "$1" in
        0.5.* | 0.6.*) echo "numpy<2.3" ;;
        *) echo "numpy" ;;
    esac
}

echo "building the library once with $bekc" >&2
build_json="$("$bekc" build "$root/tests/harness/kernels/handlers_cpu.cpp" \
    --cache-dir "$compat_dir/bekc-cache" --name compat_handlers --json -q)"
manifest="$(printf '%s' "$build_json" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["manifest"])')"
echo "manifest: $manifest" >&2

have_venv() {
    "$compat_dir/venv-$1/bin/python" -c "import jax, jaxlib; assert jax.__version__ == '$1' and jaxlib.__version__ == '$1'" 2>/dev/null
}

make_venv() {
    local v="$1" venv="$compat_dir/venv-$1" log="$compat_dir/logs/$1.log"
    rm -rf "$venv"
    if { "$(python_for "$v")" -m venv "$venv" &&
        "$venv/bin/python" -m pip install -q --disable-pip-version-check \
            "jax==$v" "jaxlib==$v" "$(numpy_pin "$v")"; } >"$log" 2>&1; then
        echo "[$v] venv ready" >&2
    else
        echo "[$v] pip install failed (see $log)" >&2
        rm -rf "$venv"
    fi
}

# Phase 1: the missing venvs, a few at a time (mostly download and unpack).
jobs_max="${BEKC_COMPAT_JOBS:-3}"
for v in "${versions[@]}"; do
    have_venv "$v" && continue
    echo "[$v] creating $compat_dir/venv-$v" >&2
    make_venv "$v" &
    while [[ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]]; do wait -n || true; done
done
wait

# Phase 2: the checks, one release at a time.
declare -A result
failed=0
for v in "${versions[@]}"; do
    log="$compat_dir/logs/$v.log"
    if ! have_venv "$v"; then
        result[$v]="FAIL no venv: pip install jax==$v jaxlib==$v failed (see $log)"
        failed=1
        continue
    fi
    echo "[$v] checking" >&2
    echo "---- check $(date -u +%FT%TZ)" >>"$log"
    if out="$("$compat_dir/venv-$v/bin/python" "$here/check_handlers.py" "$manifest" 2>>"$log")"; then
        result[$v]="$(printf '%s' "$out" | tail -n 1)"
    else
        result[$v]="$(printf '%s' "$out" | tail -n 1) (see $log)"
        failed=1
    fi
done

printf '\n%-10s %s\n' "jaxlib" "result"
printf '%-10s %s\n' "------" "------"
for v in "${versions[@]}"; do
    printf '%-10s %s\n' "$v" "${result[$v]}"
done
exit "$failed"
