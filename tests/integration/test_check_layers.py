"""scripts/check_layers.py: no folder of lib/ or cli/ includes a header of a
folder listed below it in docs/ARCHITECTURE.md's folder table; and
scripts/check_python_layers.py: no module of python/bekc imports a module of a
layer listed below its own in the table of the package's layers, and no
modules import each other in a cycle.

The real tree passes; made-up trees show each rule failing, with the file and
line named and exit status 1.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_layers.py"
PYTHON_SCRIPT = ROOT / "scripts" / "check_python_layers.py"

TABLE = """# Architecture

| folder | what it holds |
|---|---|
| `lib/util/` | helpers |
| `lib/plan/` | plans |
| `lib/run/` | processes |
| `cli/` | the front end |
| `templates/` | not code |

Text after the table.
"""


def check(root: Path, script: Path = SCRIPT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), "--root", str(root)],
                          capture_output=True, text=True, timeout=60)


def make_tree(root: Path, files: dict, table: str = TABLE) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "ARCHITECTURE.md").write_text(table)
    for folder in ("lib/util", "lib/plan", "lib/run", "cli", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_repository_keeps_its_layers():
    r = check(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ""


def test_includes_of_the_same_or_lower_layers_pass(tmp_path):
    root = make_tree(tmp_path, {
        "lib/run/a.cpp": '#include "run/a.hpp"\n#include "plan/p.hpp"\n#include "util/u.hpp"\n'
                         '#include <vector>\n#include "xxhash.h"\n',
        "lib/plan/p.hpp": '#include "util/u.hpp"\n',
        "cli/main.cpp": '#include "commands.hpp"\n#include "run/a.hpp"\n',
    })
    r = check(root)
    assert r.returncode == 0, r.stdout
    assert r.stdout == ""


def test_an_include_of_a_higher_layer_fails_naming_file_and_line(tmp_path):
    root = make_tree(tmp_path, {
        "lib/plan/p.hpp": '#pragma once\n\n#include "util/u.hpp"\n#  include "run/a.hpp"\n',
        "lib/util/u.cpp": '#include "cli/commands.hpp"\n',
    })
    r = check(root)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "lib/plan/p.hpp:4: plan/ includes run/a.hpp, but run/ is above plan/ in "
        "docs/ARCHITECTURE.md's folder table: move what plan/ needs down, or pass it in as "
        "a plain value",
        "lib/util/u.cpp:1: util/ includes cli/commands.hpp, but cli/ is above util/ in "
        "docs/ARCHITECTURE.md's folder table: move what util/ needs down, or pass it in as "
        "a plain value",
    ]


def test_the_order_is_the_tables(tmp_path):
    # The same include passes once the table lists run/ below plan/.
    files = {"lib/plan/p.hpp": '#include "run/a.hpp"\n'}
    swapped = TABLE.replace("| `lib/plan/` | plans |\n| `lib/run/` | processes |\n",
                            "| `lib/run/` | processes |\n| `lib/plan/` | plans |\n")
    assert check(make_tree(tmp_path / "a", files)).returncode == 1
    assert check(make_tree(tmp_path / "b", files, swapped)).returncode == 0


def test_a_folder_missing_from_the_table_fails(tmp_path):
    root = make_tree(tmp_path, {"lib/extra/x.cpp": '#include "util/u.hpp"\n'})
    r = check(root)
    assert r.returncode == 1
    assert r.stdout == ("lib/extra/: not in docs/ARCHITECTURE.md's folder table: add a row for it "
                        "where it belongs, lowest layers first\n")


def test_a_row_whose_folder_is_gone_fails(tmp_path):
    root = make_tree(tmp_path, {})
    (root / "lib" / "run").rmdir()
    r = check(root)
    assert r.returncode == 1
    assert r.stdout == ("docs/ARCHITECTURE.md: the folder table names lib/run/, which does not "
                        "exist: remove its row\n")


def test_a_document_without_the_table_fails(tmp_path):
    root = make_tree(tmp_path, {}, table="# Architecture\n\nNo table.\n")
    r = check(root)
    assert r.returncode == 1
    assert "no folder table" in r.stdout


# --------------------------------------------------------------------------- python/bekc
PYTHON_TABLE = """# Architecture

| python layer | modules |
|---|---|
| values | `_errors`, `_options` |
| binary | `_run`, `_lookup` |
| package | `__init__` |

Text after the table.
"""


def make_package(root: Path, files: dict, table: str = PYTHON_TABLE) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "ARCHITECTURE.md").write_text(table)
    package = root / "python" / "bekc"
    package.mkdir(parents=True)
    base = {"__init__.py": "from ._run import run\nfrom . import _lookup\n",
            "_errors.py": "import os\n", "_options.py": "from ._errors import E\n",
            "_run.py": "from . import _lookup\nfrom ._errors import E\n",
            "_lookup.py": "from bekc._options import O\n"}
    base.update(files)
    for name, text in base.items():
        (package / name).write_text(text)
    return root


def test_the_package_keeps_its_layers():
    r = check(ROOT, PYTHON_SCRIPT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ""


def test_imports_of_the_same_or_lower_layers_pass(tmp_path):
    r = check(make_package(tmp_path, {}), PYTHON_SCRIPT)
    assert r.returncode == 0, r.stdout
    assert r.stdout == ""


def test_an_import_of_a_higher_layer_fails_even_inside_a_function(tmp_path):
    root = make_package(tmp_path, {
        "_options.py": "from ._errors import E\n\n\ndef f():\n    from ._run import run\n"})
    r = check(root, PYTHON_SCRIPT)
    assert r.returncode == 1
    assert r.stdout.startswith("python/bekc/_options.py:5: _options (values) imports _run, "
                               "which is in the layer binary above it"), r.stdout


def test_the_version_from_the_package_itself_points_up(tmp_path):
    root = make_package(tmp_path, {"_errors.py": "def v():\n    from . import __version__\n"})
    r = check(root, PYTHON_SCRIPT)
    assert r.returncode == 1
    assert "python/bekc/_errors.py:2: _errors (values) imports __init__" in r.stdout


def test_a_cycle_within_a_layer_fails(tmp_path):
    root = make_package(tmp_path, {"_lookup.py": "def f():\n    from ._run import run\n"})
    r = check(root, PYTHON_SCRIPT)
    assert r.returncode == 1
    assert "_lookup, _run import each other in a cycle" in r.stdout, r.stdout


def test_a_module_without_a_row_and_a_row_without_a_module_fail(tmp_path):
    root = make_package(tmp_path, {"_new.py": ""},
                        table=PYTHON_TABLE.replace("`_run`, `_lookup`", "`_run`, `_lookup`, `_gone`"))
    r = check(root, PYTHON_SCRIPT)
    assert r.returncode == 1
    assert "names _gone, which has no python/bekc/_gone.py" in r.stdout
    assert "python/bekc/_new.py: not in docs/ARCHITECTURE.md's table" in r.stdout
