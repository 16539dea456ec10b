"""libbekc_lookup.so: `bekc build --json` answered inside the Python process
on a local cache hit, with the binary's own checks, and left to the binary
for everything else (docs/cache.md, "Hits inside the Python process").

Each lookup runs in a fresh child Python (`LOOKUP`), as a warm load in a new
process does; it prints what the library answered. Python loads count the
processes they start by wrapping `subprocess.Popen` (`COUNT_SPAWNS`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.spawns import COUNTING
from support.trees import listing

REPO = Path(__file__).resolve().parents[2]
FAST = "-O0"

LOOKUP = textwrap.dedent("""
    import json, sys
    from bekc import _lookup
    found = _lookup._loaded(sys.argv[1])(sys.argv[2:])
    print(json.dumps(None if found is None else {"json": json.loads(found[0]),
                                                  "messages": found[1]}))
""")


# run_bekc on the argument vector in argv[1:], counting the processes it starts.
COUNT_SPAWNS = COUNTING + textwrap.dedent("""
    from bekc._run import run_bekc
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run_bekc(sys.argv[1:])
    print(json.dumps({"out": out, "spawned": len(spawned),
                      "warnings": [str(w.message) for w in caught]}))
""")


# What `import bekc` set up, and what it started or imported on the way.
IMPORT_STATE = COUNTING + textwrap.dedent("""
    import bekc
    from bekc import _compat, _lookup
    found = {k: v for k, v in (("brainevent", _compat._brainevent_include_dir()),
                              ("xla", _compat._xla_include_dir())) if v}
    print(json.dumps({
        "opened": [p for p, lib in _lookup._LOADED.items() if lib is not None],
        "mapped": "libbekc_lookup.so" in open("/proc/self/maps").read(),
        "kept": {k: _compat._FOUND[k][1] for k in found if k in _compat._FOUND},
        "found": found, "spawned": len(spawned),
        "imported": [m for m in ("jax", "jaxlib", "brainevent") if m in sys.modules]}))
""")


def import_state(**env):
    proc = subprocess.run([sys.executable, "-c", IMPORT_STATE], capture_output=True, text=True,
                          env=python_env(**env), timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


def python_env(**overrides):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BEKC_") and k not in ("BEKC", "CPATH")}
    env["PYTHONPATH"] = str(REPO / "python")
    env.update({k: v for k, v in overrides.items() if v is not None})
    return env


def lookup(library: Path, argv, **env):
    """What the library answers for `argv`, in a fresh process: None (not
    handled) or {"json": ..., "messages": ...}."""
    proc = subprocess.run([sys.executable, "-c", LOOKUP, str(library), *map(str, argv)],
                          capture_output=True, text=True, env=python_env(**env), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", "the library wrote to stderr: " + proc.stderr
    return json.loads(proc.stdout)


def run_bekc_counting(argv, **env):
    proc = subprocess.run([sys.executable, "-c", COUNT_SPAWNS, *map(str, argv)],
                          capture_output=True, text=True, env=python_env(**env), timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def without_timings(info: dict) -> dict:
    return {k: v for k, v in info.items() if k != "timings"}


def stats(bekc) -> dict:
    """`bekc cache stats`' hit and miss counters."""
    text = bekc.cache("stats").stdout
    out = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("hits", "misses", "errors"):
            out[words[0]] = int(words[1])
    return out


@pytest.fixture
def kernel(kernels, bekc):
    header = bekc.workdir / "inc" / "value.h"
    header.parent.mkdir()
    header.write_text("#define VALUE 1.0f\n")
    return kernels.cpp(bekc.workdir / "k.cpp", includes=["inc/value.h"], value="VALUE")


def test_a_hit_answers_what_the_binary_answers_and_counts_as_a_hit(bekc, kernel,
                                                                    lookup_library):
    bekc.build(kernel, FAST)
    binary_hit = bekc.build(kernel, FAST)
    assert binary_hit.hit
    before = stats(bekc)
    found = lookup(lookup_library, bekc.build_argv(kernel, FAST))
    assert found is not None
    assert without_timings(found["json"]) == without_timings(binary_hit.info)
    assert found["messages"] == ""
    after = stats(bekc)
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"]


