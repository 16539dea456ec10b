#!/usr/bin/env python3
"""Many machines, one miss: a cluster starting one job against one remote
(docs/cache.md, "One compile per miss across machines").

``--nodes`` processes (16) stand in for 16 machines: each has its own empty
local cache and all start at once. Each builds the same ``--modules`` (8)
small C++ modules, one after the other, all in the same order (as the
processes of one job import the same package), or with ``--order rotated``
node i starting at module i mod 8. The remote starts empty. Per remote (moto's
S3 with its signature checks on, and nginx's WebDAV, as plain and with the
lines that make it honour If-None-Match), three runs:

* ``alone``: one node, the 8 modules, an empty remote;
* ``no leases``: the 16 nodes with ``BEKC_REMOTE_WAIT=0``, today's
  behaviour: every node compiles every module it misses;
* ``leases``: the 16 nodes with leases on.

Each 16-node run has two rounds: the first against the empty remote, the
second with 16 new empty local caches against the remote the first round
filled. It prints, per run and round, the compiles (builds that ran the
compiler: the ``--json`` "cache_hit" false), the builds that waited for
another node, and the wall time from the start to the last node's end.

``--kill`` then plays a node dying mid-build: 16 nodes build one module with
leases on and ``BEKC_REMOTE_WAIT=--bound``; the first node to start
compiling stalls in its compiler and is killed (SIGKILL, its whole process
group) one second into its compile. It prints when each other node finished,
counted from the kill, against the bound.

    .venv/bin/python bench/bench_remote_cluster.py --bekc build/bekc
    .venv/bin/python bench/bench_remote_cluster.py --bekc build/bekc --kill --bound 15

Needs moto[server] (requirements-test.txt) and nginx; a remote that is not
there is skipped. No GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "tests"))

from support.kernels import ADD_VALUE_CPP_TEMPLATE  # noqa: E402
from test_remote_cache import Nginx, find_nginx  # noqa: E402
from test_remote_s3 import MOTO_SERVER, Moto  # noqa: E402

class Cluster:
    """The modules, a compiler that logs "$NODE args" (and, for the node
    named $STALL, sleeps before compiling), and the nodes' runs."""

    def __init__(self, bekc: Path, work: Path, modules: int, rotate: bool = False):
        self.bekc, self.work, self.rotate = bekc, work, rotate
        self.sources = []
        for i in range(modules):
            path = work / "src" / f"mod{i}.cpp"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(ADD_VALUE_CPP_TEMPLATE.format(fn=f"add_{i}", includes="",
                                                          value=f"{i}.5f", extra=""))
            self.sources.append(path)
        gxx = shutil.which("g++") or shutil.which("c++")
        self.log = work / "compiler.log"
        self.cxx = work / "bin" / "g++"
        self.cxx.parent.mkdir()
        self.cxx.write_text(
            f'#!/bin/sh\ncase "$*" in *.bekc.cpp*) echo "$NODE $$" >> "{self.log}"\n'
            f'  if [ -n "$STALL" ] && mkdir "{work}/stalled" 2>/dev/null; then\n'
            f'    echo "$NODE" > "{work}/stalled/node"; sleep 600; fi;; esac\n'
            f'exec "{gxx}" "$@"\n')
        self.cxx.chmod(0o755)

    def node(self, name: str, order: list, remote: str, env: dict, results: dict,
             procs: dict, start_at: float) -> None:
        """One node: its modules in `order`, one build after the other."""
        cache = self.work / "caches" / name
        out = []
        time.sleep(max(0.0, start_at - time.monotonic()))
        for i in order:
            argv = [str(self.bekc), "build", str(self.sources[i]), "-O0", "--cxx", str(self.cxx),
                    "--remote-cache", remote, "--cache-dir", str(cache), "--json"]
            t0 = time.monotonic()
            p = subprocess.Popen(argv, cwd=self.work, env=dict(env, NODE=name),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            procs[name] = p
            stdout, stderr = p.communicate()
            info = json.loads(stdout.strip().splitlines()[-1]) if p.returncode == 0 else None
            out.append({"module": i, "rc": p.returncode, "info": info, "stderr": stderr,
                        "end": time.monotonic(), "seconds": time.monotonic() - t0})
            if p.returncode != 0:
                break
        results[name] = out

    def run(self, nodes: int, remote: str, env: dict, round_name: str,
            modules: list | None = None) -> dict:
        """`nodes` nodes at once; returns {node: [build results]} and the wall time."""
        modules = modules if modules is not None else list(range(len(self.sources)))
        results, procs, threads = {}, {}, []
        start_at = time.monotonic() + 0.5
        for n in range(nodes):
            first = n % len(modules) if self.rotate else 0
            order = modules[first:] + modules[:first]
            t = threading.Thread(target=self.node, args=(f"{round_name}-n{n}", order, remote,
                                                         env, results, procs, start_at))
            t.start()
            threads.append(t)
        self.procs = procs
        for t in threads:
            t.join()
        wall = max(b["end"] for r in results.values() for b in r) - start_at
        return {"results": results, "wall": wall, "start": start_at}


def summary(run: dict) -> tuple:
    builds = [b for r in run["results"].values() for b in r]
    failed = [b for b in builds if b["rc"] != 0]
    compiles = sum(1 for b in builds if b["info"] and not b["info"]["cache_hit"])
    remote_hits = sum(1 for b in builds if b["info"] and b["info"].get("remote_hit"))
    warnings = sorted({line for b in builds for line in b["stderr"].splitlines()
                       if "warning" in line})
    return compiles, remote_hits, len(builds), failed, warnings


def waits(cluster: Cluster, names) -> tuple:
    waited = served = 0
    for name in names:
        r = subprocess.run([str(cluster.bekc), "cache", "stats", "--json", "--cache-dir",
                            str(cluster.work / "caches" / name)], capture_output=True, text=True)
        c = json.loads(r.stdout)["counters"]
        waited += c["remote_waits"]
        served += c["remote_waits_served"]
    return waited, served


def moto_requests(prefix: Path):
    """A count of the requests moto's log shows so far."""
    def count() -> int:
        text = (prefix / "moto.log").read_text(errors="replace")
        return sum(text.count(f'"{m} /') for m in ("GET", "PUT", "HEAD"))
    return count


def base_env(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEKC_", "AWS_"))}
    env.update(extra)
    return env


def bench_remote(label: str, remote: str, env: dict, args, work: Path) -> list:
    rows = []
    for mode, wait in (("alone", "300"), ("no leases", "0"), ("leases", "300")):
        cluster = Cluster(args.bekc, work / f"{label}-{mode}".replace(" ", "-"), args.modules,
                          args.order == "rotated")
        url, requests = remote()
        run_env = dict(env, BEKC_REMOTE_WAIT=wait)
        rounds = [("1", 1 if mode == "alone" else args.nodes)]
        if mode != "alone":
            rounds.append(("2", args.nodes))
        for round_name, nodes in rounds:
            asked = requests()
            run = cluster.run(nodes, url, run_env, f"r{round_name}")
            asked = requests() - asked
            compiles, hits, builds, failed, warnings = summary(run)
            waited, served = waits(cluster, run["results"])
            rows.append((label, mode, round_name, nodes, builds, compiles, waited, served, asked,
                         run["wall"], len(failed)))
            print(f"  {label:12} {mode:10} round {round_name}: {compiles:3} compiles of "
                  f"{builds} builds, {waited} waited ({served} served), {asked} requests, "
                  f"{run['wall']:.1f} s" + (f", {len(failed)} FAILED" if failed else ""),
                  flush=True)
            for w in warnings[:3]:
                print("      " + w[:400], flush=True)
    return rows


def bench_kill(args, moto: Moto, work: Path) -> None:
    cluster = Cluster(args.bekc, work / "kill", args.modules)
    bucket = moto.bucket()
    env = base_env({"AWS_ACCESS_KEY_ID": moto.key_id, "AWS_SECRET_ACCESS_KEY": moto.secret,
                    "BEKC_S3_ENDPOINT": moto.endpoint, "BEKC_REMOTE_WAIT": str(args.bound),
                    "STALL": "1"})
    killed = {}

    def killer():
        marker = cluster.work / "stalled" / "node"
        while not marker.exists() or not marker.read_text().strip():
            time.sleep(0.02)
        time.sleep(1.0)
        victim = marker.read_text().strip()
        proc = cluster.procs[victim]
        os.killpg(proc.pid, signal.SIGKILL)
        killed["node"], killed["at"] = victim, time.monotonic()

    k = threading.Thread(target=killer)
    k.start()
    run = cluster.run(args.nodes, f"s3://{bucket}/bekc", env, "kill", modules=[0])
    k.join()
    others = {n: r[-1] for n, r in run["results"].items() if n != killed["node"]}
    after = sorted(b["end"] - killed["at"] for b in others.values())
    compiles = sum(1 for b in others.values() if b["info"] and not b["info"]["cache_hit"])
    failed = [n for n, b in others.items() if b["rc"] != 0]
    lease_taken = run["start"]
    print(f"\nkill: node {killed['node']} killed {killed['at'] - lease_taken:.1f} s after the "
          f"start; bound $BEKC_REMOTE_WAIT={args.bound} s")
    print(f"  the other {len(others)} nodes finished {after[0]:.1f} .. {after[-1]:.1f} s after "
          f"the kill ({after[-1] + killed['at'] - lease_taken:.1f} s after the start); "
          f"{compiles} compiled, {len(others) - compiles - len(failed)} fetched the entry; "
          f"{len(failed)} failed")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bekc", type=Path, default=REPO / "build" / "bekc")
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--modules", type=int, default=8)
    ap.add_argument("--remotes", default="moto,nginx,nginx-cond")
    ap.add_argument("--order", choices=("same", "rotated"), default="same",
                    help="every node builds the modules in the same order, or node i "
                         "starts at module i")
    ap.add_argument("--kill", action="store_true", help="also the dying-node run")
    ap.add_argument("--bound", type=int, default=15, help="$BEKC_REMOTE_WAIT for --kill")
    args = ap.parse_args()
    args.bekc = args.bekc.resolve()
    work = Path(tempfile.mkdtemp(prefix="bekc-cluster."))
    servers, rows = [], []
    try:
        wanted = args.remotes.split(",")
        moto = None
        if MOTO_SERVER.exists() and ("moto" in wanted or args.kill):
            (work / "moto").mkdir()
            moto = Moto(work / "moto")
            servers.append(moto)
            env = base_env({"AWS_ACCESS_KEY_ID": moto.key_id,
                            "AWS_SECRET_ACCESS_KEY": moto.secret,
                            "BEKC_S3_ENDPOINT": moto.endpoint})
            if "moto" in wanted:
                rows += bench_remote("moto S3", lambda: (f"s3://{moto.bucket()}/bekc",
                                                         moto_requests(work / "moto")),
                                     env, args, work)
        nginx = find_nginx()
        for label in ("nginx", "nginx-cond"):
            if nginx is None or label not in wanted:
                continue
            counter = iter(range(100))

            def fresh(label=label):
                server = Nginx(nginx, work / f"{label}-{next(counter)}",
                               conditional=label == "nginx-cond")
                servers.append(server)
                return server.url, lambda: len(server.requests())
            rows += bench_remote(label, fresh, base_env({}), args, work)
        if args.kill and moto is not None:
            bench_kill(args, moto, work)
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("\n| remote | run | round | nodes | builds | compiles | waited (served) | requests "
          "| wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, mode, rnd, nodes, builds, compiles, waited, served, asked, wall, failed in rows:
        print(f"| {label} | {mode} | {rnd} | {nodes} | {builds} | {compiles} | {waited} "
              f"({served}) | {asked} | {wall:.1f} |" + (f" {failed} failed" if failed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
