"""brainevent's own tests of ``defjvp`` and ``general_batching_rule``, run on bekc's.

Each release's ``_op/util_test.py`` imports the two names from
``brainevent._op.util``. A pytest plugin written here points them at
``bekc.defjvp`` and ``bekc.general_batching_rule`` before the file is
collected, checks that the collected tests hold bekc's, and the tests that
exercise them run in a fresh interpreter with that release first on
``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tests"))
import brainevent_releases  # noqa: E402

PLUGIN = """
import sys
sys.path.insert(0, {python!r})
import bekc
import brainevent._op.util as util
util.defjvp = bekc.defjvp
util.general_batching_rule = bekc.general_batching_rule


def pytest_collection_modifyitems(items):
    for item in items:
        assert item.module.defjvp is bekc.defjvp
        assert item.module.general_batching_rule is bekc.general_batching_rule
    print("bekc rules in", len(items), "tests")
"""

# brainevent's tests of the two functions, by name.
SELECTED = "defjvp or batching_rule or standard_jvp"


@pytest.mark.parametrize("version", ["0.2.1", "0.3.0"])
def test_brainevents_rule_tests_pass_on_bekcs_functions(version, tmp_path):
    package = brainevent_releases.RELEASES[version]
    if package is None:
        pytest.skip(f"brainevent {version} is not installed (scripts/setup.sh installs it)")
    (tmp_path / "bekc_rules_plugin.py").write_text(
        PLUGIN.format(python=os.path.join(REPO, "python")))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(package.parent)]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "bekc_rules_plugin",
         "-p", "no:cacheprovider", str(package / "_op" / "util_test.py"), "-k", SELECTED],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "bekc rules in" in run.stdout
    assert "7 passed" in run.stdout.splitlines()[-1], run.stdout[-2000:]