def test_a_miss_is_left_to_the_binary_and_writes_nothing(bekc, kernel, lookup_library):
    argv = bekc.build_argv(kernel, FAST)
    assert lookup(lookup_library, argv) is None
    assert bekc.entries() == []
    # The binary then counts its own miss, once.
    bekc.build(kernel, FAST)
    assert stats(bekc)["misses"] == 1


def test_an_edited_header_is_a_miss_and_the_binary_rebuilds(bekc, kernel, lookup_library):
    first = bekc.build(kernel, FAST)
    (bekc.workdir / "inc" / "value.h").write_text("#define VALUE 2.0f\n")
    argv = bekc.build_argv(kernel, FAST)
    assert lookup(lookup_library, argv) is None
    rebuilt = run_bekc_counting(argv)
    assert rebuilt["spawned"] == 1 and not rebuilt["out"]["cache_hit"]
    assert rebuilt["out"]["library"] != str(first.library)
    # The new entry is then a hit in-process.
    again = lookup(lookup_library, argv)
    assert again is not None and again["json"]["library"] == rebuilt["out"]["library"]


@pytest.mark.parametrize("change", ["flag", "env"])
def test_a_changed_flag_or_keyed_variable_is_a_miss(bekc, kernel, lookup_library, change,
                                                    tmp_path):
    bekc.build(kernel, FAST)
    if change == "flag":
        assert lookup(lookup_library, bekc.build_argv(kernel, FAST, "-DEXTRA=1")) is None
    else:
        cpath = tmp_path / "cpath"
        cpath.mkdir()
        assert lookup(lookup_library, bekc.build_argv(kernel, FAST), CPATH=str(cpath)) is None
    assert lookup(lookup_library, bekc.build_argv(kernel, FAST)) is not None


