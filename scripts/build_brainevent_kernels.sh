#!/usr/bin/env bash
# Builds all 45 kernel files of brainevent 0.2.1 (installed in .venv by
# scripts/setup.sh) with bekc on a machine without a GPU: against brainevent's
# own headers and against bekc's copies, with target names and specs checked
# against brainevent's own parser. About 15 minutes on 2 cores, so CI builds
# only a subset (tests/integration/test_brainevent_kernels.py); this runs the
# same tests over every file. Ends with pytest's summary line.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
export BEKC_BINARY=$PWD/build/bekc BEKC_ALL_BRAINEVENT_KERNELS=1
exec .venv/bin/python -m pytest -q tests/integration/test_brainevent_kernels.py "$@"
