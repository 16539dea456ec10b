"""Compares brainevent_suite.sh's two runs: which tests brainevent's pipeline
passes that bekc's run does not, and how many compiles kernix started in each.

    python3 tests/gpu/compare_suites.py RESULTS_DIR

Prints a table and ends with "brainevent suite: N passed, N failed".
"""

from __future__ import annotations

import glob
import json
import os
import sys
import xml.etree.ElementTree as ET


def outcomes(xml_path: str) -> dict:
    """{test id: 'passed' | 'failed' | 'skipped'}."""
    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        tid = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        out[tid] = ("failed" if kinds & {"failure", "error"} else
                    "skipped" if "skipped" in kinds else "passed")
    return out


def kernix_compiles(results: str, mode: str) -> int:
    return sum(json.load(open(p))["count"]
               for p in glob.glob(os.path.join(results, f"counts-{mode}", "*.json")))


def main(results: str) -> int:
    runs = {m: outcomes(os.path.join(results, f"{m}.xml"))
            for m in ("brainevent", "bekc") if os.path.exists(os.path.join(results, f"{m}.xml"))}
    print(f"\n{'run':<12}{'passed':>8}{'failed':>8}{'skipped':>9}{'kernix compiles':>17}  wall")
    for mode, res in runs.items():
        counts = {k: sum(1 for v in res.values() if v == k) for k in ("passed", "failed", "skipped")}
        wall = open(os.path.join(results, f"{mode}.time")).read().strip().split("wall ")[-1]
        print(f"{mode:<12}{counts['passed']:>8}{counts['failed']:>8}{counts['skipped']:>9}"
              f"{kernix_compiles(results, mode):>17}  {wall}")
    if len(runs) < 2:
        print("brainevent suite: 0 passed, 0 failed (one run only: nothing to compare)")
        return 0
    be, bk = runs["brainevent"], runs["bekc"]
    regressions = sorted(t for t, v in be.items() if v == "passed" and bk.get(t) != "passed")
    gained = sorted(t for t, v in bk.items() if v == "passed" and be.get(t) != "passed")
    for t in regressions:
        print(f"REGRESSION {t}: {bk.get(t, 'not run')} with bekc")
    for t in gained[:50]:
        print(f"bekc only  {t}")
    compiles = kernix_compiles(results, "bekc")
    failed = len(regressions) + (1 if compiles else 0)
    passed = sum(1 for t, v in be.items() if v == "passed" and bk.get(t) == "passed")
    print(f"brainevent suite: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
