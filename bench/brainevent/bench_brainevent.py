"""brainevent's kernel files: bekc's prebuild against brainevent's pipeline.

For the brainevent importable from this Python (0.2.1 or 0.3.0; the report
names the release). Needs a GPU machine with brainevent installed (or its
wheels in .whl/, installed with ``pip install --target DIR`` and DIR put on
PYTHONPATH, as tests/gpu/brainevent_suite.sh does; see docs/gpu.md) and a bekc
binary. Three measures, then one table:

1. ``prebuild``: every kernel file of the installed package into an empty
   bekc cache with one ``bekc build <package> -j N`` (N = 16 on the GPU
   machine), timed; then the same command again (all hits). A module that
   fails (0.3.0's ``_tcsr/tile_mm/binary_csrmm_tile.cu`` includes a header its
   wheel does not ship) is recorded with bekc's reason, and the rest count.
2. ``kernix``: brainevent's own pipeline compiling the same (file, name)
   modules one by one, each into an empty brainevent cache, the way first use
   does (``load_cuda_file(path, name=...)``); each compile timed.
3. ``first-call``: in a fresh process with the prebuilt cache and
   ``bekc.use_for_brainevent()``, the first ``load_cuda_file`` of each module
   (a cache hit: no compiler runs) against a second, warm call in the same
   process; and the first call of one op (binary_densemv, cuda_raw) against
   its first call in a process where its module was already loaded.

    python3 bench/brainevent/bench_brainevent.py all --bekc build/bekc --jobs 16
    # or in parts (each under a device command's time limit), then:
    python3 bench/brainevent/bench_brainevent.py prebuild --bekc B --out DIR
    python3 bench/brainevent/bench_brainevent.py kernix --shard 1/2 --out DIR
    python3 bench/brainevent/bench_brainevent.py first-call --bekc B --out DIR
    python3 bench/brainevent/bench_brainevent.py report DIR

Results are JSON files in --out; ``report`` prints the tables with ratios.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def package() -> Path:
    spec = importlib.util.find_spec("brainevent")
    if spec is None:
        sys.exit("brainevent is not installed")
    return Path(spec.origin).parent.resolve()


def release() -> str:
    text = (package() / "_version.py").read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("'\"")
    return "?"


def plan(bekc: str, literal_only: bool = False) -> list:
    """[(file, name)] as `bekc build <package> --dry-run` plans them; with
    literal_only, not the files only checked (linked with undefined symbols
    allowed), which the package loads under computed names or flags."""
    out = subprocess.run([bekc, "build", str(package()), "--dry-run"], check=True,
                         capture_output=True, text=True).stdout
    modules = []
    for line in out.splitlines():
        argv = shlex.split(line)
        name = next(a.split("=", 1)[1] for a in argv if a.startswith("--name="))
        if not (literal_only and "--linker-arg=-zundefs" in argv):
            modules.append((argv[2], name))
    return modules


def cmd_prebuild(a) -> dict:
    cache = tempfile.mkdtemp(prefix="bekc-prebuild-")
    argv = [a.bekc, "build", str(package()), "-j", str(a.jobs), "--cache-dir", cache, "--json"]
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    cold = time.perf_counter() - t
    # Exit 1 with a JSON report: some modules failed, the rest are built.
    lines = proc.stdout.strip().splitlines()
    if proc.returncode not in (0, 1) or not lines:
        sys.exit(f"prebuild failed:\n{proc.stderr}")
    info = json.loads(lines[-1])
    t = time.perf_counter()
    again = subprocess.run(argv, capture_output=True, text=True)
    hot = time.perf_counter() - t
    hits = sum(m["cache_hit"] for m in json.loads(again.stdout.strip().splitlines()[-1])["modules"])
    return {"release": release(), "cold_s": cold, "hot_s": hot, "jobs": a.jobs, "cache": cache,
            "summary": [line for line in proc.stderr.splitlines()
                        if line.startswith("bekc: package") or " modules built " in line],
            "failed": [(f["source"], f["name"], f["why"]) for f in info.get("failed", [])],
            "modules": len(info["modules"]), "hot_hits": hits,
            "as_loaded": sum(1 for m in info["modules"] if m["loaded_at"]),
            "loaded": [(m["source"], m["name"]) for m in info["modules"] if m["loaded_at"]]}


def cmd_kernix(a) -> dict:
    """brainevent's pipeline, one module after another, each a cold compile."""
    i, n = (int(x) for x in a.shard.split("/"))
    modules = plan(a.bekc)[i - 1::n]
    from brainevent._op import kernix_pipeline
    times = {}
    start = time.perf_counter()
    for path, name in modules:
        if a.budget and time.perf_counter() - start > a.budget:
            break
        kernix_pipeline.set_cache_dir(tempfile.mkdtemp(prefix="kernix-"))
        t = time.perf_counter()
        try:
            kernix_pipeline.load_cuda_file(path, name=name, auto_register=False)
            note = ""
        except Exception as e:  # the cuBLAS kernel compiles but does not load without
            # the linker flags brainevent adds at run time; 0.3.0's tile kernel
            # does not compile (a header its wheel lacks)
            note = f" (failed: {type(e).__name__})"
        times[f"{path}::{name}"] = time.perf_counter() - t
        print(f"kernix {Path(path).name} as {name}: {times[f'{path}::{name}']:.2f} s{note}",
              flush=True)
    return {"shard": a.shard, "planned": len(modules), "times": times}


