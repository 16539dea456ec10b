"""What the package-prebuild tests share: a site-packages directory holding a
package named ``brainevent`` (a fake one, or files of a real release) with the
test venv's jaxlib beside it; ``bekc build <package>`` run there with no
virtualenv active; and the package's loads made through bekc's Python loaders,
each one's result recorded (the manifest, so the cache key, and whether it was
a cache hit).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 900


def jaxlib_package() -> Optional[Path]:
    spec = importlib.util.find_spec("jaxlib")
    return Path(spec.origin).parent if spec and spec.origin else None


def make_site(root: Path, files: Dict[str, object]) -> Path:
    """ROOT/site with brainevent/<rel> for each file (text, or a Path to copy)
    and a link to the test venv's jaxlib beside it, as pip would install them."""
    site = root / "site"
    package = site / "brainevent"
    for rel, content in files.items():
        dst = package / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, dst)
        else:
            dst.write_text(str(content))
    # A regular package (not a namespace portion), so that Python finds this
    # one before the test venv's brainevent; nothing imports it.
    init = package / "__init__.py"
    if not init.exists():
        init.write_text("")
    jaxlib = jaxlib_package()
    if jaxlib is not None:
        (site / "jaxlib").symlink_to(jaxlib, target_is_directory=True)
    return site


def with_brainevent_headers(files: Dict[str, object]) -> Dict[str, object]:
    """`files` of a package, and the brainevent headers bekc ships in its
    include/brainevent/, as make_site takes them."""
    include = REPO / "runtime" / "include" / "brainevent"
    out: Dict[str, object] = {f"include/brainevent/{h.name}": h for h in include.glob("*.h")}
    out.update(files)
    return out


def without_venv(root: Path, **extra: str) -> dict:
    """No virtualenv active, no python3 with jaxlib on PATH, no $BEKC_XLA_INCLUDE:
    the jaxlib beside the package is the only one to find."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "BEKC_XLA_INCLUDE", "BEKC_CACHE_DIR", "PYTHONPATH")}
    env.update(PATH="/usr/bin:/bin", HOME=str(root / "home"), **extra)
    return env


def prebuild(bekc, site: Path, *args, dry_run: bool = False) -> subprocess.CompletedProcess:
    argv = [str(bekc.binary), "build", str(site / "brainevent"), "--cache-dir",
            str(bekc.cache_dir), *[str(a) for a in args]]
    argv.append("--dry-run" if dry_run else "--json")
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=without_venv(site.parent))


# Runs in a child Python with the site first on sys.path: records what each
# bekc build of the loaders returned; with "stop", stops each load there (a
# CUDA library is not opened on a machine without a GPU).
_RECORDER = r"""
import json, sys
import bekc, bekc._compat as compat
cache, stop, calls = sys.argv[1], sys.argv[2] == "stop", json.loads(sys.argv[3])
records, real = [], compat.run_bekc

class Stop(Exception):
    pass

def recording(argv, **kw):
    out = real(argv, **kw)
    if isinstance(out, dict) and "manifest" in out:
        name = next(a.split("=", 1)[1] for a in argv if str(a).startswith("--name="))
        records.append({"name": name, "manifest": out["manifest"], "cache_hit": out["cache_hit"]})
        if stop:
            raise Stop()
    return out

compat.run_bekc = recording
bekc.set_cache_dir(cache)
for call in calls:
    # The package is brainevent: its loads are brainevent's own builds, as
    # bekc.use_for_brainevent() makes them (with brainevent's headers).
    try:
        with compat.building_for_brainevent():
            if call[0] == "module":  # import a module of the package, call a function
                import importlib
                getattr(importlib.import_module(call[1]), call[2])()
            else:  # bekc.load_cuda_file(path, name=name)
                kw = {"name": call[2]} if call[2] else {}
                getattr(bekc, call[0])(call[1], **kw)
    except Stop:
        pass
print(json.dumps(records))
"""


def loads_through_bekc(bekc, site: Path, calls: List[list], stop: bool = False,
                       **env: str) -> List[dict]:
    """The records of the loads CALLS makes through bekc's loaders, brainevent
    being the package in SITE."""
    environ = without_venv(site.parent, **env)
    environ.update(PYTHONPATH=os.pathsep.join([str(site), str(REPO / "python")]),
                   BEKC=str(bekc.binary), JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _RECORDER, str(bekc.cache_dir),
                           "stop" if stop else "load", json.dumps(calls)],
                          capture_output=True, text=True, timeout=TIMEOUT_S, env=environ)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def modules_by_name(prebuild_json: dict) -> Dict[str, dict]:
    return {m["name"]: m for m in prebuild_json["modules"]}
