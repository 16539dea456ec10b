"""Layered caches (docs/cache.md, "Layered caches"): a build looks in the
user's own cache, then in each read-only cache in order (read_only_caches,
$BEKC_READ_ONLY_CACHES, --read-only-caches); a miss builds into the own cache.
A read-only cache is never written, even when this user could write it; a
bad one is skipped with one warning naming it and why.

(Two users sharing a team cache: test_team_cache.py. Answered inside a Python
process: test_in_process_lookup.py.)
"""

from __future__ import annotations

import os
from pathlib import Path

from support.trees import listing

FAST = "-O0"


def env_with(**overrides) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEKC_")}
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def layered(bekc, src, own: Path, layers, *args, env=None):
    """`bekc build SRC` with `own` as the cache and `layers` (a ':' list) as
    --read-only-caches."""
    return bekc.build(src, FAST, "--read-only-caches", layers, *args, cache_dir=own,
                      env=env or env_with())


def team_cache(bekc, kernels, name="team"):
    """A cache holding one build of k.cpp; (source, its cache, that build)."""
    src = kernels.cpp(bekc.workdir / "k.cpp")
    root = bekc.workdir.parent / name
    return src, root, bekc.build(src, FAST, cache_dir=root)


def test_a_hit_from_a_read_only_cache_writes_nothing_to_it_even_when_it_could(bekc, kernels):
    src, team, built = team_cache(bekc, kernels)
    # Touched without a change: a cache bekc writes would refresh the stamp.
    os.utime(built.library)
    before = listing(team)
    own = bekc.workdir.parent / "own"
    out = bekc.workdir / "out"
    log = team / "build.jsonl"
    hit = layered(bekc, src, own, team, "-o", out, "--depfile", bekc.workdir / "k.d",
                  env=env_with(BEKC_LOG=log))
    assert hit.hit and hit.info["library"] == str(out / built.library.name), hit.describe()
    assert (out / built.library.name).read_bytes() == built.library.read_bytes()
    assert (bekc.workdir / "k.d").read_text().startswith(f"{out / 'manifest.json'}:")
    assert f"bekc: warning: build log: {log} is in the read-only cache {team}" in hit.stderr
    assert listing(team) == before, "a hit wrote into the read-only cache"


def test_the_own_cache_first_then_the_read_only_caches_in_order(bekc, kernels):
    src, first, a = team_cache(bekc, kernels, "first")
    second = bekc.workdir.parent / "second"
    b = bekc.build(src, FAST, cache_dir=second)
    own = bekc.workdir.parent / "own"
    assert layered(bekc, src, own, f"{first}:{second}").manifest_path == a.manifest_path
    assert layered(bekc, src, own, f"{second}:{first}").manifest_path == b.manifest_path
    assert not own.exists() or not bekc.entries(own), "a hit from a read-only cache copied it"
    mine = bekc.build(src, FAST, "--force", cache_dir=own)
    assert layered(bekc, src, own, f"{first}:{second}").manifest_path == mine.manifest_path


def test_a_miss_builds_into_the_own_cache_and_takes_its_lock_there(bekc, kernels):
    src, team, _ = team_cache(bekc, kernels)
    before = listing(team)
    other = kernels.cpp(bekc.workdir / "other.cpp", value="2.0f")
    own = bekc.workdir.parent / "own"
    miss = layered(bekc, other, own, team)
    assert not miss.hit and miss.manifest_path.is_relative_to(own), miss.describe()
    assert list((own / "locks").rglob("*.lock")), "no key lock in the own cache"
    assert listing(team) == before