FIRST_CALL = r"""
import json, sys, time
import bekc, brainevent
bekc.use_for_brainevent()
from brainevent._op import load_cuda_file
modules = json.loads(sys.argv[1])
first, warm = {}, {}
failed = {}
for path, name in modules:
    t = time.perf_counter()
    try:
        load_cuda_file(path, name=name)
    except Exception as e:  # with a pack and no nvcc: a module the pack lacks
        failed[name] = str(e).splitlines()[0][:200]
        continue
    first[name] = time.perf_counter() - t
    t = time.perf_counter(); load_cuda_file(path, name=name); warm[name] = time.perf_counter() - t
print(json.dumps({"first": first, "warm": warm, "failed": failed}))
"""

OP_CALL = r"""
import json, sys, time
import jax, jax.numpy as jnp
import bekc, brainevent
if sys.argv[2] == "bekc":
    bekc.use_for_brainevent()
from brainevent._dense.binary import binary_densemv
w = jnp.ones((512, 256), jnp.float32); s = jnp.ones((256,), jnp.bool_)
# JAX and the GPU start up (seconds) before anything is timed, in both modes.
jax.jit(lambda a: a @ a.T)(w).block_until_ready()
if sys.argv[1] == "preloaded":
    # Load the module (and warm JAX) with another shape first.
    binary_densemv(jnp.ones((64, 32), jnp.float32), jnp.ones((32,), jnp.bool_),
                   transpose=False, backend="cuda_raw").block_until_ready()
t = time.perf_counter()
binary_densemv(w, s, transpose=False, backend="cuda_raw").block_until_ready()
print(json.dumps({"first_call_s": time.perf_counter() - t}))
"""


