"""Recording the loads of a run (`$BEKC_RECORD`, `record` in bekc.conf) and
building exactly those later (`bekc replay`): docs/prebuilding.md,
"Recording and replaying the loads of a run".

Each build that delivers a library, hit or miss, from the binary or from the
in-process lookup of a Python load, appends one JSON line naming its
directory and the arguments that rebuild the same module; `bekc replay`
builds each distinct line once, in the directory it was recorded in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from support.spawns import COUNTING

REPO = Path(__file__).resolve().parents[2]
FAST = "-O0"

# What a recorded line must not carry: options about the process, not the module.
PROCESS_OPTIONS = ("--cache-dir", "--read-only-caches", "--remote-cache", "--json", "-v", "-q",
                   "--force", "--depfile", "--output-dir", "-o", "--compile-commands",
                   "--explain-key", "-j")


def env_with(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEKC") and k != "CPATH"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines()]


def is_process_option(arg: str) -> bool:
    return any(arg == o or arg.startswith(o + "=") or (o == "-j" and arg.startswith("-j"))
               for o in PROCESS_OPTIONS)


def replay(bekc, *args, cwd=None, env=None):
    return bekc.run("replay", *map(str, args), cwd=cwd, env=env or env_with())


def test_each_build_hit_or_miss_appends_one_line_with_absolute_directories(bekc, kernels,
                                                                           tmp_path):
    """A miss and a hit each append a line with the absolute directory it ran
    in; relative include directories are written absolute, inputs as spelt
    (their spelling is part of the key), and the options about the process
    (the cache, the output, -j, --force, ...) are left out."""
    kernels.cpp(bekc.workdir / "k.cpp", includes=["value.h"])
    (bekc.workdir / "inc").mkdir()
    (bekc.workdir / "inc" / "value.h").write_text("#define VALUE 1.0f\n")
    record = tmp_path / "loads.jsonl"
    env = env_with(BEKC_RECORD=record)
    args = ["k.cpp", FAST, "-Iinc", "-j2", "-o", "out", "--depfile", "out/k.d"]
    assert not bekc.build(*args, env=env).hit
    assert bekc.build(*args, env=env).hit
    recorded = lines(record)
    assert len(recorded) == 2 and recorded[0] == recorded[1]
    line = recorded[0]
    assert line["cwd"] == str(bekc.workdir)
    assert line["bekc"]
    assert line["args"][0] == "k.cpp"
    assert "-I" + str(bekc.workdir / "inc") in line["args"]
    assert "-O0" in line["args"]
    assert not [a for a in line["args"] if is_process_option(a)], line["args"]


def test_a_dry_run_and_a_failed_build_record_nothing(bekc, kernels, tmp_path):
    kernels.cpp(bekc.workdir / "k.cpp")
    (bekc.workdir / "bad.cpp").write_text("// @BE f\nvoid f(const BE::Tensor x, BE::Tensor out) {")
    record = tmp_path / "loads.jsonl"
    env = env_with(BEKC_RECORD=record)
    bekc.run("build", "k.cpp", "--dry-run", "--cache-dir", bekc.cache_dir, env=env)
    bekc.build("bad.cpp", ok=False, env=env)
    assert not record.exists()


def test_the_setting_is_read_from_bekc_conf_too(bekc, kernels, tmp_path):
    kernels.cpp(bekc.workdir / "k.cpp")
    record = tmp_path / "from-conf.jsonl"
    conf = tmp_path / "bekc.conf"
    conf.write_text(f"record = {record}\n")
    conf.chmod(0o644)
    bekc.build("k.cpp", FAST, env=env_with(BEKC_CONFIG=conf))
    assert len(lines(record)) == 1


def test_processes_appending_at_once_write_whole_lines(bekc, kernels, tmp_path):
    """Eight builds recording into one file at once leave eight whole lines."""
    kernels.cpp(bekc.workdir / "k.cpp")
    bekc.build("k.cpp", FAST)
    record = tmp_path / "loads.jsonl"
    env = env_with(BEKC_RECORD=record)
    # Long lines: many defines, so that a torn write would show.
    defines = [f"-DLONG_MACRO_NAME_{i}=value_{i}" for i in range(300)]
    with ThreadPoolExecutor(8) as pool:
        builds = list(pool.map(lambda _: bekc.build("k.cpp", FAST, *defines, env=env), range(8)))
    assert all(b.rc == 0 for b in builds)
    recorded = lines(record)
    assert len(recorded) == 8
    assert all(len(r["args"]) == len(recorded[0]["args"]) for r in recorded)


def test_a_symlink_at_the_file_is_not_followed_and_the_build_succeeds(bekc, kernels, tmp_path):
    kernels.cpp(bekc.workdir / "k.cpp")
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    link = tmp_path / "loads.jsonl"
    link.symlink_to(target)
    built = bekc.build("k.cpp", FAST, env=env_with(BEKC_RECORD=link))
    assert built.rc == 0
    assert "warning: record:" in built.stderr and "symbolic link" in built.stderr
    assert target.read_text() == ""


# A Python load in a child process, which counts the processes it starts: a
# warm load is answered by the in-process lookup, which starts none.
PYTHON_LOAD = COUNTING + textwrap.dedent("""
    import bekc
    if sys.argv[1] == "file":
        bekc.load_cpp_file(sys.argv[2], name="recorded_file")
    else:
        bekc.load_cpp_inline("recorded_inline", open(sys.argv[2]).read())
    print(json.dumps({"spawned": len(spawned)}))