def test_a_tampered_library_is_refused_as_the_binary_refuses_it(bekc, kernel, lookup_library):
    built = bekc.build(kernel, FAST)
    data = bytearray(built.library.read_bytes())
    data[len(data) // 2] ^= 0xFF
    built.library.write_bytes(data)
    argv = bekc.build_argv(kernel, FAST)
    assert lookup(lookup_library, argv) is None
    # The entry is left for the binary, which reports and repairs it.
    rebuilt = bekc.build(kernel, FAST)
    assert not rebuilt.hit
    assert "is corrupt" in rebuilt.stderr and "rebuilding" in rebuilt.stderr


def test_a_direct_record_with_a_damaged_key_is_a_miss_in_process_too(bekc, kernel,
                                                                      lookup_library):
    """A direct-mode record whose key is not a cache key (one character
    changed) is a miss in the library as in the binary: the load compiles
    again and succeeds."""
    first = bekc.build(kernel, FAST)
    record = next(Path(bekc.cache_dir).glob("direct/*/*.rec"))
    record.write_bytes(record.read_bytes().replace(
        first.key.encode(), (first.key[:10] + "x" + first.key[11:]).encode()))
    argv = bekc.build_argv(kernel, FAST)
    assert lookup(lookup_library, argv) is None
    rebuilt = run_bekc_counting(argv)
    assert rebuilt["spawned"] == 1 and not rebuilt["out"]["cache_hit"]
    assert lookup(lookup_library, argv) is not None


def test_a_hit_below_a_directory_whose_name_is_not_utf8(bekc, kernels, lookup_library,
                                                         tmp_path):
    """An input, its header and the cache below a directory named b"caf\\xe9"
    (a legal Linux name): the library answers the hit as the binary does,
    paths byte for byte."""
    latin = tmp_path / os.fsdecode(b"caf\xe9")
    (latin / "inc").mkdir(parents=True)
    (latin / "inc" / "value.h").write_text("#define VALUE 1.0f\n")
    src = kernels.cpp(latin / "k.cpp", includes=["inc/value.h"], value="VALUE")
    argv = bekc.build_argv(src, FAST, cache_dir=latin / "cache")
    assert subprocess.run(argv, capture_output=True, timeout=300).returncode == 0
    binary_hit = subprocess.run(argv, capture_output=True, timeout=300)
    expected = json.loads(binary_hit.stdout)
    assert expected["cache_hit"] and expected["manifest"].startswith(str(latin / "cache"))
    found = lookup(lookup_library, argv)
    assert found is not None
    assert without_timings(found["json"]) == without_timings(expected)


@pytest.mark.parametrize("extra", [["-v"], ["--force"], ["--dry-run"], ["--explain-key"],
                                   ["--compile-commands", "cc.json"], ["--name="],
                                   ["--help"]])
def test_options_that_print_or_write_more_are_left_to_the_binary(bekc, kernel, lookup_library,
                                                                 extra):
    bekc.build(kernel, FAST)
    assert lookup(lookup_library, bekc.build_argv(kernel, FAST, *extra)) is None


def test_a_relative_input_is_left_to_the_binary(bekc, kernel, lookup_library):
    bekc.build(kernel, FAST)
    argv = bekc.build_argv("k.cpp", FAST)
    proc = subprocess.run([sys.executable, "-c", LOOKUP, str(lookup_library), *argv],
                          capture_output=True, text=True, env=python_env(), cwd=bekc.workdir)
    assert json.loads(proc.stdout) is None


def test_a_hits_warnings_reach_python_as_the_binarys_do(bekc, kernel, lookup_library):
    argv = bekc.build_argv(kernel, FAST, "-I", bekc.workdir / "missing")
    bekc.build(kernel, FAST, "-I", bekc.workdir / "missing")
    found = lookup(lookup_library, argv)
    assert found is not None
    binary = bekc.build(kernel, FAST, "-I", bekc.workdir / "missing")
    assert found["messages"] == binary.stderr and "warning" in found["messages"]
    in_process = run_bekc_counting(argv)
    spawned = run_bekc_counting(argv, BEKC_IN_PROCESS_LOOKUP="0")
    assert (in_process["spawned"], spawned["spawned"]) == (0, 1)
    assert in_process["warnings"] == spawned["warnings"] != []


def test_a_hit_from_a_read_only_cache_is_answered_in_process_and_writes_nothing(
        bekc, kernel, lookup_library, tmp_path):
    """The own cache is new and empty; the build is in a read-only cache
    (docs/cache.md, "Layered caches"), whose tool versions serve too."""
    binary_hit = bekc.build(kernel, FAST)
    team = bekc.cache_dir
    before = listing(team)
    argv = bekc.build_argv(kernel, FAST, cache_dir=tmp_path / "own")
    found = lookup(lookup_library, argv, BEKC_READ_ONLY_CACHES=str(team))
    assert found is not None, "a read-only cache's hit was left to the binary"
    assert found["json"]["manifest"] == str(binary_hit.manifest_path)
    assert found["messages"] == ""
    warm = run_bekc_counting(argv, BEKC_READ_ONLY_CACHES=str(team))
    assert warm["spawned"] == 0 and warm["out"]["manifest"] == str(binary_hit.manifest_path)
    assert listing(team) == before


def test_run_bekc_on_a_warm_cache_starts_no_process(bekc, kernel, lookup_library):
    argv = bekc.build_argv(kernel, FAST)
    cold = run_bekc_counting(argv)
    warm = run_bekc_counting(argv)
    assert (cold["spawned"], warm["spawned"]) == (1, 0)
    assert warm["out"]["cache_hit"] and warm["out"]["manifest"] == cold["out"]["manifest"]


# bekc.get_cache_dir() twice, counting the processes it starts.
CACHE_DIR_TWICE = COUNTING + textwrap.dedent("""
    import bekc
    first = bekc.get_cache_dir()
    second = bekc.get_cache_dir()
    print(json.dumps({"dirs": [first, second], "spawned": len(spawned)}))
""")


@pytest.mark.parametrize("lookup_on", [True, False])
def test_the_cache_directory_is_asked_once_and_in_process(bekc, lookup_library, tmp_path,
                                                          lookup_on):
    """The cache directory a Python load uses is the binary's (`bekc cache
    path`): answered by the lookup library without a process, or, with the
    lookup off, by the binary once for the process."""
    home = tmp_path / "home"
    (home / ".config" / "bekc").mkdir(parents=True)
    (home / ".config" / "bekc" / "bekc.conf").write_text(f"cache_dir = {tmp_path / 'c'}\n")
    env = python_env(HOME=str(home), BEKC=str(bekc.binary),
                     BEKC_IN_PROCESS_LOOKUP=None if lookup_on else "0")
    for var in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        env.pop(var, None)
    proc = subprocess.run([sys.executable, "-c", CACHE_DIR_TWICE], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["dirs"] == [str(tmp_path / "c")] * 2
    assert out["spawned"] == (0 if lookup_on else 1)


def test_the_switch_and_an_unusable_library_fall_back_to_the_binary(bekc, kernel,
                                                                    lookup_library, tmp_path):
    argv = bekc.build_argv(kernel, FAST)
    bekc.build(kernel, FAST)
    off = run_bekc_counting(argv, BEKC_IN_PROCESS_LOOKUP="0")
    assert off["spawned"] == 1 and off["out"]["cache_hit"]
    not_a_library = tmp_path / "libbekc_lookup.so"
    not_a_library.write_text("not an ELF file\n")
    broken = run_bekc_counting(argv, BEKC_LOOKUP_LIBRARY=str(not_a_library))
    assert broken["spawned"] == 1 and broken["out"]["cache_hit"] and broken["warnings"] == []
    missing = run_bekc_counting(argv, BEKC_LOOKUP_LIBRARY=str(tmp_path / "absent.so"))
    assert missing["spawned"] == 1 and missing["out"]["cache_hit"]


def test_a_library_of_another_abi_is_not_used(bekc, kernel, tmp_path):
    """A library whose bekc_lookup_abi_version is not the package's."""
    source = tmp_path / "other.c"
    source.write_text("int bekc_lookup_abi_version(void) { return 99; }\n"
                      "int bekc_lookup_v1(int c, const char* const* v, char** j, char** m)"
                      " { return 0; }\n"
                      "void bekc_lookup_free(char* p) {}\n")
    other = tmp_path / "libother.so"
    cc = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(other), str(source)],
                        capture_output=True, text=True)
    if cc.returncode != 0:
        pytest.skip("no C compiler: " + cc.stderr)
    bekc.build(kernel, FAST)
    out = run_bekc_counting(bekc.build_argv(kernel, FAST), BEKC_LOOKUP_LIBRARY=str(other))
    assert out["spawned"] == 1 and out["out"]["cache_hit"]


