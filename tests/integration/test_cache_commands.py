"""Damaged cache entries and `bekc cache path|ls|clear|prune|verify` (SPEC §5).

A hit whose library no longer matches the manifest's SHA-256 must be
detected, reported on stderr and rebuilt; `cache verify` must find and remove
such entries.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path

import pytest

FAST = "-O0"


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def built(bekc, kernels, name="k", value="1.0f", **kw):
    src = kernels.cpp(bekc.workdir / f"{name}.cpp", value=value)
    return src, bekc.build(src, FAST, **kw)


# --------------------------------------------------------------------------- damage
def test_truncated_library_is_detected_reported_and_rebuilt(bekc, kernels):
    src, first = built(bekc, kernels)
    lib = first.library
    size = lib.stat().st_size
    with open(lib, "r+b") as f:
        f.truncate(size // 2)
    again = bekc.build(src, FAST)
    assert again.hit is False, "a truncated library was served as a hit"
    assert "corrupt" in again.stderr.lower() or "does not match" in again.stderr, again.stderr
    assert again.key == first.key
    assert again.library.stat().st_size == size
    assert sha256(again.library) == again.manifest["library_sha256"]
    assert bekc.build(src, FAST).hit is True
    assert bekc.cache("verify").returncode == 0


def test_rewritten_library_with_size_and_mtime_kept_is_detected(bekc, kernels):
    """Same size, mtime put back: only ctime and the content show it."""
    src, first = built(bekc, kernels)
    lib = first.library
    st = lib.stat()
    data = bytearray(lib.read_bytes())
    data[len(data) // 2] ^= 0xFF
    lib.write_bytes(bytes(data))
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = bekc.build(src, FAST)
    assert again.hit is False, "a modified library was served as a hit"
    assert sha256(again.library) == again.manifest["library_sha256"]


def test_unparsable_manifest_is_detected_and_rebuilt(bekc, kernels):
    src, first = built(bekc, kernels)
    first.manifest_path.write_text("{ not json")
    again = bekc.build(src, FAST)
    assert again.hit is False
    assert again.manifest["key"] == first.key


def test_removed_entry_is_rebuilt(bekc, kernels):
    import shutil

    src, first = built(bekc, kernels)
    shutil.rmtree(first.manifest_path.parent)
    again = bekc.build(src, FAST)
    assert again.hit is False and again.key == first.key
    assert again.library.is_file()


def test_verify_reports_and_removes_a_corrupt_entry(bekc, kernels):
    src_a, a = built(bekc, kernels, name="good")
    src_b, b = built(bekc, kernels, name="bad")
    ok = bekc.cache("verify")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "2 entries checked, 0 removed" in ok.stdout
    key_b = b.key
    # Corrupt one library without changing its size.
    data = bytearray(b.library.read_bytes())
    data[100] ^= 0x01
    b.library.write_bytes(bytes(data))
    proc = bekc.cache("verify")
    assert proc.returncode != 0, "verify found a corrupt entry: that is not success"
    assert key_b[:16] in proc.stdout, proc.stdout
    assert "1 removed" in proc.stdout
    assert not b.manifest_path.parent.exists()
    assert a.manifest_path.parent.exists()
    # Clean afterwards; the good entry still hits, the bad one rebuilds.
    assert bekc.cache("verify").returncode == 0
    assert bekc.build(src_a, FAST).hit is True
    rebuilt = bekc.build(src_b, FAST)
    assert rebuilt.hit is False and sha256(rebuilt.library) == rebuilt.manifest["library_sha256"]


def damage_direct_record_key(bekc, key: str) -> Path:
    """Changes one character of `key` in the cache's only direct-mode record
    to one that is not a hex digit; returns the record file."""
    records = list(Path(bekc.cache_dir).glob("direct/*/*.rec"))
    assert len(records) == 1, records
    data = records[0].read_bytes()
    assert key.encode() in data
    records[0].write_bytes(data.replace(key.encode(), (key[:10] + "x" + key[11:]).encode()))
    return records[0]


def test_a_direct_record_with_a_damaged_key_is_a_miss_and_verify_removes_it(bekc, kernels):
    """A direct-mode record whose key is no longer a cache key is a broken
    record: the build misses and compiles again (exit 0), the next build hits,
    and `cache verify` removes such a record."""
    src, first = built(bekc, kernels)
    damage_direct_record_key(bekc, first.key)
    again = bekc.build(src, FAST)
    assert again.hit is False and again.key == first.key
    assert again.info["miss_reason"] == "no direct-mode record", again.info
    assert bekc.build(src, FAST).hit is True

    record = damage_direct_record_key(bekc, first.key)
    proc = bekc.cache("verify")
    assert "not a direct-mode record" in proc.stdout, proc.stdout + proc.stderr
    assert not record.exists()
    assert bekc.cache("verify").returncode == 0
    assert bekc.build(src, FAST).hit is False


def test_a_direct_record_of_an_older_bekc_is_never_read_and_verify_removes_it(bekc, kernels):
    """Direct records were JSON files named ``….json`` before (formats 1 and
    2): one such file, naming the key of an entry the cache holds, is no
    record for this bekc (the build misses and records again), and `cache
    verify` removes it as of no use."""
    src, first = built(bekc, kernels)
    (record,) = Path(bekc.cache_dir).glob("direct/*/*.rec")
    old = record.with_suffix(".json")
    old.write_text('{"format": 2, "records": [{"key": "%s", "written_ns": 0, "files": [], '
                   '"absent": [], "absent_dirs": []}]}\n' % first.key)
    record.unlink()
    again = bekc.build(src, FAST)
    assert again.hit is False and again.key == first.key
    assert again.info["miss_reason"] == "no direct-mode record", again.info
    assert record.is_file()
    assert bekc.build(src, FAST).hit is True

    proc = bekc.cache("verify")
    assert "a record of an older bekc, which this one never reads" in proc.stdout, (
        proc.stdout + proc.stderr)
    assert not old.exists() and record.is_file()
    assert bekc.cache("verify").returncode == 0


def replace_direct_record(bekc, kind: str, outside: Path) -> Path:
    """Puts a directory (holding a file), a FIFO or a link to `outside` in
    place of the cache's only direct-mode record; returns its path."""
    records = list(Path(bekc.cache_dir).glob("direct/*/*.rec"))
    assert len(records) == 1, records
    record = records[0]
    record.unlink()
    if kind == "directory":
        record.mkdir()
        (record / "inside").write_text("x")
    elif kind == "fifo":
        os.mkfifo(record)
    else:
        record.symlink_to(outside)
    return record


