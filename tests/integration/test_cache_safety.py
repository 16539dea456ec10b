"""The cache touches only what it owns, never through a link, checks all it
reads, reports real errors, and keeps to a size (docs/cache.md).

* A cache holds a marker, ``bekc-cache.json``; maintenance refuses a directory
  without one and changes nothing in it.
* In a real cache, files that are not bekc's survive verify, prune and clear.
* No symbolic link inside the cache is followed: not tmp/, not a lock file,
  not last-use, not a manifest.
* Integrity covers every file a build reads: manifests, the runtime headers,
  the runtime object.
* A cache bekc may not write fails with the operating system's reason (exit 4),
  and a hit on it still works.
* ``BEKC_CACHE_MAX_SIZE`` and ``bekc cache max-size`` bound the whole
  directory; ``ls``/``stats`` count all of it; prune spares an entry whose key
  lock is held.

C++ kernels only: nothing here is CUDA-specific.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from other_users import require_setpriv, shared_base  # tests/integration/other_users.py

FAST = "-O0"
CACHE_ERROR = 4  # exit status: the cache could not be read or written
MARKER = "bekc-cache.json"
OLD = 3 * 3600  # seconds: older than the hour after which tmp/ leftovers go
NOBODY = 65534
MAINTENANCE = {
    "ls": ["ls"],
    "stats": ["stats"],
    "clear": ["clear"],
    "prune": ["prune", "--max-size", "0"],
    "verify": ["verify"],
}


# --------------------------------------------------------------------------- helpers
def output(proc) -> str:
    return proc.stdout + proc.stderr


def describe(proc) -> str:
    return (f"$ {' '.join(map(str, proc.args))}\n-> exit {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}")


def env_with(**overrides) -> dict:
    """The test's environment without variables that steer bekc's cache."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("BEKC_CACHE_DIR", "BEKC_CACHE_MAX_SIZE")}
    env.update(overrides)
    return env


def age(path: Path, seconds: float = OLD) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t), follow_symlinks=False)