def test_the_library_exports_only_its_abi(lookup_library):
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lookup_library)],
                        capture_output=True, text=True)
    if nm.returncode != 0:
        pytest.skip("nm (binutils) not found")
    exported = sorted(line.split()[-1] for line in nm.stdout.splitlines() if line.strip())
    assert exported == ["bekc_lookup_abi_version", "bekc_lookup_cache_v1", "bekc_lookup_free",
                        "bekc_lookup_v1"]


def test_import_opens_the_lookup_library_and_finds_the_include_directories(bekc,
                                                                           lookup_library):
    """A process's first load does not pay for them: `import bekc` opens the
    lookup library of the binary it finds and looks up what every load passes
    (brainevent's and jaxlib's include directories), starting and importing
    nothing."""
    state = import_state(BEKC=str(bekc.binary))
    assert state["opened"] == [str(lookup_library)] and state["mapped"]
    if not state["found"]:
        pytest.skip("neither brainevent nor jaxlib's FFI headers are installed")
    assert state["kept"] == state["found"]
    assert state["spawned"] == 0 and state["imported"] == []


def test_import_opens_no_library_with_the_lookup_off_or_no_binary(bekc, tmp_path):
    off = import_state(BEKC=str(bekc.binary), BEKC_IN_PROCESS_LOOKUP="0")
    assert off["opened"] == [] and not off["mapped"]
    absent = import_state(BEKC=str(tmp_path / "no-such-bekc"), PATH="/nonexistent")
    assert absent["opened"] == [] and not absent["mapped"] and absent["spawned"] == 0