def test_bad_read_only_caches_are_skipped_with_one_warning_each(bekc, kernels):
    src, team, built = team_cache(bekc, kernels)
    root = bekc.workdir.parent
    (root / "link").symlink_to(team)
    (root / "file").write_text("")
    (root / "plain").mkdir()
    layers = ":".join(str(root / n) for n in ("missing", "link", "file", "plain")) + f":{team}"
    hit = layered(bekc, src, root / "own", layers)
    assert hit.manifest_path == built.manifest_path, hit.describe()
    warnings = [line for line in hit.stderr.splitlines() if "warning" in line]
    assert warnings == [
        f"bekc: warning: read-only cache {root / 'missing'} skipped: it does not exist",
        f"bekc: warning: read-only cache {root / 'link'} skipped: it is a symbolic link, and bekc "
        f"follows none to a read-only cache; name the directory it points to",
        f"bekc: warning: read-only cache {root / 'file'} skipped: it is not a directory",
        f"bekc: warning: read-only cache {root / 'plain'} skipped: it is not a bekc cache (it has "
        f"no bekc-cache.json)",
    ], hit.stderr
    assert list((root / "plain").iterdir()) == [] and not (root / "missing").exists()
    assert "warning" not in layered(bekc, src, root / "own", layers, "-q").stderr


def test_a_damaged_entry_in_a_read_only_cache_is_a_miss_left_as_it_is(bekc, kernels):
    src, team, built = team_cache(bekc, kernels)
    with open(built.library, "r+b") as f:
        f.truncate(100)
    before = listing(team)
    own = bekc.workdir.parent / "own"
    miss = layered(bekc, src, own, team)
    assert not miss.hit and miss.manifest_path.is_relative_to(own), miss.describe()
    assert (f"bekc: warning: cache entry {built.key} in the read-only cache {team} is corrupt ("
            in miss.stderr), miss.describe()
    assert "; not used, and left as it is" in miss.stderr
    assert listing(team) == before


def test_verbose_and_explain_key_name_the_cache_that_served_the_hit(bekc, kernels):
    src, team, _ = team_cache(bekc, kernels)
    own = bekc.workdir.parent / "own"
    verbose = layered(bekc, src, own, team, "-v")
    assert f"bekc: cache hit in the read-only cache {team}\n" in verbose.stderr
    explained = layered(bekc, src, own, team, "--explain-key")
    assert f"bekc: cache hit in the read-only cache {team}\n" in explained.stderr
    bekc.build(src, FAST, "--force", cache_dir=own)
    assert f"bekc: cache hit in {own}\n" in layered(bekc, src, own, team, "-v").stderr


def test_config_show_and_doctor_list_the_layers(bekc, kernels):
    _, team, _ = team_cache(bekc, kernels)
    own = bekc.workdir.parent / "own"
    missing = bekc.workdir.parent / "missing"
    env = env_with(BEKC_READ_ONLY_CACHES=f"{team}:{missing}")
    shown = bekc.run("config", "--show", "--cache-dir", own, env=env)
    assert shown.returncode == 0, shown.stderr
    assert f"($BEKC_READ_ONLY_CACHES) read_only_caches = {team}:{missing}\n" in shown.stdout
    assert shown.stdout.endswith(
        "# caches a build looks in, in order:\n"
        f"#   {own} (your own: misses build into it)\n"
        f"#   {team} (read-only)\n"
        f"#   {missing} (read-only, skipped: it does not exist)\n"), shown.stdout
    doctor = bekc.run("doctor", "--cache-dir", own, env=env, timeout=120)
    assert doctor.returncode == 0, doctor.stderr
    lines = doctor.stdout.splitlines()
    assert any(line.startswith(f"read-only      {team} (1 entries, ") for line in lines), lines
    assert f"read-only      {missing} (skipped: it does not exist)" in lines


def test_cache_commands_act_on_the_own_cache_only(bekc, kernels):
    _, team, _ = team_cache(bekc, kernels)
    before = listing(team)
    env = env_with(BEKC_READ_ONLY_CACHES=team)
    for args in (["clear"], ["prune", "--max-size", "0"], ["verify"]):
        proc = bekc.cache(*args, cache_dir=bekc.workdir.parent / "own", env=env)
        assert proc.returncode == 0, proc.stderr
    assert listing(team) == before


def test_an_empty_flag_turns_the_read_only_caches_off(bekc, kernels):
    src, team, built = team_cache(bekc, kernels)
    own = bekc.workdir.parent / "own"
    env = env_with(BEKC_READ_ONLY_CACHES=team)
    on = bekc.build(src, FAST, cache_dir=own, env=env)
    assert on.manifest_path == built.manifest_path
    off = bekc.build(src, FAST, "--read-only-caches=", cache_dir=own, env=env)
    assert not off.hit and off.manifest_path.is_relative_to(own)