NON_FILES = ["directory", "fifo", "link"]


@pytest.mark.parametrize("kind", NON_FILES)
def test_a_direct_record_that_is_not_a_file_is_replaced_by_the_next_build(bekc, kernels,
                                                                          tmp_path, kind):
    """A directory, FIFO or link where a direct-mode record belongs: the
    build misses without a warning and writes a record in its place (a
    link's target is left alone), so the build after it hits."""
    src, first = built(bekc, kernels)
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    record = replace_direct_record(bekc, kind, outside)
    again = bekc.build(src, FAST)
    assert again.hit is False and again.key == first.key
    assert again.stderr == "", again.stderr
    assert record.is_file() and not record.is_symlink()
    assert outside.read_text() == "{}"
    assert bekc.build(src, FAST).hit is True


@pytest.mark.parametrize("kind", NON_FILES)
def test_verify_removes_a_direct_record_that_is_not_a_file(bekc, kernels, tmp_path, kind):
    """`cache verify` removes a directory, FIFO or link in place of a
    direct-mode record (never what a link points to)."""
    built(bekc, kernels)
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    record = replace_direct_record(bekc, kind, outside)
    proc = bekc.cache("verify")
    assert "not a direct-mode record" in proc.stdout, proc.stdout + proc.stderr
    assert not os.path.lexists(record)
    assert outside.read_text() == "{}"
    assert bekc.cache("verify").returncode == 0