def write(path: Path, data: bytes, old: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if old:
        age(path)
    return path


def snapshot(root: Path) -> dict:
    """Every path under root: directories, link targets, file bytes."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                state[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                state[rel] = ("dir",)
            else:
                state[rel] = ("file", p.read_bytes())
    return state


def fingerprint(path: Path):
    """Bytes and mtime of a file outside the cache that bekc must not touch."""
    return path.read_bytes(), path.stat().st_mtime_ns


def tree_bytes(root: Path) -> int:
    """Sum of the sizes of the regular files under root, links not followed."""
    total = 0
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            st = os.lstat(os.path.join(dirpath, name))
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def module(bekc, kernels, name: str, value: str = "1.0f", **build_kw):
    """Writes <workdir>/<name>.cpp (one function, f_<name>) and builds it."""
    src = kernels.cpp(bekc.workdir / f"{name}.cpp", fn=f"f_{name}", value=value)
    build_kw.setdefault("env", env_with())
    return src, bekc.build(src, FAST, **build_kw)


def lock_of(cache_dir: Path, key: str) -> Path:
    return cache_dir / "locks" / key[:2] / f"{key[2:]}.lock"


def the_one(paths) -> Path:
    paths = list(paths)
    assert len(paths) == 1, paths
    return paths[0]


def runtime_object(cache_dir: Path) -> Path:
    return the_one(cache_dir.glob("runtime/*/obj/*/bekc_rt.o"))


def truncate_half(path: Path) -> int:
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    return size


REMOVED = re.compile(r"removed\s+[1-9]\d*\s+entr")

# A size as bekc prints it: "48.8 kB", "300K", "2 MiB", "123456 bytes", "123456".
SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(b|bytes|k|kb|m|mb|g|gb|ki|kib|mi|mib|gi|gib)?"
                  r"(?![\w.])", re.IGNORECASE)
UNIT = {"": 1, "b": 1, "bytes": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9,
        "gb": 1e9, "ki": 1024, "kib": 1024, "mi": 1024**2, "mib": 1024**2, "gi": 1024**3,
        "gib": 1024**3}


def sizes_in(text: str, bare: bool = True):
    """(bytes, rounding tolerance) for every size written in text; numbers
    without a unit count as bytes only when ``bare``."""
    found = []
    for number, unit in SIZE.findall(text):
        if not unit and not bare:
            continue
        mult = UNIT[(unit or "").lower()]
        decimals = len(number.split(".")[1]) if "." in number else 0
        found.append((float(number) * mult, 0.5 * 10**-decimals * mult))
    return found


def reported_total(proc, command: str) -> float:
    """The byte total `cache ls` (its "N entries, SIZE" line) or `cache stats`
    prints, as an upper bound within rounding."""
    if command == "ls":
        lines = [l for l in proc.stdout.splitlines() if re.search(r"\d+ entr", l)]
    else:
        lines = [l for l in proc.stdout.splitlines()
                 if not re.search(r"limit|max", l, re.IGNORECASE)]
    sizes = [b + tol for line in lines
             for b, tol in sizes_in(line, bare=bool(re.search(r"byte|size", line, re.I)))]
    assert sizes, f"no byte total in `cache {command}`:\n{proc.stdout}"
    return max(sizes)


# --------------------------------------------------------------------------- 1. marker
def test_a_new_cache_holds_the_marker(bekc, kernels):
    module(bekc, kernels, "k")
    marker = bekc.cache_dir / MARKER
    assert marker.is_file() and not marker.is_symlink(), sorted(os.listdir(bekc.cache_dir))
    data = json.loads(marker.read_text())
    assert isinstance(data, dict) and data.get("bekc_cache") == 1, data


def unmarked_directory(root: Path) -> Path:
    """A directory that looks like a cache but has no marker; everything in it
    is someone's data, some of it old enough for tmp/ cleanup."""
    key = "ab" + "c" * 62
    write(root / "notes.txt", b"my notes\n")
    write(root / "tmp" / "notes.txt", b"draft\n", old=True)
    write(root / "tmp" / "trash.host.1.abcdef" / "data", b"kept\n", old=True)
    age(root / "tmp" / "trash.host.1.abcdef")
    write(root / "entries" / "ab" / key[2:] / "manifest.json", b'{"key": "%s"}\n' % key.encode())
    write(root / "entries" / "ab" / key[2:] / "libx.so", b"\x7fELF not really\n")
    write(root / "entries" / "ab" / "README", b"hands off\n")
    write(root / "direct" / "ab" / (key[2:] + ".json"), b"{}\n")
    write(root / "locks" / "ab" / (key[2:] + ".lock"), b"")
    age(root / "tmp")
    return root


@pytest.mark.parametrize("command", sorted(MAINTENANCE))
def test_maintenance_refuses_a_directory_without_the_marker(bekc, tmp_path, command):
    root = unmarked_directory(tmp_path / "not-a-cache")
    before = snapshot(root)
    proc = bekc.cache(*MAINTENANCE[command], cache_dir=root)
    assert proc.returncode == CACHE_ERROR, describe(proc)
    assert str(root) in proc.stderr, describe(proc)
    assert "not a bekc cache" in proc.stderr.lower(), describe(proc)
    assert snapshot(root) == before, f"`cache {command}` changed a directory it does not own"


@pytest.mark.parametrize("command", ["clear", "prune", "verify"])
def test_maintenance_of_a_missing_cache_is_a_no_op(bekc, tmp_path, command):
    root = tmp_path / "absent" / "cache"
    proc = bekc.cache(*MAINTENANCE[command], cache_dir=root)
    assert proc.returncode == 0, describe(proc)
    assert not (tmp_path / "absent").exists(), f"`cache {command}` created {root}"


def test_a_maintenance_failure_keeps_the_causes_advice(bekc, kernels):
    """A maintenance command that fails says what the failure below it said,
    its notes included: a held statistics lock names the holder and says
    what to do, and `cache stats --zero` exits 4 with that advice."""
    module(bekc, kernels, "k")
    lock_path = bekc.cache_dir / "locks" / "stats.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        proc = bekc.cache("stats", "--zero")
    assert proc.returncode == CACHE_ERROR, describe(proc)
    assert "waiting for the cache lock" in proc.stderr, describe(proc)
    assert "note: another bekc process" in proc.stderr, describe(proc)


def a_project_directory(root: Path) -> Path:
    """Someone's directory, named as the cache by mistake: files with the
    names of bekc's memos among their own."""
    write(root / "tools.json", b'{"mine": 1}\n')
    write(root / "stats.json", b'{"mine": 2}\n')
    write(root / "src" / "main.cpp", b"int main() {}\n")
    return root


def test_a_build_refuses_to_make_a_cache_of_a_directory_in_use(bekc, kernels, tmp_path):
    """`bekc build` adopted any existing directory as its cache: it rewrote
    tools.json and stats.json and added CACHEDIR.TAG, after which backup tools
    skip the whole directory."""
    root = a_project_directory(tmp_path / "project")
    before = snapshot(root)
    src = kernels.cpp(bekc.workdir / "k.cpp")
    b = bekc.build(src, FAST, cache_dir=root, ok=False)
    assert b.proc.returncode == CACHE_ERROR, b.describe()
    assert (f"bekc: error: {root} is not a bekc cache and is not empty (it holds "
            in b.proc.stderr), b.describe()
    assert ("bekc creates its cache only in a missing or empty directory. Choose another "
            "directory with --cache-dir, $BEKC_CACHE_DIR or bekc.set_cache_dir(), or empty "
            "this one" in b.proc.stderr), b.describe()
    assert snapshot(root) == before, "the build wrote into a directory that is not a cache"


def test_a_build_makes_a_cache_of_an_empty_directory_or_one_holding_its_config(bekc, kernels,
                                                                             tmp_path):
    """What may be there before the first build: nothing, the cache's own
    bekc.conf, the Python loader's inline sources."""
    empty = tmp_path / "empty"
    empty.mkdir()
    configured = tmp_path / "configured"
    write(configured / "bekc.conf", b"max_size = 1G\n")
    write(configured / "src" / ("a" * 64) / "m.cpp", b"// inline\n")
    src = kernels.cpp(bekc.workdir / "k.cpp")
    for root in (empty, configured):
        bekc.build(src, FAST, cache_dir=root)
        assert (root / MARKER).is_file(), sorted(os.listdir(root))
        assert bekc.build(src, FAST, cache_dir=root).hit
    assert (configured / "bekc.conf").read_bytes() == b"max_size = 1G\n"


# --------------------------------------------------------------------------- 2. foreign files
FOREIGN = {
    "notes.txt": b"my notes\n",
    "tmp/notes.txt": b"draft\n",
    "entries/ab/README": b"hands off\n",
    "direct/zz.json": b'{"mine": true}\n',
    "locks/readme": b"not a lock\n",
}


@pytest.mark.parametrize("command", ["verify", "prune", "clear"])
def test_files_bekc_did_not_write_survive_maintenance(bekc, kernels, command):
    _, built = module(bekc, kernels, "k")
    root = bekc.cache_dir
    for rel, data in FOREIGN.items():
        write(root / rel, data, old=rel.startswith("tmp/"))
    proc = bekc.cache(*MAINTENANCE[command])
    if command != "verify":
        assert proc.returncode == 0, describe(proc)
    for rel, data in FOREIGN.items():
        assert (root / rel).is_file(), f"`cache {command}` removed {rel}\n{describe(proc)}"
        assert (root / rel).read_bytes() == data, rel
    if command == "verify":
        assert built.manifest_path.is_file(), "verify removed a good entry"
    else:
        assert bekc.entries() == [], f"`cache {command}` left the entry\n{describe(proc)}"


# --------------------------------------------------------------------------- 3. symlinks
def test_maintenance_does_not_follow_a_symlinked_tmp(bekc, kernels, tmp_path):
    _, built = module(bekc, kernels, "k")
    outside = tmp_path / "outside"
    write(outside / "old.o", b"someone's object\n", old=True)
    write(outside / "trash.host.1.abcdef" / "data", b"someone's trash\n", old=True)
    write(outside / f"{built.key}.host.1.abcdef" / "libk.so", b"staged?\n", old=True)
    for d in ("trash.host.1.abcdef", f"{built.key}.host.1.abcdef"):
        age(outside / d)
    tmp = bekc.cache_dir / "tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.symlink_to(outside, target_is_directory=True)
    before = snapshot(outside)
    for command in ("verify", "prune", "clear"):
        proc = bekc.cache(*MAINTENANCE[command])
        assert snapshot(outside) == before, (
            f"`cache {command}` worked through the tmp symlink\n{describe(proc)}")


def test_a_build_does_not_write_through_a_symlinked_lock_file(bekc, kernels, tmp_path):
    src, built = module(bekc, kernels, "k")
    root = bekc.cache_dir
    locks = set(root.glob("locks/*/*.lock")) | {lock_of(root, built.key)}
    for record in root.glob("direct/*/*.rec"):  # the direct key's lock, if it takes one
        locks.add(lock_of(root, record.parent.name + record.stem))
    planted = {}
    for i, lock in enumerate(sorted(locks)):
        victim = write(tmp_path / "outside" / f"victim{i}", b"precious %d\n" % i, old=True)
        lock.parent.mkdir(parents=True, exist_ok=True)
        if lock.is_symlink() or lock.exists():
            lock.unlink()
        lock.symlink_to(victim)
        planted[lock] = (victim, fingerprint(victim))
    again = bekc.build(src, FAST, "--force", ok=None)
    assert again.rc in (0, CACHE_ERROR), again.describe()
    for lock, (victim, before) in planted.items():
        assert fingerprint(victim) == before, f"the build wrote through {lock}"
    if again.rc == CACHE_ERROR:
        assert any(str(lock) in again.stderr for lock in planted), again.describe()
        assert "symbolic link" in again.stderr, again.describe()


def test_a_hit_does_not_touch_a_symlinked_last_use(bekc, kernels, tmp_path):
    src, built = module(bekc, kernels, "k")
    last_use = built.manifest_path.parent / "last-use"
    victim = write(tmp_path / "outside" / "victim", b"old\n", old=True)
    last_use.unlink()
    last_use.symlink_to(victim)
    before = fingerprint(victim)
    bekc.build(src, FAST)  # asserts exit 0
    assert fingerprint(victim) == before, "a hit touched the file last-use linked to"


def test_a_symlinked_manifest_is_not_served_and_verify_reports_it(bekc, kernels, tmp_path):
    src, built = module(bekc, kernels, "k")
    key = built.key  # read now: verify removes the entry
    manifest = built.manifest_path
    entry = manifest.parent
    copy = write(tmp_path / "outside" / "manifest.json", manifest.read_bytes(), old=True)
    before = fingerprint(copy)

    def plant():
        if manifest.is_symlink() or manifest.exists():
            manifest.unlink()
        manifest.symlink_to(copy)

    plant()
    again = bekc.build(src, FAST, ok=None)
    assert again.rc in (0, CACHE_ERROR), again.describe()
    if again.rc == 0:
        assert again.hit is False, "served a hit through a symlinked manifest"
        assert not again.manifest_path.is_symlink(), again.describe()
    assert fingerprint(copy) == before

    plant()
    proc = bekc.cache("verify")
    assert proc.returncode == CACHE_ERROR, describe(proc)
    assert key[:16] in output(proc) or str(entry) in output(proc), describe(proc)
    assert fingerprint(copy) == before, "verify touched the manifest's link target"


# --------------------------------------------------------------------------- 4. integrity
def test_a_tampered_manifest_is_rebuilt_and_verify_reports_it(bekc, kernels):
    src, built = module(bekc, kernels, "k")
    key = built.key  # read now: verify removes the entry
    manifest = built.manifest_path
    original = built.manifest
    symbol = original["targets"][0]["symbol"]
    forged = symbol[:-1] + ("Y" if symbol.endswith("X") else "X")

    def tamper():
        st = manifest.stat()
        text = manifest.read_text()
        assert text.count(f'"{symbol}"') == 1, text
        manifest.write_text(text.replace(f'"{symbol}"', f'"{forged}"'))
        os.utime(manifest, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert json.loads(manifest.read_text())["targets"][0]["symbol"] == forged

    tamper()
    again = bekc.build(src, FAST)
    assert again.hit is False, "a tampered manifest was served as a hit"
    assert "corrupt" in again.stderr.lower(), again.describe()
    assert again.manifest == original

    tamper()
    proc = bekc.cache("verify")
    assert proc.returncode == CACHE_ERROR, describe(proc)
    assert key[:16] in output(proc), describe(proc)


def test_verify_reports_a_truncated_runtime_object(bekc, kernels):
    module(bekc, kernels, "a")
    obj = runtime_object(bekc.cache_dir)
    size = truncate_half(obj)
    proc = bekc.cache("verify")
    assert proc.returncode == CACHE_ERROR, describe(proc)
    assert "bekc_rt.o" in output(proc), describe(proc)
    module(bekc, kernels, "b")  # a miss links the object: it must be whole again
    assert runtime_object(bekc.cache_dir).stat().st_size == size


def test_a_miss_repairs_a_truncated_runtime_object(bekc, kernels):
    module(bekc, kernels, "a")
    obj = runtime_object(bekc.cache_dir)
    size = truncate_half(obj)
    _, b = module(bekc, kernels, "b")
    assert b.hit is False
    assert runtime_object(bekc.cache_dir).stat().st_size == size, "bekc_rt.o not repaired"
    proc = bekc.cache("verify")
    assert proc.returncode == 0, describe(proc)


def test_a_truncated_runtime_header_is_repaired_and_verify_reports_it(bekc, kernels):
    module(bekc, kernels, "a")
    header = the_one(bekc.cache_dir.glob("runtime/*/include/brainevent/common.h"))
    original = header.read_bytes()
    truncate_half(header)
    _, b = module(bekc, kernels, "b")  # includes the header
    assert b.hit is False
    assert header.read_bytes() == original, "the runtime header was not repaired"

    truncate_half(header)
    proc = bekc.cache("verify")
    assert proc.returncode == CACHE_ERROR, describe(proc)
    assert "common.h" in output(proc), describe(proc)


# --------------------------------------------------------------------------- 5. read-only
@pytest.fixture
def shared_tree(bekc_path):
    """A tree the unprivileged user can read: <base>/{cache,src,home}."""
    if os.geteuid() == 0:
        require_setpriv(bekc_path, f"uid {NOBODY}")
    base = shared_base("bekc-ro-")
    (base / "src").mkdir()
    os.chmod(base / "src", 0o755)
    (base / "home").mkdir()
    os.chmod(base / "home", 0o1777)
    yield base
    for dirpath, _, _ in os.walk(base):
        os.chmod(dirpath, 0o755)
    shutil.rmtree(base)


def make_read_only(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, 0o444)
        os.chmod(dirpath, 0o555)


def run_unprivileged(bekc, tree: Path, *args) -> subprocess.CompletedProcess:
    """bekc as a user that cannot write the cache: uid 65534 when we are root
    (chmod does not stop root), else ourselves on a chmod-ed tree."""
    argv = [str(bekc.binary), *map(str, args)]
    if os.geteuid() == 0:
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    env = env_with(HOME=str(tree / "home"), TMPDIR=str(tree / "home"))
    env.pop("XDG_CACHE_HOME", None)
    return subprocess.run(argv, cwd=tree / "home", env=env, capture_output=True, text=True,
                          timeout=300)


def read_only_cache(bekc, kernels, tree: Path, cache: Path = None):
    """A cache (default <tree>/cache) with one entry (source src/k.cpp), then
    made read-only."""
    cache = cache or tree / "cache"
    src = kernels.cpp(tree / "src" / "k.cpp")
    os.chmod(src, 0o644)
    built = bekc.build(src, FAST, cache_dir=cache)
    make_read_only(cache)
    return src, built


def os_refusal(stderr: str) -> bool:
    return "Permission denied" in stderr or "Read-only file system" in stderr


def test_clear_and_prune_of_a_read_only_cache_fail(bekc, kernels, shared_tree):
    _, built = read_only_cache(bekc, kernels, shared_tree)
    cache = shared_tree / "cache"
    for command in ("clear", "prune"):
        proc = run_unprivileged(bekc, shared_tree, "cache", *MAINTENANCE[command],
                                "--cache-dir", cache)
        assert proc.returncode == CACHE_ERROR, describe(proc)
        assert os_refusal(proc.stderr), describe(proc)
        assert not REMOVED.search(proc.stdout), f"claims a removal it could not do\n{describe(proc)}"
        assert built.manifest_path.is_file() and built.library.is_file()


def test_a_miss_on_a_read_only_cache_builds_into_the_default_cache(bekc, kernels, shared_tree):
    """The read-only cache becomes a read-only layer over the user's default
    cache (docs/cache.md, "Layered caches")."""
    read_only_cache(bekc, kernels, shared_tree)
    other = kernels.cpp(shared_tree / "src" / "other.cpp", value="2.0f")
    os.chmod(other, 0o644)
    proc = run_unprivileged(bekc, shared_tree, "build", other, FAST,
                            "--cache-dir", shared_tree / "cache", "--json")
    assert proc.returncode == 0, describe(proc)
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    default = shared_tree / "home" / ".cache" / "bekc"
    assert info["cache_hit"] is False and Path(info["manifest"]).is_relative_to(default)


def test_a_miss_on_a_read_only_default_cache_names_the_real_error_and_the_way_out(
        bekc, kernels, shared_tree):
    """No other cache to build into: the error, and how to keep the cache as
    a read-only one over a cache of the user's own."""
    cache = shared_tree / "home" / ".cache" / "bekc"
    read_only_cache(bekc, kernels, shared_tree, cache)
    other = kernels.cpp(shared_tree / "src" / "other.cpp", value="2.0f")
    os.chmod(other, 0o644)
    proc = run_unprivileged(bekc, shared_tree, "build", other, FAST, "--json")
    assert proc.returncode == CACHE_ERROR, describe(proc)
    assert "Permission denied" in proc.stderr, describe(proc)
    assert "No such file or directory" not in proc.stderr, describe(proc)
    assert proc.stderr.endswith(
        f"note: the cache is {cache} (read-only here: it serves hits, but a miss needs a cache "
        f"you can write); choose another with --cache-dir DIR, $BEKC_CACHE_DIR=DIR, or "
        f"bekc.set_cache_dir(DIR) from Python, and keep this one as a read-only cache: "
        f"read_only_caches = {cache} in bekc.conf, or $BEKC_READ_ONLY_CACHES={cache}\n"), \
        describe(proc)


def test_a_hit_on_a_read_only_cache_succeeds(bekc, kernels, shared_tree):
    src, built = read_only_cache(bekc, kernels, shared_tree)
    proc = run_unprivileged(bekc, shared_tree, "build", src, FAST,
                            "--cache-dir", shared_tree / "cache", "--json")
    assert proc.returncode == 0, describe(proc)
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["cache_hit"] is True
    assert Path(info["manifest"]) == built.manifest_path


# --------------------------------------------------------------------------- 6. size limit
def two_modules_unlimited(bekc, kernels):
    """Builds m0 and m1 with no limit; returns (builds, limit in K that holds
    about two modules, one module's share of the directory)."""
    _, m0 = module(bekc, kernels, "m0")
    one = tree_bytes(bekc.cache_dir)
    _, m1 = module(bekc, kernels, "m1")
    two = tree_bytes(bekc.cache_dir)
    per = two - one  # entry, direct record, locks
    assert per > 0
    return [m0, m1], math.ceil((two + per // 2) / 1000), per


# The size limit spares entries used in the last second (docs/cache.md, "The
# size limit"): a build that has just printed an entry's path must find it.
RECENT_USE_S = 1.05


def test_the_size_limit_from_the_environment_bounds_the_whole_directory(bekc, kernels):
    (m0, _), limit_k, per = two_modules_unlimited(bekc, kernels)
    env = env_with(BEKC_CACHE_MAX_SIZE=f"{limit_k}K")
    for i in range(2, 6):
        time.sleep(RECENT_USE_S)
        src, _ = module(bekc, kernels, f"m{i}", env=env)
        total = tree_bytes(bekc.cache_dir)
        assert total <= limit_k * 1000 + per, (
            f"after m{i}: {total} bytes under the cache, limit {limit_k}K, one module {per}")
    assert bekc.build(src, FAST, env=env).hit is True, "the newest module was evicted"
    assert bekc.build(bekc.workdir / "m0.cpp", FAST, env=env).hit is False, \
        "the oldest module survived"


def test_a_stored_size_limit_is_honoured_and_the_environment_overrides_it(bekc, kernels):
    (m0, _), limit_k, per = two_modules_unlimited(bekc, kernels)
    limit = limit_k * 1000
    env = env_with()
    proc = bekc.cache("max-size", f"{limit_k}K", env=env)
    assert proc.returncode == 0, describe(proc)
    shown = bekc.cache("max-size", env=env)
    assert shown.returncode == 0, describe(shown)
    assert any(abs(b - limit) <= tol for b, tol in sizes_in(shown.stdout)), describe(shown)

    for i in range(2, 5):
        time.sleep(RECENT_USE_S)
        module(bekc, kernels, f"m{i}", env=env)
        total = tree_bytes(bekc.cache_dir)
        assert total <= limit + per, f"after m{i}: {total} bytes, stored limit {limit_k}K"
    assert not m0.manifest_path.parent.exists(), "the oldest module survived the stored limit"

    kept = bekc.entries()
    unlimited = env_with(BEKC_CACHE_MAX_SIZE="0")
    for i in range(5, 7):
        module(bekc, kernels, f"m{i}", env=unlimited)
    assert all(e.is_dir() for e in kept), "BEKC_CACHE_MAX_SIZE=0 did not lift the stored limit"
    assert tree_bytes(bekc.cache_dir) > limit + per


@pytest.mark.parametrize("command", ["ls", "stats"])
def test_cache_totals_count_everything_under_the_root(bekc, kernels, command):
    module(bekc, kernels, "k")
    proc = bekc.cache(command)
    assert proc.returncode == 0, describe(proc)
    runtime = tree_bytes(bekc.cache_dir / "runtime")
    everything = tree_bytes(bekc.cache_dir)
    assert runtime > 0
    total = reported_total(proc, command)
    assert total >= runtime, f"reported {total} B, runtime/ alone holds {runtime} B\n{proc.stdout}"
    assert total >= 0.9 * everything, f"reported {total} B of {everything} B\n{proc.stdout}"


def test_prune_spares_an_entry_whose_key_lock_is_held(bekc, kernels):
    _, held = module(bekc, kernels, "held")
    time.sleep(0.05)
    _, other = module(bekc, kernels, "other")
    lock = lock_of(bekc.cache_dir, held.key)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = bekc.cache("prune", "--max-size", "0")
        assert proc.returncode == 0, describe(proc)
        assert held.manifest_path.is_file(), "prune removed an entry whose key lock was held"
        assert not other.manifest_path.exists(), "prune removed nothing"
    finally:
        os.close(fd)
    proc = bekc.cache("prune", "--max-size", "0")
    assert proc.returncode == 0, describe(proc)
    assert not held.manifest_path.exists(), "once the lock is free, prune removes the entry"


# --------------------------------------------------------------------------- another user's /tmp/bekc-<uid>
VICTIM = 64123  # a uid no account uses


@pytest.mark.parametrize("fallback", ["TMPDIR", "the cache's tmp/"])
def test_another_users_tmp_directory_does_not_stop_the_build(bekc, kernels, shared_tree, fallback):
    """Another user who creates /tmp/bekc-<uid> first (sticky /tmp: the victim
    cannot remove it) only moves the victim's build directories elsewhere:
    to $TMPDIR, or with no usable $TMPDIR, under the victim's cache."""
    if os.geteuid() != 0:
        pytest.skip("acting as two users needs root")
    squatted = Path(f"/tmp/bekc-{VICTIM}")
    shutil.rmtree(squatted, ignore_errors=True)
    as_user = lambda uid: ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    subprocess.run([*as_user(NOBODY), "mkdir", "-m", "0777", str(squatted)], check=True)
    try:
        home = shared_tree / "victim"
        (home / "tmp").mkdir(parents=True)
        for p in (home, home / "tmp"):
            os.chown(p, VICTIM, VICTIM)
            os.chmod(p, 0o700)
        src = kernels.cpp(shared_tree / "src" / "k.cpp")
        os.chmod(src, 0o644)
        env = env_with(HOME=str(home))
        env.pop("XDG_RUNTIME_DIR", None)
        env.pop("XDG_CACHE_HOME", None)
        env["TMPDIR"] = str(home / "tmp") if fallback == "TMPDIR" else "/nonexistent"
        proc = subprocess.run([*as_user(VICTIM), str(bekc.binary), "build", str(src), FAST,
                               "--cache-dir", str(home / "cache"), "--json"],
                              cwd=home, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert Path(json.loads(proc.stdout.strip().splitlines()[-1])["library"]).is_file()
        assert list(squatted.iterdir()) == [], "the victim wrote into the other user's directory"
        used = home / "tmp" / f"bekc-{VICTIM}" if fallback == "TMPDIR" else \
            home / "cache" / "tmp" / f"builds.{VICTIM}"
        assert used.is_dir() and used.stat().st_uid == VICTIM
        assert stat.S_IMODE(used.stat().st_mode) == 0o700
    finally:
        shutil.rmtree(squatted, ignore_errors=True)
