#!/usr/bin/env python3
"""Direct-mode hits of two bekc builds side by side: the record file's cost.

A hit reads one direct-mode record file (docs/cache.md, "The record file")
and checks every file and absent path it lists; the in-process lookup
(``libbekc_lookup.so``) does it on every warm load, so that is where a
slower reader shows first. This times, interleaved, for this bekc and an
earlier one (``--baseline-bekc``, with its ``libbekc_lookup.so`` beside it):

* ``bekc build FILE --arch sm_90 --json`` in a new process (a hit);
* the same argument vector answered in this process by each binary's
  ``libbekc_lookup.so`` (both libraries loaded side by side; the call only).

FILE is bench/build/two_kernels.cu (CUDA, the runtime headers and the
toolkit's: a record of about 110 files and 240 absent paths). Each binary
builds it once into a cache of its own first; in each round both are timed,
each first in every other round. Prints medians and this bekc's over the
earlier one's. No GPU is needed.

    .venv/bin/python bench/bench_record_hit.py --bekc build/bekc \\
        --baseline-bekc /tmp/bekc-base/bekc --reps 300
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "bench" / "build" / "two_kernels.cu"
sys.path.insert(0, str(REPO / "python"))

from bekc import _lookup  # noqa: E402


def build_argv(binary: Path, cache: Path) -> list:
    return [str(binary), "build", str(SOURCE), "--arch", "sm_90", "--cache-dir", str(cache),
            "--json", "-q"]


def run_json(argv) -> dict:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def record_files(cache: Path) -> list:
    return sorted(p for p in (cache / "direct").rglob("*") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bekc", default=str(REPO / "build" / "bekc"))
    ap.add_argument("--baseline-bekc", required=True)
    ap.add_argument("--reps", type=int, default=300)
    args = ap.parse_args()

    binaries = {"bekc": Path(args.bekc).resolve(),
                "baseline": Path(args.baseline_bekc).resolve()}
    work = Path(tempfile.mkdtemp(prefix="bekc-bench-record-"))
    caches = {name: work / name for name in binaries}
    lookups = {}
    for name, binary in binaries.items():
        run_json(build_argv(binary, caches[name]))  # the miss
        assert run_json(build_argv(binary, caches[name]))["cache_hit"]
        lookups[name] = _lookup._Lookup(str(binary.parent / "libbekc_lookup.so"))
        found = lookups[name](build_argv(binary, caches[name]))
        assert found is not None and json.loads(found[0])["cache_hit"], found

    load_before = os.getloadavg()
    process = {name: [] for name in binaries}
    in_process = {name: [] for name in binaries}
    for rep in range(args.reps):
        # Each first in every other round: neither gains from going second.
        for name, binary in sorted(binaries.items(), reverse=rep % 2 == 1):
            argv = build_argv(binary, caches[name])
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True)
            process[name].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            found = lookups[name](argv)
            in_process[name].append(time.perf_counter() - t0)
            assert found is not None
    load_after = os.getloadavg()

    print(f"{args.reps} interleaved hits each; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after")
    for name in binaries:
        sizes = ", ".join(f"{p.name[-8:]} {p.stat().st_size} B" for p in record_files(caches[name]))
        print(f"{name}: {binaries[name]}; record file: {sizes}")
    print()
    print(f"{'hit':<34} {'bekc':>9} {'baseline':>9} {'ratio':>7}")
    for label, times in (("bekc build, new process", process),
                         ("libbekc_lookup.so, in process", in_process)):
        mine, base = statistics.median(times["bekc"]), statistics.median(times["baseline"])
        print(f"{label:<34} {mine * 1e3:>7.2f} ms {base * 1e3:>6.2f} ms {mine / base:>6.2f}x")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
