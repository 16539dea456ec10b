"""The Python loader's inline sources live in the cache (<cache>/src/<sha>/),
which other users may share: a link planted there must never send a write or
a delete outside the cache (docs/cache.md, "Links and other users")."""

from __future__ import annotations

import os

import pytest

from bekc import _cache_choice, _compat, _inline_sources


@pytest.fixture
def cache(bekc_bin, tmp_path, monkeypatch):
    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setattr(_compat, "_CACHE_DIR_OVERRIDE", str(root))
    return root


def test_a_source_is_written_and_rewritten_in_place(cache):
    path = _compat._inline_source_path("int x;\n", "mod", ".cpp")
    _compat._ensure_source_file(path, "int x;\n")
    assert open(path).read() == "int x;\n"
    _compat._ensure_source_file(path, "int x;\n")  # unchanged: no rewrite needed
    assert sorted(os.listdir(os.path.dirname(path))) == ["mod.cpp"]


@pytest.mark.parametrize("name, stem", [
    ("vector_add", "vector_add"),
    ("A-Z_0.9+q", "A-Z_0.9+q"),
    ("my kernel/v2", "my_kernel_v2"),
    ("caf\u00e9\U0001f600", "caf__"),  # one '_' per character, not per byte
    ("..-hidden", "hidden"),  # no leading '.' or '-'
    ("../..", "_.."),
    ("", "module"),
    ("-.", "module"),
])
def test_a_module_name_becomes_a_plain_file_name(cache, name, stem):
    path = _compat._inline_source_path("int x;\n", name, ".cpp")
    assert os.path.basename(path) == stem + ".cpp"
    assert os.path.dirname(os.path.dirname(path)) == os.path.join(str(cache), "src")


def test_a_linked_source_directory_is_not_written_through(cache, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    path = _compat._inline_source_path("int y;\n", "mod", ".cpp")
    (cache / "src").mkdir()
    os.symlink(outside, os.path.dirname(path))
    with pytest.raises(OSError):
        _compat._ensure_source_file(path, "int y;\n")
    assert list(outside.iterdir()) == []


def test_a_linked_source_file_is_replaced_not_followed(cache, tmp_path):
    victim = tmp_path / "victim.cpp"
    victim.write_text("precious\n")
    path = _compat._inline_source_path("int z;\n", "mod", ".cpp")
    os.makedirs(os.path.dirname(path))
    os.symlink(victim, path)
    _compat._ensure_source_file(path, "int z;\n")
    assert victim.read_text() == "precious\n"
    assert not os.path.islink(path) and open(path).read() == "int z;\n"


def test_a_fifo_in_place_of_a_source_does_not_hang(cache):
    path = _compat._inline_source_path("int w;\n", "mod", ".cpp")
    os.makedirs(os.path.dirname(path))
    os.mkfifo(path)
    _compat._ensure_source_file(path, "int w;\n")  # replaced, never opened for reading
    assert open(path).read() == "int w;\n"


def test_clearing_never_deletes_through_links(cache, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mod.cu").write_text("keep\n")
    (outside / "other").write_text("keep\n")
    src = cache / "src"
    src.mkdir()
    os.symlink(outside, src / ("a" * 64))
    _compat._remove_inline_sources("mod")
    assert (outside / "mod.cu").read_text() == "keep\n"
    _compat._remove_inline_sources(None)
    assert sorted(p.name for p in outside.iterdir()) == ["mod.cu", "other"]
    assert not src.exists()


def test_a_linked_src_directory_is_left_alone(cache, tmp_path):
    outside = tmp_path / "outside"
    (outside / "x").mkdir(parents=True)
    (outside / "x" / "mod.cpp").write_text("keep\n")
    os.symlink(outside, cache / "src")
    _compat._remove_inline_sources(None)
    _compat._remove_inline_sources("mod")
    assert (outside / "x" / "mod.cpp").read_text() == "keep\n"


@pytest.fixture
def read_only_team(bekc_bin, tmp_path, monkeypatch):
    """A bekc cache this process may not write (as another user's is), chosen
    as the cache: the binary then names it as demoted, and the default cache,
    under tmp_path/xdg, as the one misses build into (lib/config/cache_choice;
    the binary's own tests make such a cache for real)."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "bekc-cache.json").write_text('{"bekc_cache": 1}\n')
    own = tmp_path / "xdg" / "bekc"
    choice = _cache_choice.CacheChoice(str(team), str(own), str(team))
    monkeypatch.setattr(_compat, "cache_choice", lambda binary, flag: choice)
    monkeypatch.setattr(_compat, "_CACHE_DIR_OVERRIDE", str(team))
    return team


def test_an_inline_source_a_read_only_cache_lacks_goes_to_the_default_cache(read_only_team,
                                                                            tmp_path):
    """bekc builds the misses of a read-only cache into the default cache
    (docs/cache.md, "Layered caches"); the source goes there too."""
    path = _compat._inline_source_path("int z;\n", "mod", ".cpp")
    assert path.startswith(str(tmp_path / "xdg" / "bekc" / "src")), path
    _compat._ensure_source_file(path, "int z;\n")
    assert open(path).read() == "int z;\n"
    assert sorted(os.listdir(read_only_team)) == ["bekc-cache.json"]


def test_an_inline_source_a_read_only_cache_holds_is_used_there(read_only_team):
    """Its builds are keyed by the source's path: the team's own path hits."""
    sha_dir = os.path.dirname(_inline_sources.inline_source_path(str(read_only_team), "int w;\n",
                                                                 "mod", ".cpp"))
    os.makedirs(sha_dir)
    with open(os.path.join(sha_dir, "mod.cpp"), "w") as f:
        f.write("int w;\n")
    path = _compat._inline_source_path("int w;\n", "mod", ".cpp")
    assert path == os.path.join(sha_dir, "mod.cpp")
    _compat._ensure_source_file(path, "int w;\n")  # already there: nothing written
