"""Runs the code blocks of README.md, docs/tutorial.md, docs/migrating.md,
docs/python.md and the tagged example of docs/cpp_api.md.

Each fenced block carries a tag after its language (```` ```python tutorial-cpu ````),
and sources a ``file=NAME``:

* a block with ``file=NAME`` is written to NAME in a fresh working directory;
* an ``sh`` block is a list of commands, one per line (``#`` lines are
  comments), each split with shlex and run as an argument vector: no shell, so
  no pipes, redirections or variables. ``bekc`` is the binary under test,
  ``python`` the interpreter running the tests;
* the ``python`` blocks of a tag run, in order, as one script after the files
  and commands of that tag (so an ``sh`` block must not depend on Python).

``<doc>-cpu`` blocks run here in full. ``<doc>-gpu`` blocks need a GPU to run:
here their ``sh`` commands run (nvcc compiles, nothing is launched) and their
Python is only compiled; tests/gpu/test_tutorial_gpu.py runs them in full.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
TIMEOUT_S = 300
SHELL_ONLY = re.compile(r"[|&;<>$`*?]")  # what would need a shell


@dataclass
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    tags: List[str]
    file: Optional[str]
    text: str

    def where(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass
class Outcome:
    workdir: Path
    commands: List[subprocess.CompletedProcess] = field(default_factory=list)
    script: Optional[subprocess.CompletedProcess] = None


def parse_blocks(path: Path) -> List[Block]:
    """Every fenced code block of a Markdown file, with its info string parsed."""
    blocks: List[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(`{3,})(.*)$", lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).split()
        start = i
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"{path.name}:{start + 1}: unclosed code block"
        i += 1
        lang = info[0] if info else ""
        tags = [w for w in info[1:] if not w.startswith("file=")]
        files = [w[5:] for w in info[1:] if w.startswith("file=")]
        blocks.append(Block(path.name, start + 1, lang, tags, files[0] if files else None,
                            "\n".join(body) + "\n"))
    return blocks


def group(blocks: Sequence[Block], tag: str) -> List[Block]:
    return [b for b in blocks if tag in b.tags]


def doc_env(bekc_binary: Path, cache_dir: Path) -> Dict[str, str]:
    env = dict(os.environ)
    env.update(BEKC_CACHE_DIR=str(cache_dir), BEKC=str(bekc_binary), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "python")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def command_lines(block: Block) -> List[List[str]]:
    argvs = []
    for n, line in enumerate(block.text.splitlines()):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        assert not SHELL_ONLY.search(line), (
            f"{block.doc}:{block.line + 1 + n}: {line!r} needs a shell; keep documented "
            f"commands to one plain command per line")
        argvs.append(shlex.split(line))
    return argvs


def run_blocks(blocks: Sequence[Block], workdir: Path, bekc_binary: Path, cache_dir: Path,
               run_python: bool = True, python: str = sys.executable) -> Outcome:
    """Writes the files, runs the commands, then runs (or compiles) the Python."""
    assert blocks, "no blocks to run"
    workdir.mkdir(parents=True, exist_ok=True)
    env = doc_env(bekc_binary, cache_dir)
    outcome = Outcome(workdir)
    script = []
    for block in blocks:
        if block.file:
            target = workdir / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text, encoding="utf-8")
        elif block.lang in ("sh", "bash", "console", "shell"):
            for argv in command_lines(block):
                if argv[0] == "bekc":
                    argv[0] = str(bekc_binary)
                elif argv[0] == "python":
                    argv[0] = python
                done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True,
                                      text=True, timeout=TIMEOUT_S)
                outcome.commands.append(done)
                assert done.returncode == 0, (
                    f"{block.where()}: {shlex.join(argv)} -> exit {done.returncode}\n"
                    f"{done.stdout}\n{done.stderr}")
        elif block.lang == "python":
            script.append(f"# ---- {block.where()}\n{block.text}")
        else:
            raise AssertionError(f"{block.where()}: a '{block.lang}' block needs file=NAME")
    if not script:
        return outcome
    source = "\n".join(script)
    path = workdir / "doc_blocks.py"
    path.write_text(source, encoding="utf-8")
    if not run_python:
        compile(source, str(path), "exec")
        return outcome
    done = subprocess.run([python, str(path)], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    outcome.script = done
    assert done.returncode == 0, (
        f"python blocks of {blocks[0].doc} failed (exit {done.returncode}); the script is "
        f"{path} (each block starts with a '# ---- doc:line' comment)\n"
        f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr[-6000:]}")
    return outcome


# --------------------------------------------------------------------------- tests
README = REPO / "README.md"
TUTORIAL = DOCS / "tutorial.md"
MIGRATING = DOCS / "migrating.md"
CPP_API = DOCS / "cpp_api.md"
PYTHON = DOCS / "python.md"


@pytest.mark.parametrize("doc,prefix", [(TUTORIAL, "tutorial"), (MIGRATING, "migrating"),
                                        (PYTHON, "python")],
                         ids=["tutorial", "migrating", "python"])
def test_every_block_is_tagged(doc, prefix):
    blocks = parse_blocks(doc)
    assert blocks, f"{doc} has no code blocks"
    for b in blocks:
        tags = [t for t in b.tags if t.startswith(prefix + "-")]
        assert tags in ([f"{prefix}-cpu"], [f"{prefix}-gpu"]), (
            f"{b.where()}: tag the block with {prefix}-cpu or {prefix}-gpu "
            f"(info string {b.lang} {' '.join(b.tags)})")
        if b.lang not in ("python", "sh"):
            assert b.file, f"{b.where()}: a {b.lang} block needs file=NAME"


def test_tutorial_cpu_blocks_run(bekc_path, tmp_path):
    out = run_blocks(group(parse_blocks(TUTORIAL), "tutorial-cpu"), tmp_path / "work",
                     bekc_path, tmp_path / "cache")
    assert "[3. 3. 3. 3. 3.]" in out.script.stdout
    assert "[4. 4. 4.]" in out.script.stdout
    # Section 6: the gradient through jax.custom_vjp, the error it replaces
    # (naming the target and the docs), and a batched call.
    assert "[3. 3. 3. 3.]" in out.script.stdout
    assert "JAX cannot differentiate cpu_kernels.scale_by" in out.script.stdout
    assert "docs/python.md#batching-and-gradients" in out.script.stdout
    assert "[ 4.  6.  8. 10.]" in out.script.stdout
    assert (out.workdir / "build" / "cpu_kernels" / "manifest.json").is_file()


def test_tutorial_gpu_blocks_build(bekc_path, nvcc, tmp_path):
    """Builds the CUDA sources with nvcc as the tutorial says; runs nothing on a GPU."""
    import json
    blocks = group(parse_blocks(TUTORIAL), "tutorial-gpu")
    assert {b.file for b in blocks if b.file} == {"my_kernels.cu", "scale_ops.cu"}
    out = run_blocks(blocks, tmp_path / "work", bekc_path, tmp_path / "cache",
                     run_python=False)
    for module in ("my_kernels", "scale_ops", "fast_kernels"):
        manifest = json.loads((out.workdir / "build" / module / "manifest.json").read_text())
        assert {t["platform"] for t in manifest["targets"]} == {"CUDA"}, module
        assert manifest["name"] == module
    inspect = [c for c in out.commands if c.args[1] == "inspect"]
    assert inspect and "scale_by" in inspect[0].stdout


def test_migrating_cpu_blocks_run(bekc_path, tmp_path):
    run_blocks(group(parse_blocks(MIGRATING), "migrating-cpu"), tmp_path / "work",
               bekc_path, tmp_path / "cache")


def test_migrating_gpu_blocks_compile(bekc_path, tmp_path):
    run_blocks(group(parse_blocks(MIGRATING), "migrating-gpu"), tmp_path / "work",
               bekc_path, tmp_path / "cache", run_python=False)


def test_cpp_api_example_runs(bekc_path, tmp_path):
    """cpp_api.md's fragments are illustrations; its complete example runs."""
    out = run_blocks(group(parse_blocks(CPP_API), "cpp_api-cpu"), tmp_path / "work",
                     bekc_path, tmp_path / "cache")
    print(out.script.stdout)
    assert "[ 6. 22. 38.]" in out.script.stdout