# --------------------------------------------------------------------------- path
def test_cache_path_resolution(bekc, tmp_path):
    base = {k: v for k, v in os.environ.items()
            if k not in ("BEKC_CACHE_DIR", "XDG_CACHE_HOME")}

    def path_with(env, *args):
        proc = bekc.run("cache", "path", *args, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    home = tmp_path / "home"
    env = dict(base, HOME=str(home))
    assert path_with(env) == str(home / ".cache" / "bekc")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    assert path_with(env) == str(tmp_path / "xdg" / "bekc")
    env["BEKC_CACHE_DIR"] = str(tmp_path / "from env")
    assert path_with(env) == str(tmp_path / "from env")
    assert path_with(env, "--cache-dir", tmp_path / "flag") == str(tmp_path / "flag")


def test_build_uses_bekc_cache_dir_from_the_environment(bekc, kernels, tmp_path):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    env = dict(os.environ, BEKC_CACHE_DIR=str(tmp_path / "envcache"))
    proc = bekc.run("build", src, FAST, env=env)
    assert proc.returncode == 0, proc.stderr
    manifest = Path(proc.stdout.strip().splitlines()[-1])
    assert manifest.is_relative_to(tmp_path / "envcache")


# --------------------------------------------------------------------------- ls / clear
def test_ls_lists_entries_by_name(bekc, kernels):
    empty = bekc.cache("ls")
    assert empty.returncode == 0
    assert "0 entries" in empty.stdout or "empty" in empty.stdout
    _, a = built(bekc, kernels, name="alpha")
    _, b = built(bekc, kernels, name="beta")
    proc = bekc.cache("ls")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert any(l.startswith("alpha") and a.key[:16] in l for l in lines), proc.stdout
    assert any(l.startswith("beta") and b.key[:16] in l for l in lines), proc.stdout
    assert "2 entries" in proc.stdout
    # Most recently used first.
    assert proc.stdout.index("beta") < proc.stdout.index("alpha")


def test_clear_name_removes_only_that_module(bekc, kernels):
    src_a, a = built(bekc, kernels, name="alpha")
    src_b, b = built(bekc, kernels, name="beta")
    kernels.cpp(src_a, value="2.0f")
    bekc.build(src_a, FAST)  # a second alpha entry
    proc = bekc.cache("clear", "alpha")
    assert proc.returncode == 0
    assert re.search(r"removed 2 entr", proc.stdout), proc.stdout
    ls = bekc.cache("ls").stdout
    assert "alpha" not in ls and "beta" in ls
    assert bekc.build(src_b, FAST).hit is True
    assert bekc.build(src_a, FAST).hit is False


def test_clear_everything(bekc, kernels):
    src_a, _ = built(bekc, kernels, name="alpha")
    src_b, _ = built(bekc, kernels, name="beta")
    proc = bekc.cache("clear")
    assert proc.returncode == 0 and re.search(r"removed 2 entr", proc.stdout), proc.stdout
    assert bekc.entries() == []
    assert bekc.build(src_a, FAST).hit is False


# --------------------------------------------------------------------------- prune
def cache_bytes(cache_dir: Path) -> int:
    """What prune counts: every regular file under the cache root (entries,
    records, runtime trees, memos, locks), links not followed."""
    total = 0
    for p in cache_dir.rglob("*"):
        if p.is_file() and not p.is_symlink():
            total += p.stat().st_size
    return total


def test_prune_removes_least_recently_used_first(bekc, kernels):
    src_a, a = built(bekc, kernels, name="alpha")
    time.sleep(0.05)
    src_b, b = built(bekc, kernels, name="beta")
    time.sleep(0.05)
    src_c, c = built(bekc, kernels, name="gamma")
    time.sleep(0.05)
    assert bekc.build(src_a, FAST).hit is True  # alpha is now the most recently used
    total = cache_bytes(bekc.cache_dir)
    proc = bekc.cache("prune", "--max-size", str(total - 1))
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"removed 1 entr", proc.stdout), proc.stdout
    assert not b.manifest_path.exists(), "beta was the least recently used"
    assert a.manifest_path.exists() and c.manifest_path.exists()
    assert bekc.build(src_a, FAST).hit is True


def test_prune_to_a_size_that_fits_removes_nothing(bekc, kernels):
    _, a = built(bekc, kernels)
    proc = bekc.cache("prune", "--max-size", "1G")
    assert proc.returncode == 0
    assert re.search(r"removed 0 entr", proc.stdout), proc.stdout
    assert a.manifest_path.exists()


def test_prune_to_zero_empties_the_cache(bekc, kernels):
    src, a = built(bekc, kernels)
    proc = bekc.cache("prune", "--max-size", "0")
    assert proc.returncode == 0
    assert bekc.entries() == []
    assert bekc.build(src, FAST).hit is False


def test_prune_below_what_entries_free_says_what_remains_and_why(bekc, kernels):
    built(bekc, kernels)
    proc = bekc.cache("prune", "--max-size", "100")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.match(r"removed 1 entries and \d+ records", lines[0]), lines
    assert bekc.entries() == []
    left = cache_bytes(bekc.cache_dir)
    assert re.fullmatch(r"(.+) remain, more than 100 B: prune removes only entries, their records "
                        r"and step results", lines[1]), lines
    parts = {l.split("  ")[1].strip(): l for l in lines[2:-1]}
    assert list(parts)[:2] == ["runtime headers and objects", "memos"], lines
    assert "runtime/: bekc cache clear removes them" in parts["runtime headers and objects"]
    assert "bekc-cache.json" in parts["marker"] and "kept" in parts["marker"]
    assert re.fullmatch(r"bekc cache clear would leave (.+): the parts it keeps", lines[-1]), lines
    assert left > 100
    bekc.cache("clear")
    assert cache_bytes(bekc.cache_dir) < left


def test_prune_that_reaches_its_size_says_nothing_more(bekc, kernels):
    built(bekc, kernels)
    proc = bekc.cache("prune", "--max-size", "1G")
    assert len(proc.stdout.splitlines()) == 1, proc.stdout


@pytest.mark.parametrize("size", ["lots", "-5M", "12Q"])
def test_prune_with_a_bad_size_is_a_usage_error(bekc, size):
    proc = bekc.cache("prune", "--max-size", size)
    assert proc.returncode == 2
    assert proc.stderr.strip()


def test_cache_without_a_subcommand_is_a_usage_error(bekc):
    assert bekc.run("cache").returncode == 2
