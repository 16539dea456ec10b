"""What a script needs from the command line (docs/cli.md, "Scripting"):
JSON from `cache ls`, `cache stats` and `doctor`; a JSON object on standard
output for every failure of a command given `--json`; shell completion and a
man page generated from the CLI's own definitions; and a `--version` that
names the commit and the toolchain."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

FAST = "-O0"
REPO = Path(__file__).resolve().parents[2]


def json_out(proc) -> dict:
    """The one JSON object a command printed on standard output."""
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, f"expected one line of JSON on stdout\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[0])


# --------------------------------------------------------------------------- cache ls / stats
def test_cache_ls_json_lists_each_entry_and_the_totals(bekc, kernels):
    a = bekc.build(kernels.cpp(bekc.workdir / "alpha.cpp"), FAST)
    proc = bekc.cache("ls", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json_out(proc)
    assert list(out) == ["cache", "entries", "entry_bytes", "total_bytes"]
    assert out["cache"] == str(bekc.cache_dir)
    [entry] = out["entries"]
    assert list(entry) == ["name", "key", "path", "bytes", "targets", "last_use", "problem"]
    assert entry["name"] == "alpha" and entry["key"] == a.key
    assert Path(entry["path"]) == a.manifest_path.parent
    assert entry["targets"] == 1 and entry["problem"] is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry["last_use"]), entry
    assert 0 < entry["bytes"] == out["entry_bytes"] <= out["total_bytes"]


def test_cache_ls_json_of_a_cache_not_made_yet(bekc):
    out = json_out(bekc.cache("ls", "--json"))
    assert out["entries"] == [] and out["entry_bytes"] == 0


def test_cache_stats_json_counts_hits_and_misses(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    bekc.build(src, FAST)
    bekc.build(src, FAST)
    proc = bekc.cache("stats", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json_out(proc)
    assert list(out) == ["cache", "counters", "entries", "direct_records", "entry_bytes",
                         "total_bytes", "max_size"]
    assert out["counters"] == {"hits": 1, "local_hits": 1, "remote_hits": 0, "misses": 1,
                               "errors": 0, "remote_waits": 0, "remote_waits_served": 0,
                               "wait_seconds": 0.0, "saved_seconds": 0.0, "zeroed_at": None}
    assert out["entries"] == 1 and out["direct_records"] >= 1
    assert out["max_size"] == {"bytes": 5_000_000_000, "source": "default"}
    zeroed = json_out(bekc.cache("stats", "--zero", "--json"))
    assert zeroed == {"cache": str(bekc.cache_dir), "zeroed": True}
    assert json_out(bekc.cache("stats", "--json"))["counters"]["misses"] == 0


def test_doctor_json_names_every_part(bekc):
    proc = bekc.run("doctor", "--json", "--cache-dir", bekc.cache_dir, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json_out(proc)
    assert list(out) == ["bekc", "nvcc", "host_compiler", "gpus", "caches", "runtime_headers",
                         "python"]
    assert list(out["bekc"]) == ["version", "commit"]
    cxx = out["host_compiler"]
    assert cxx["found"] is True and Path(cxx["path"]).is_absolute() and cxx["version"], cxx
    nvcc = out["nvcc"]
    assert set(nvcc) >= {"found"} and (nvcc["found"] is False) == ("error" in nvcc), nvcc
    assert list(out["gpus"]) == ["archs", "how"]
    assert out["caches"][0] == {"path": str(bekc.cache_dir), "role": "own", "entries": 0,
                                "bytes": 0, "problem": None}
    assert set(out["python"]) == {"path", "jax", "backend", "problem"}


def test_doctor_json_without_a_compiler_says_so_and_succeeds(bekc):
    env = dict(os.environ, CXX="/nonexistent/c++", BEKC_NVCC="/nonexistent/nvcc")
    out = json_out(bekc.run("doctor", "--json", "--cache-dir", bekc.cache_dir, env=env,
                            timeout=120))
    assert out["host_compiler"]["found"] is False
    assert "/nonexistent/c++" in out["host_compiler"]["error"]
    assert out["nvcc"]["found"] is False and "/nonexistent/nvcc" in out["nvcc"]["error"]


# --------------------------------------------------------------------------- failures as JSON
def failed(bekc, *args, cwd=None, env=None):
    """`bekc ARGS` that fails: (its JSON object, the process)."""
    proc = bekc.run(*args, cwd=cwd, env=env)
    assert proc.returncode != 0, proc.stdout
    out = json_out(proc)
    assert list(out) == ["error", "exit_code", "diagnostics", "stderr"], out
    assert out["exit_code"] == proc.returncode
    assert list(out["error"]) == ["kind", "message", "file", "line", "column", "notes"]
    assert proc.stderr.startswith(out["stderr"]) and (
        out["stderr"] == proc.stderr or len(out["stderr"].encode()) == 1 << 20), \
        "the JSON holds what was printed on stderr, its first MiB"
    return out, proc


def test_failed_build_json_for_a_compile_error_lists_the_compilers_diagnostics(bekc, kernels):
    src = kernels.text(bekc.workdir / "broken.cpp", """\
        #include "brainevent/common.h"
        // @BE f
        void f(const BE::Tensor x, BE::Tensor out) {
            int y = not_declared_anywhere;
        }
        """)
    out, proc = failed(bekc, "build", src, FAST, "--json", "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 1
    assert out["error"]["kind"] == "source"
    assert out["error"]["message"].startswith("compilation failed")
    mine = [d for d in out["diagnostics"] if d["file"] == str(src)]
    assert mine and mine[0]["severity"] == "error" and mine[0]["line"] == 4, out["diagnostics"]
    assert mine[0]["column"] > 0 and "not_declared_anywhere" in mine[0]["message"]
    assert "not_declared_anywhere" in proc.stderr, "stderr keeps the human text"


def test_failed_build_json_keeps_a_bounded_copy_of_a_flood_of_errors(bekc, kernels):
    """With -v every compiler line reaches standard error; the JSON's copy of
    it stops at 1 MiB, with the first errors in it."""
    body = "\n".join(f"#error flood_{i} " + "x" * 400 for i in range(3000))
    src = kernels.text(bekc.workdir / "flood.cpp", '#include "brainevent/common.h"\n'
                       "// @BE f\nvoid f(const BE::Tensor x, BE::Tensor out) {}\n" + body)
    out, proc = failed(bekc, "build", src, FAST, "-v", "--json", "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 1
    assert len(proc.stderr) > 2 << 20, "the flood reaches standard error whole"
    assert len(out["stderr"].encode()) <= 1 << 20
    assert "flood_0 " in out["stderr"]
    assert any(d["line"] == 4 for d in out["diagnostics"])


def test_failed_build_json_for_a_wrong_spec_carries_file_line_and_column(bekc, kernels):
    src = kernels.text(bekc.workdir / "spec.cpp", """\
        #include "brainevent/common.h"
        // @BE f arg rett
        void f(const BE::Tensor x, BE::Tensor out) {}
        """)
    out, proc = failed(bekc, "build", src, FAST, "--json", "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 1
    error = out["error"]
    assert error["kind"] == "source" and error["file"] == str(src), error
    assert error["line"] == 2 and error["column"] > 0 and "rett" in error["message"], error
    assert out["diagnostics"][0]["file"] == str(src)
    assert any("ret" in n for n in out["diagnostics"][0]["notes"]), out["diagnostics"]


@pytest.mark.parametrize("args, kind, code, words", [
    (["build", "--json", "k.cpp", "--fastmath"], "usage", 2, "did you mean --fast-math"),
    (["build", "--json"], "usage", 2, "needs at least one input"),
    (["build", "--json", "k.cpp", "-O", "7"], "usage", 2, "-O"),
    (["build", "--json", "missing.cpp"], "usage", 2, "no such file"),
    (["build", "--json", "k.cpp", "--cxx", "/nonexistent/g++"], "toolchain", 3, "/nonexistent/g++"),
    (["cache", "ls", "--json", "--cache-dir", "{notcache}"], "cache", 4, "not a bekc cache"),
    (["doctor", "--json", "--cache-dir", ""], "usage", 2, "non-empty"),
], ids=["unknown-option", "no-input", "bad-level", "missing-input", "toolchain", "not-a-cache",
        "empty-value"])
def test_every_failure_with_json_is_a_json_object_on_stdout(bekc, kernels, args, kind, code,
                                                            words):
    kernels.cpp(bekc.workdir / "k.cpp")
    notcache = bekc.workdir / "notcache"
    notcache.mkdir()
    (notcache / "precious.txt").write_text("mine")
    args = [a.format(notcache=notcache) for a in args]
    if args[0] == "build":
        args += ["--cache-dir", str(bekc.cache_dir)]
    out, proc = failed(bekc, *args)
    assert (proc.returncode, out["error"]["kind"]) == (code, kind), out
    assert words in out["error"]["message"] + "".join(out["error"]["notes"]), out


def test_failure_without_json_prints_nothing_on_stdout(bekc):
    proc = bekc.run("build", "missing.cpp", "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 2 and proc.stdout == ""


# --------------------------------------------------------------------------- completion, man page
def help_tree(bekc, path=()):
    """{command path: (subcommands, options)} read from `bekc PATH --help`."""
    text = bekc.run(*path, "--help").stdout
    options, subcommands = set(), []
    section = None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":") if line.endswith(":") else None
            continue
        words = line.split()
        if not words:
            continue
        if section == "Subcommands":
            subcommands.append(words[0])
        elif section == "Options" and words[0].startswith("-"):
            options.update(words[0].split(","))
    tree = {path: (subcommands, options)}
    for sub in subcommands:
        tree.update(help_tree(bekc, (*path, sub)))
    return tree


@pytest.fixture(scope="module")
def cli_tree(bekc_path, tmp_path_factory):
    class Runner:
        def run(self, *args):
            return subprocess.run([str(bekc_path), *args], capture_output=True, text=True,
                                  timeout=60)
    return help_tree(Runner())


def test_help_tree_reads_the_commands_and_their_options(cli_tree):
    assert {"build", "cache", "completion", "man"} <= set(cli_tree[()][0])
    assert {"--fast-math", "-O", "--json", "-I"} <= cli_tree[("build",)][1]
    assert "--json" in cli_tree[("cache", "ls")][1]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_names_every_command_and_option(bekc, cli_tree, shell):
    proc = bekc.run("completion", shell)
    assert proc.returncode == 0, proc.stderr
    script = proc.stdout
    for path, (subcommands, options) in cli_tree.items():
        for word in [*subcommands, *options]:
            if shell == "fish" and word.startswith("-"):  # complete ... -l name -s O
                word = ("-l " + word[2:]) if word.startswith("--") else ("-s " + word[1:])
            assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", script), (shell, path, word)
    assert "generated by 'bekc completion" in script


def test_completion_with_an_unknown_shell_is_a_usage_error(bekc):
    proc = bekc.run("completion", "tcsh")
    assert proc.returncode == 2 and "bash, zsh or fish" in proc.stderr


def bash_complete(script: str, words: list, tmp_path: Path) -> list:
    """What bash offers for the last of `words` with the generated script loaded."""
    file = tmp_path / "bekc.bash"
    file.write_text(script)
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = (f"source {file}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
               f"COMP_LINE=\"${{COMP_WORDS[*]}}\"; _bekc; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    proc = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True,
                          cwd=tmp_path, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_bash_completion_completes_commands_options_and_files(bekc, tmp_path):
    script = bekc.run("completion", "bash").stdout
    assert subprocess.run(["bash", "-n", "-c", script]).returncode == 0
    (tmp_path / "kernels.cu").write_text("")
    assert bash_complete(script, ["bekc", "bu"], tmp_path) == ["build"]
    assert bash_complete(script, ["bekc", "cache", "l"], tmp_path) == ["ls"]
    assert bash_complete(script, ["bekc", "build", "--fast"], tmp_path) == ["--fast-math"]
    assert "--cache-dir" in bash_complete(script, ["bekc", "cache", "ls", "--c"], tmp_path)
    assert bash_complete(script, ["bekc", "build", "kern"], tmp_path) == ["kernels.cu"]
    # An option's value is no command: here "ls" is the cache directory.
    assert bash_complete(script, ["bekc", "cache", "--cache-dir", "ls", "l"], tmp_path) == ["ls"]
    assert bash_complete(script, ["bekc", "cache", "ls", "--cache-dir", "kern"],
                         tmp_path) == ["kernels.cu"]


def test_man_page_names_every_command_and_option(bekc, cli_tree):
    proc = bekc.run("man")
    assert proc.returncode == 0, proc.stderr
    page = proc.stdout
    assert page.startswith(".TH BEKC 1 ")
    text = page.replace("\\-", "-").replace("\\&", "")
    for path, (subcommands, options) in cli_tree.items():
        if path:
            assert f"bekc {' '.join(path)}" in text, path
        for option in options:
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), (path, option)
    assert "EXIT STATUS" in page


def test_man_page_renders_without_warnings(bekc, tmp_path):
    if shutil.which("groff") is None:
        pytest.skip("no groff")
    page = tmp_path / "bekc.1"
    page.write_text(bekc.run("man").stdout)
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


# --------------------------------------------------------------------------- --version
def test_version_names_the_commit_and_the_toolchain(bekc):
    proc = bekc.run("--version")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"bekc \d+\.\d+\.\d+", lines[0]), lines
    fields = dict(line.split(": ", 1) for line in lines[1:])
    assert list(fields) == ["commit", "nvcc", "host compiler"], lines
    commit = fields["commit"].split()[0]
    if commit != "unknown" and (REPO / ".git").exists():
        known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e",
                                commit.removesuffix("-dirty") + "^{commit}"])
        assert known.returncode == 0, f"{commit} is no commit of this checkout"
    assert fields["host compiler"].startswith("/"), fields


def test_version_says_not_found_for_a_missing_toolchain_and_succeeds(bekc):
    env = dict(os.environ, CXX="/nonexistent/c++", BEKC_NVCC="/nonexistent/nvcc")
    proc = bekc.run("--version", env=env)
    assert proc.returncode == 0, proc.stderr
    fields = dict(line.split(": ", 1) for line in proc.stdout.splitlines()[1:])
    assert fields["nvcc"].startswith("not found"), fields
    assert fields["host compiler"].startswith("not found"), fields


def test_build_info_without_git_says_unknown(tmp_path):
    """A wheel or sdist build has no .git: the commit is 'unknown', and the build goes on."""
    if shutil.which("cmake") is None:
        pytest.skip("no cmake")
    out = tmp_path / "build_info.cpp"
    proc = subprocess.run(["cmake", f"-DSOURCE_DIR={tmp_path}", f"-DOUT={out}", "-P",
                           str(REPO / "cmake" / "build_info.cmake")],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, GIT_CEILING_DIRECTORIES=str(tmp_path.parent)))
    assert proc.returncode == 0, proc.stderr
    assert 'kBuildCommit = "unknown"' in out.read_text()