def _python(code: str, *args, cache: str, kernix_cache: str = "") -> dict:
    env = dict(os.environ, BEKC_CACHE_DIR=cache, BEKC=os.path.abspath(ARGS.bekc),
               **({"BEKC_READ_ONLY_CACHES": ARGS.pack} if ARGS.pack else {}),
               BRAINEVENT_CACHE_DIR=kernix_cache or tempfile.mkdtemp(prefix="kernix-"),
               PYTHONPATH=os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env)
    if proc.returncode != 0:
        sys.exit(f"benchmark child failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cmd_first_call(a) -> dict:
    if a.pack:
        # A pack as the only read-only layer, an empty own cache per process
        # (run with nvcc hidden: tests/gpu/pack_proof.sh firstcall); the
        # modules brainevent loads under their literal names, planned
        # beforehand (--modules, JSON [[file, name], ...]).
        loaded = json.load(open(a.modules))
        fresh = lambda: tempfile.mkdtemp(prefix="bekc-own-")  # noqa: E731
    else:
        pre = json.load(open(os.path.join(a.out, "prebuild.json")))
        loaded = pre["loaded"]
        fresh = lambda: pre["cache"]  # noqa: E731
    loads = _python(FIRST_CALL, json.dumps(loaded), cache=fresh())
    ops = {}
    for mode in ("cold", "preloaded"):
        runs = [_python(OP_CALL, mode, "bekc", cache=fresh())["first_call_s"]
                for _ in range(a.reps)]
        ops[mode] = statistics.median(runs)
    if a.pack:
        return {"loads": loads, "op_first_call": ops, "reps": a.reps, "pack": a.pack}
    # brainevent's own pipeline with its kernel already in its cache: one
    # process fills the cache, the measured ones find it there.
    kernix_cache = tempfile.mkdtemp(prefix="kernix-warm-")
    _python(OP_CALL, "cold", "kernix", cache=pre["cache"], kernix_cache=kernix_cache)
    runs = [_python(OP_CALL, "cold", "kernix", cache=pre["cache"],
                    kernix_cache=kernix_cache)["first_call_s"] for _ in range(a.reps)]
    ops["kernix_cached"] = statistics.median(runs)
    return {"loads": loads, "op_first_call": ops, "reps": a.reps}


def report(out: str) -> None:
    pre = json.load(open(os.path.join(out, "prebuild.json")))
    kernix = {}
    planned = 0
    for f in sorted(glob.glob(os.path.join(out, "kernix-*.json"))):
        part = json.load(open(f))
        kernix.update(part["times"])
        planned += part["planned"]
    print(f"\nAll kernel files of brainevent {pre.get('release', '0.2.1')}, cold")
    print(f"{'':44}{'seconds':>10}{'ratio':>8}")
    total = sum(kernix.values())
    print(f"{'brainevent pipeline, one by one (sum)':44}{total:>10.1f}{1:>8.2f}")
    print(f"{'bekc build <package> -j %d' % pre['jobs']:44}{pre['cold_s']:>10.1f}"
          f"{pre['cold_s'] / total if total else float('nan'):>8.3f}")
    print(f"{'bekc build <package> again (all hits)':44}{pre['hot_s']:>10.2f}"
          f"{pre['hot_s'] / total if total else float('nan'):>8.4f}")
    print(f"modules: {pre['modules']} ({pre['as_loaded']} under brainevent's literal names); "
          f"kernix compiled {len(kernix)} of {planned}; second run: {pre['hot_hits']} hits")
    for line in pre.get("summary", []):
        print(line)
    for source, name, why in pre.get("failed", []):
        print(f"failed: {source} as {name}: {why}")
    report_first_call(os.path.join(out, "first-call.json"))


def report_first_call(fc_path: str) -> None:
    if os.path.exists(fc_path):
        fc = json.load(open(fc_path))
        first, warm = fc["loads"]["first"], fc["loads"]["warm"]
        extra = [first[n] - warm[n] for n in first]
        print("\nFirst use of each module after the prebuild (load_cuda_file through bekc)")
        print(f"{'':36}{'median ms':>10}{'max ms':>9}")
        print(f"{'first call (bekc hit, load, register)':36}"
              f"{1e3 * statistics.median(first.values()):>10.1f}{1e3 * max(first.values()):>9.1f}")
        print(f"{'warm call (same process)':36}"
              f"{1e3 * statistics.median(warm.values()):>10.2f}{1e3 * max(warm.values()):>9.2f}")
        print(f"{'first - warm':36}{1e3 * statistics.median(extra):>10.1f}{1e3 * max(extra):>9.1f}"
              f"   ({len(first)} modules)")
        for name, why in fc["loads"].get("failed", {}).items():
            print(f"not loaded: {name}: {why}")
        op = fc["op_first_call"]
        print(f"\nbinary_densemv (cuda_raw), first call in a process, median of {fc['reps']} "
              f"processes (JAX started beforehand)")
        print(f"{'':52}{'ms':>9}")
        where = "from the pack alone" if fc.get("pack") else "prebuilt cache"
        print(f"{'bekc, %s, module loaded by this call' % where:52}{1e3 * op['cold']:>9.1f}")
        if "kernix_cached" in op:
            print(f"{'brainevent pipeline, its cache already holding it':52}"
                  f"{1e3 * op['kernix_cached']:>9.1f}")
        print(f"{'bekc, module loaded (another shape) before':52}{1e3 * op['preloaded']:>9.1f}")


def main() -> None:
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=["all", "prebuild", "kernix", "first-call", "report", "modules"])
    p.add_argument("out_dir", nargs="?")
    p.add_argument("--bekc", default=str(ROOT / "build" / "bekc"))
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--shard", default="1/1")
    p.add_argument("--budget", type=float, default=0, help="kernix: stop after this many s")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=None)
    p.add_argument("--pack", default="", help="first-call: from this pack alone")
    p.add_argument("--modules", default="", help="first-call --pack: JSON [[file, name]]")
    ARGS = a = p.parse_args()
    a.out = a.out or a.out_dir or tempfile.mkdtemp(prefix="bench-brainevent-")
    os.makedirs(a.out, exist_ok=True)

    def save(name, data):
        with open(os.path.join(a.out, name), "w") as f:
            json.dump(data, f, indent=1)

    if a.what in ("all", "prebuild"):
        save("prebuild.json", cmd_prebuild(a))
    if a.what in ("all", "kernix"):
        save(f"kernix-{a.shard.replace('/', 'of')}.json", cmd_kernix(a))
    if a.what in ("all", "first-call"):
        save("first-call.json", cmd_first_call(a))
    if a.what == "modules":  # for first-call --pack, planned where nvcc runs
        save("modules.json", plan(a.bekc, literal_only=True))
    if a.what in ("all", "report"):
        report(a.out) if os.path.exists(os.path.join(a.out, "prebuild.json")) else \
            report_first_call(os.path.join(a.out, "first-call.json"))


if __name__ == "__main__":
    main()