""")


def python_load(bekc, how, source, record):
    proc = subprocess.run(
        [sys.executable, "-c", PYTHON_LOAD, how, str(source)], cwd=bekc.workdir,
        env=env_with(BEKC=bekc.binary, BEKC_CACHE_DIR=bekc.cache_dir, BEKC_RECORD=record,
                     PYTHONPATH=REPO / "python"),
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_python_loads_record_the_in_process_hit_too(bekc, kernels, tmp_path, lookup_library):
    source = kernels.cpp(bekc.workdir / "k.cpp")
    for how in ("file", "inline"):
        record = tmp_path / f"{how}.jsonl"
        assert python_load(bekc, how, source, record)["spawned"] == 1
        warm = python_load(bekc, how, source, record)
        assert warm["spawned"] == 0, "the second load was not answered in-process"
        recorded = lines(record)
        assert len(recorded) == 2 and recorded[0] == recorded[1]
        assert Path(recorded[0]["args"][0]).is_absolute()


def test_replay_builds_each_distinct_load_once_then_the_run_is_all_hits(bekc, kernels, tmp_path):
    kernels.cpp(bekc.workdir / "a.cpp", fn="add_a")
    kernels.cpp(bekc.workdir / "b.cpp", fn="add_b")
    record = tmp_path / "loads.jsonl"
    run = [("a.cpp", FAST), ("b.cpp", FAST), ("a.cpp", FAST), ("a.cpp", FAST, "-DX=1")]
    env = env_with(BEKC_RECORD=record)
    for args in run:
        bekc.build(*args, env=env)
    assert len(lines(record)) == 4
    fresh = tmp_path / "fresh-cache"
    done = replay(bekc, record, "--cache-dir", fresh, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert [(l["module"], l["ok"]) for l in summary["loads"]] == [("a", True), ("b", True),
                                                                 ("a", True)]
    assert summary["built"] == 3 and summary["failed"] == 0
    assert all(len(l["key"]) == 64 for l in summary["loads"])
    assert "3 of 3 recorded loads built" in done.stderr
    # The same run in that cache: every load a hit.
    for args in run:
        assert bekc.build(*args, cache_dir=fresh).hit, args


def test_replay_with_arch_builds_a_cuda_load_for_that_arch(bekc, kernels, tmp_path, nvcc):
    kernels.cu(bekc.workdir / "g.cu")
    record = tmp_path / "loads.jsonl"
    bekc.build("g.cu", FAST, "--arch", "sm_80", env=env_with(BEKC_RECORD=record))
    fresh = tmp_path / "fresh-cache"
    done = replay(bekc, record, "--arch", "sm_90", "--cache-dir", fresh, "--json")
    assert done.returncode == 0, done.stderr
    load = json.loads(done.stdout.strip().splitlines()[-1])["loads"][0]
    assert json.loads(Path(load["manifest"]).read_text())["toolchain"]["archs"] == ["sm_90"]


def test_a_load_whose_input_is_gone_fails_and_the_others_build(bekc, kernels, tmp_path):
    kernels.cpp(bekc.workdir / "a.cpp", fn="add_a")
    gone = kernels.cpp(bekc.workdir / "gone.cpp", fn="add_gone")
    record = tmp_path / "loads.jsonl"
    env = env_with(BEKC_RECORD=record)
    bekc.build("gone.cpp", FAST, env=env)
    bekc.build("a.cpp", FAST, env=env)
    gone.unlink()
    done = replay(bekc, record, "--cache-dir", tmp_path / "fresh")
    assert done.returncode == 1, done.stderr
    assert "1 of 2 recorded loads built" in done.stderr
    assert "1 failed: gone" in done.stderr and "gone.cpp" in done.stderr
    assert '{"error":' not in done.stderr, "the child's --json object is not a message"
    assert len(done.stdout.strip().splitlines()) == 1


def test_a_malformed_line_is_named_and_nothing_is_built(bekc, kernels, tmp_path):
    kernels.cpp(bekc.workdir / "a.cpp")
    record = tmp_path / "loads.jsonl"
    bekc.build("a.cpp", FAST, env=env_with(BEKC_RECORD=record))
    good = record.read_text()
    record.write_text(good + "not json\n" + '{"cwd": "/"}\n' +
                      '{"cwd": "/no/such/dir", "args": ["x.cpp"]}\n')
    fresh = tmp_path / "fresh"
    done = replay(bekc, record, "--cache-dir", fresh)
    assert done.returncode == 2
    assert f"{record}:2: error: not JSON" in done.stderr
    assert f"{record}:3: error: no \"args\"" in done.stderr
    assert f"{record}:4: error: the directory the load ran in, /no/such/dir, does not exist" \
        in done.stderr
    assert "3 errors in the recordings; nothing was built" in done.stderr
    assert not (fresh / "entries").exists()
    # --keep-going builds the good line, and still says the recording is bad.
    kept = replay(bekc, record, "--cache-dir", fresh, "--keep-going")
    assert kept.returncode == 2
    assert "1 of 1 recorded loads built" in kept.stderr
    assert list((fresh / "entries").glob("*/*"))


def test_a_recording_that_cannot_be_read_is_a_usage_error(bekc, tmp_path):
    done = replay(bekc, tmp_path / "missing.jsonl")
    assert done.returncode == 2
    assert f"cannot read {tmp_path / 'missing.jsonl'}" in done.stderr
