"""Installed packs (docs/cache.md, "Installed packs"): a pack installed in a
Python site as bekc_packs/<name>/ is a read-only cache of every build that
knows the site (--python-site, $VIRTUAL_ENV), after the caches named, with no
set-up; nothing is ever written to it. A pack bekc cannot use is skipped with
a warning that says why. `bekc cache packs` lists the read-only caches with
the packs among them, checks them without changing them (--verify) and
removes a pack that pip did not install (--remove).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support.trees import listing

FAST = "-O0"


def env_with(**overrides) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BEKC_") and k != "VIRTUAL_ENV"}
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def make_pack(bekc, kernels, site: Path, name="demo", **pack):
    """A pack made by hand: a cache holding one build of k.cpp, its marker
    given a "pack" object (`pack` overrides its members), at
    SITE/bekc_packs/NAME. Returns (source, pack directory, that build)."""
    src = kernels.cpp(bekc.workdir / "k.cpp")
    root = site / "bekc_packs" / name
    built = bekc.build(src, FAST, cache_dir=root, env=env_with())
    add_pack_object(root, {"name": name, "version": "1.0",
                           "bekc_version": built.manifest["bekc_version"], "cuda": "",
                           "archs": [], "modules": ["k"], **pack})
    return src, root, built


def add_pack_object(root: Path, pack: dict) -> None:
    marker = root / "bekc-cache.json"
    data = json.loads(marker.read_text())
    data["pack"] = pack
    marker.write_text(json.dumps(data))


def warnings_of(proc) -> list:
    return [line for line in proc.stderr.splitlines() if "warning" in line]


def test_an_installed_pack_serves_a_hit_and_is_never_written(bekc, kernels):
    site = bekc.workdir.parent / "site"
    src, pack, built = make_pack(bekc, kernels, site)
    before = listing(pack)
    own = bekc.workdir.parent / "own"
    hit = bekc.build(src, FAST, "--python-site", site, "-v", cache_dir=own, env=env_with())
    assert hit.hit and hit.info["layer"] == str(pack), hit.describe()
    assert hit.manifest_path == built.manifest_path
    assert f"bekc: cache hit in the read-only cache {pack}\n" in hit.stderr
    assert listing(pack) == before, "a hit wrote into an installed pack"
    assert not bekc.entries(own)
    # Without the site, the same build misses and builds into its own cache.
    miss = bekc.build(src, FAST, cache_dir=bekc.workdir.parent / "other", env=env_with())
    assert not miss.hit


def test_the_active_virtualenvs_site_packages_are_looked_in(bekc, kernels):
    venv = bekc.workdir.parent / "venv"
    site = venv / "lib" / "python3.99" / "site-packages"
    src, pack, _ = make_pack(bekc, kernels, site)
    hit = bekc.build(src, FAST, cache_dir=bekc.workdir.parent / "own",
                     env=env_with(VIRTUAL_ENV=venv))
    assert hit.hit and hit.info["layer"] == str(pack), hit.describe()


def test_installed_packs_come_after_the_caches_named_in_name_order(bekc, kernels):
    site = bekc.workdir.parent / "site"
    src, b, _ = make_pack(bekc, kernels, site, "b")
    _, a, _ = make_pack(bekc, kernels, site, "a")
    team = bekc.workdir.parent / "team"
    bekc.build(src, FAST, cache_dir=team, env=env_with())
    listed = bekc.run("cache", "packs", "--python-site", site, "--read-only-caches", team,
                      "--cache-dir", bekc.workdir.parent / "own", env=env_with())
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines == [str(team),
                     f"{a}  pack a 1.0  cuda none  archs none  1 module",
                     f"{b}  pack b 1.0  cuda none  archs none  1 module"], lines
    hit = bekc.build(src, FAST, "--python-site", site, "--read-only-caches", team,
                     cache_dir=bekc.workdir.parent / "own", env=env_with())
    assert hit.info["layer"] == str(team), hit.describe()


def test_a_pack_of_another_bekc_version_is_skipped_with_a_warning(bekc, kernels):
    site = bekc.workdir.parent / "site"
    src, pack, built = make_pack(bekc, kernels, site, bekc_version="0.0.1")
    this = built.manifest["bekc_version"]
    miss = bekc.build(src, FAST, "--python-site", site, cache_dir=bekc.workdir.parent / "own",
                      env=env_with())
    assert not miss.hit, miss.describe()
    assert warnings_of(miss) == [
        f"bekc: warning: installed pack {pack} skipped: it was made by bekc 0.0.1 and this is "
        f"bekc {this}, whose keys none of its entries can match; install the pack's release "
        f"for bekc {this}"], miss.stderr


def test_a_pack_whose_marker_does_not_parse_is_skipped_with_a_warning(bekc, kernels):
    site = bekc.workdir.parent / "site"
    src, pack, _ = make_pack(bekc, kernels, site)
    (pack / "bekc-cache.json").write_text("{not json")
    before = listing(pack)
    miss = bekc.build(src, FAST, "--python-site", site, cache_dir=bekc.workdir.parent / "own",
                      env=env_with())
    assert not miss.hit, miss.describe()
    assert warnings_of(miss) == [
        f"bekc: warning: installed pack {pack} skipped: {pack / 'bekc-cache.json'} is not a "
        f"JSON object"], miss.stderr
    assert listing(pack) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a directory of mode 000")
def test_an_unreadable_pack_is_skipped_with_a_warning(bekc, kernels):
    site = bekc.workdir.parent / "site"
    src, pack, _ = make_pack(bekc, kernels, site)
    pack.chmod(0)
    try:
        miss = bekc.build(src, FAST, "--python-site", site,
                          cache_dir=bekc.workdir.parent / "own", env=env_with())
    finally:
        pack.chmod(0o755)
    assert not miss.hit, miss.describe()
    assert warnings_of(miss) == [
        f"bekc: warning: installed pack {pack} skipped: it cannot be read: Permission denied"]


def test_a_link_and_a_plain_cache_in_bekc_packs_are_skipped_with_a_warning(bekc, kernels):
    site = bekc.workdir.parent / "site"
    src, pack, _ = make_pack(bekc, kernels, site)
    plain = site / "bekc_packs" / "plain"
    bekc.build(src, FAST, cache_dir=plain, env=env_with())
    link = site / "bekc_packs" / "zlink"
    link.symlink_to(pack)
    hit = bekc.build(src, FAST, "--python-site", site, cache_dir=bekc.workdir.parent / "own",
                     env=env_with())
    assert hit.info["layer"] == str(pack), hit.describe()
    assert warnings_of(hit) == [
        f"bekc: warning: installed pack {plain} skipped: its bekc-cache.json has no \"pack\" "
        f"object",
        f"bekc: warning: installed pack {link} skipped: it is a symbolic link, and bekc follows "
        f"none to a read-only cache; name the directory it points to"], hit.stderr


def test_cache_packs_json_lists_each_layer_with_its_pack(bekc, kernels):
    site = bekc.workdir.parent / "site"
    _, pack, built = make_pack(bekc, kernels, site, cuda="13.0", archs=["sm_80", "sm_90"])
    listed = bekc.run("cache", "packs", "--json", "--python-site", site, env=env_with())
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == [{
        "path": str(pack), "installed": True,
        "pack": {"name": "demo", "version": "1.0", "bekc_version": built.manifest["bekc_version"],
                 "cuda": "13.0", "archs": ["sm_80", "sm_90"], "modules": ["k"]}}]


def test_cache_packs_verify_names_a_damaged_entry_and_changes_nothing(bekc, kernels):
    site = bekc.workdir.parent / "site"
    _, pack, built = make_pack(bekc, kernels, site)
    ok = bekc.run("cache", "packs", "--verify", "--python-site", site, env=env_with())
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"{pack}: 1 entries checked, 0 damaged (left as they are)\n" in ok.stdout
    with open(built.library, "r+b") as f:
        f.truncate(100)
    before = listing(pack)
    bad = bekc.run("cache", "packs", "--verify", "--python-site", site, env=env_with())
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"damaged in {pack}: entry {built.key}: " in bad.stdout
    assert built.library.name in bad.stdout, bad.stdout
    assert listing(pack) == before


def test_cache_packs_remove_removes_a_copied_pack_and_refuses_a_pip_one(bekc, kernels):
    site = bekc.workdir.parent / "site"
    _, pack, _ = make_pack(bekc, kernels, site)
    outside = bekc.workdir.parent / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    (pack / "entries" / "link").symlink_to(outside)
    removed = bekc.run("cache", "packs", "--remove", "demo", "--python-site", site,
                       env=env_with())
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"removed {pack}\n"
    assert not pack.exists() and (outside / "keep").read_text() == "x"
    missing = bekc.run("cache", "packs", "--remove", "demo", "--python-site", site,
                       env=env_with())
    assert missing.returncode == 2 and "no installed pack \"demo\"" in missing.stderr
    # A pack pip installed: pip removes it.
    _, pack, _ = make_pack(bekc, kernels, site)
    info = site / "bekc_pack_demo-1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("bekc_packs/demo/bekc-cache.json,sha256=x,1\n")
    refused = bekc.run("cache", "packs", "--remove", "demo", "--python-site", site,
                       env=env_with())
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr == (f"bekc: error: {pack} is installed by pip: run pip uninstall "
                              f"bekc_pack_demo\n")
    assert pack.is_dir()
    # A directory that is not a pack is never removed.
    (info / "RECORD").unlink()
    plain = site / "bekc_packs" / "plain"
    bekc.build(kernels.cpp(bekc.workdir / "p.cpp"), FAST, cache_dir=plain, env=env_with())
    kept = bekc.run("cache", "packs", "--remove", "plain", "--python-site", site, env=env_with())
    assert kept.returncode == 4 and "it is not a pack" in kept.stderr, kept.stderr
    assert plain.is_dir()

