"""Compares brainevent_suite.sh's runs: which tests brainevent's pipeline
passes that bekc's run does not, and how many compiles kernix started in each.

    python3 tests/gpu/compare_suites.py RESULTS_DIR [--reference OUTCOMES.json.gz]

With ``--reference`` (``$BEKC_SUITE_REFERENCE`` in brainevent_suite.sh), a run
of brainevent's pipeline recorded earlier on the same release stands in for a
brainevent run missing from RESULTS_DIR: a JSON object, gzipped or not, of
``{node id: outcome}`` such as ``bench/brainevent/results/0.3.0/
suite-outcomes-brainevent.json.gz``. The comparison is then bekc's run against
that record, which saves the lent machine the pipeline's own run.

Each mode's outcomes are merged from every shard: the per-test lines under
``outcomes-MODE/`` (written as each test finishes, so a shard stopped by its
time limit still counts what it finished), else the JUnit XML files. A test
that one run finished and the other did not is listed as "not run" there.
Prints a table and ends with "brainevent suite: N passed, N failed".
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

MODES = ("brainevent", "bekc")
RANK = {"passed": 0, "skipped": 1, "failed": 2}


def _merge(out: dict, tid: str, outcome: str) -> None:
    if RANK[outcome] >= RANK.get(out.get(tid, "passed"), 0) or tid not in out:
        out[tid] = outcome


def outcomes_from_lines(directory: str) -> dict:
    """{node id: 'passed' | 'failed' | 'skipped'} from the per-test JSON lines."""
    out: dict = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill
                _merge(out, rec["id"], rec["outcome"])
    return out


def outcomes_from_xml(paths) -> dict:
    out: dict = {}
    for xml_path in paths:
        for case in ET.parse(xml_path).getroot().iter("testcase"):
            tid = f"{case.get('classname')}::{case.get('name')}"
            kinds = {child.tag for child in case}
            _merge(out, tid, "failed" if kinds & {"failure", "error"} else
                   "skipped" if "skipped" in kinds else "passed")
    return out


def outcomes(results: str, mode: str) -> dict:
    lines = outcomes_from_lines(os.path.join(results, f"outcomes-{mode}"))
    if lines:
        return lines
    return outcomes_from_xml(sorted(glob.glob(os.path.join(results, f"{mode}*.xml"))))


def kernix_compiles(results: str, mode: str) -> int:
    return sum(json.load(open(p))["count"]
               for p in glob.glob(os.path.join(results, f"counts-{mode}", "*.json")))


def wall_seconds(results: str, mode: str) -> int:
    total = 0
    for p in glob.glob(os.path.join(results, f"{mode}*.time")):
        if p.endswith(".prebuild.time"):
            continue
        m = re.search(r"wall (\d+) s", open(p).read())
        total += int(m.group(1)) if m else 0
    return total


def recorded_outcomes(path: str) -> dict:
    """{node id: outcome} from a recorded run (bench/brainevent/results/)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def main(results: str, reference: str = "") -> int:
    runs = {m: outcomes(results, m) for m in MODES}
    if reference and not runs["brainevent"]:
        runs["brainevent"] = recorded_outcomes(reference)
        print(f"brainevent's pipeline: the run recorded in {reference}")
    runs = {m: r for m, r in runs.items() if r}
    print(f"\n{'run':<12}{'passed':>8}{'failed':>8}{'skipped':>9}{'kernix compiles':>17}"
          f"{'wall (all shards)':>19}")
    for mode, res in runs.items():
        counts = {k: sum(1 for v in res.values() if v == k) for k in RANK}
        print(f"{mode:<12}{counts['passed']:>8}{counts['failed']:>8}{counts['skipped']:>9}"
              f"{kernix_compiles(results, mode):>17}{wall_seconds(results, mode):>17} s")
    prebuild = os.path.join(results, "bekc.prebuild.time")
    if os.path.exists(prebuild):
        print(open(prebuild).read().strip())
    if len(runs) < 2:
        print("brainevent suite: 0 passed, 0 failed (one run only: nothing to compare)")
        return 0
    be, bk = runs["brainevent"], runs["bekc"]
    regressions = sorted(t for t, v in be.items() if v == "passed" and bk.get(t) != "passed")
    gained = sorted(t for t, v in bk.items() if v == "passed" and be.get(t) != "passed")
    unfinished = sorted(set(be) ^ set(bk))
    for t in regressions:
        print(f"REGRESSION {t}: {bk.get(t, 'not run')} with bekc")
    for t in gained[:50]:
        print(f"bekc only  {t}: {be.get(t, 'not run')} with brainevent's pipeline")
    if unfinished:
        print(f"{len(unfinished)} tests finished in one run only (a shard cut short)")
    compiles = kernix_compiles(results, "bekc")
    if compiles:
        print(f"kernix compiled {compiles} modules in bekc's run")
    failed = len(regressions) + (1 if compiles else 0)
    passed = sum(1 for t, v in be.items() if v == "passed" and bk.get(t) == "passed")
    print(f"brainevent suite: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    ref = ""
    if "--reference" in args:
        i = args.index("--reference")
        ref = args[i + 1]
        del args[i:i + 2]
    sys.exit(main(args[0], ref))