def test_python_page_runs(bekc_path, tmp_path):
    """docs/python.md: the typed call, both errors, every way to declare a
    vmap_method, and gradients through jax.custom_vjp and bekc.defjvp."""
    out = run_blocks(group(parse_blocks(PYTHON), "python-cpu"), tmp_path / "work",
                     bekc_path, tmp_path / "cache")
    lines = out.script.stdout
    assert "[0. 3. 6. 9.]" in lines and "[ 3. 12.]" in lines
    assert "jax.vmap cannot batch ops.mul" in lines
    assert "[0. 1. 2. 3.] [3. 3. 3. 3.]" in lines


README_TAGS = {
    "readme-cpu": "run here in full",
    "readme-gpu": "commands run here (nvcc compiles), Python on a GPU (tests/gpu)",
    "readme-wheel": "run by tests/integration/test_wheel.py",
    "readme-ci": "the scripts CI runs",
}


def readme_workdir(tmp_path: Path) -> Path:
    """The README's commands run from the repository root: its examples/ is there."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(REPO / "examples")
    return work


def test_every_readme_block_is_tagged_and_fenced():
    blocks = parse_blocks(README)
    for b in blocks:
        tags = [t for t in b.tags if t.startswith("readme-")]
        assert len(tags) == 1 and tags[0] in README_TAGS, (
            f"{b.where()}: tag the block with one of {sorted(README_TAGS)}")
    assert {t for b in blocks for t in b.tags} == set(README_TAGS)
    # An indented code block would escape the tags: every example is fenced.
    previous = ""
    for n, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1):
        assert not (line.startswith("    ") and not previous.strip()), (
            f"README.md:{n}: an indented code block; fence it and tag it")
        previous = line
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    for b in group(blocks, "readme-ci"):
        for argv in command_lines(b):
            assert argv[0] == "bash" and (REPO / argv[1]).is_file(), b.where()
    assert "scripts/test.sh" in ci


def test_readme_cpu_blocks_run(bekc_path, tmp_path):
    out = run_blocks(group(parse_blocks(README), "readme-cpu"), readme_workdir(tmp_path),
                     bekc_path, tmp_path / "cache")
    assert out.script.stdout.splitlines() == ["[0. 3. 6. 9.]", "[0. 2. 4. 6.]",
                                             "[0.  0.5 1.  1.5]"]
    assert "all results correct" in out.commands[-1].stdout


def test_readme_gpu_blocks_build(bekc_path, nvcc, tmp_path):
    """The CUDA commands run (nvcc compiles; run.py registers the targets and
    calls none without a GPU); the Python is compiled, and run by tests/gpu."""
    blocks = parse_blocks(README)
    work = readme_workdir(tmp_path)
    run_blocks(group(blocks, "readme-cpu"), work, bekc_path, tmp_path / "cache")
    out = run_blocks(group(blocks, "readme-gpu"), work, bekc_path, tmp_path / "cache",
                     run_python=False)
    assert "all results correct" in out.commands[-1].stdout


def test_what_the_readmes_commands_write_in_a_checkout_is_ignored():
    """Running the README's commands in a checkout leaves `git status` clean:
    every directory they write to (`-o DIR`, `-w DIR`) is in .gitignore."""
    written = set()
    for b in parse_blocks(README):
        if b.lang != "sh":
            continue
        for argv in command_lines(b):
            for flag, value in zip(argv, argv[1:]):
                if flag in ("-o", "-w") and not os.path.isabs(value):
                    written.add(Path(value).parts[0])
    assert written, "the README's commands write no output directory any more"
    probe = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", *sorted(written)],
                           capture_output=True, text=True)
    if probe.returncode == 128:
        pytest.skip(f"not a git checkout: {probe.stderr.strip()}")
    ignored = set(probe.stdout.split())
    assert ignored == written, f"add {sorted(written - ignored)} to .gitignore"
