"""docs/tutorial.md and docs/migrating.md on the GPU: every block tagged
``tutorial-gpu`` / ``migrating-gpu`` runs in full (files written, `bekc build`
commands run, then the Python blocks as one script that calls the kernels).

The block runner is tests/integration/test_tutorial.py's, which runs the CPU
blocks in CI and only builds the CUDA ones there.
"""
import importlib.util
import pathlib
import sys

import pytest

from conftest import BEKC

HERE = pathlib.Path(__file__).resolve().parent
RUNNER = HERE.parent / "integration" / "test_tutorial.py"


def _runner():
    spec = importlib.util.spec_from_file_location("bekc_doc_blocks", RUNNER)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


docs = _runner()


@pytest.mark.parametrize("doc,tag", [(docs.TUTORIAL, "tutorial-gpu"),
                                     (docs.MIGRATING, "migrating-gpu")],
                         ids=["tutorial", "migrating"])
def test_doc_gpu_blocks_run(doc, tag, tmp_path):
    blocks = docs.group(docs.parse_blocks(doc), tag)
    out = docs.run_blocks(blocks, tmp_path / "work", pathlib.Path(BEKC), tmp_path / "cache",
                          python=sys.executable)
    if tag == "tutorial-gpu":
        assert "[3. 3. 3. 3. 3.]" in out.script.stdout


def test_readme_gpu_blocks_run(tmp_path):
    """README.md's CUDA example, jax.jit with static_argnames included, on the GPU."""
    blocks = docs.parse_blocks(docs.README)
    work = docs.readme_workdir(tmp_path)
    docs.run_blocks(docs.group(blocks, "readme-cpu"), work, pathlib.Path(BEKC),
                    tmp_path / "cache", python=sys.executable)
    out = docs.run_blocks(docs.group(blocks, "readme-gpu"), work, pathlib.Path(BEKC),
                          tmp_path / "cache", python=sys.executable)
    assert "all results correct" in out.commands[-1].stdout


@pytest.mark.parametrize("doc,tag", [(docs.README, "readme-cpu"), (docs.TUTORIAL, "tutorial-cpu"),
                                     (docs.MIGRATING, "migrating-cpu"),
                                     (docs.DOCS / "cpp_api.md", "cpp_api-cpu")],
                         ids=["readme", "tutorial", "migrating", "cpp_api"])
def test_doc_cpu_blocks_run_on_a_machine_with_a_gpu(doc, tag, tmp_path):
    """A .cpp example copied onto a GPU machine still runs: JAX would put its arrays on the GPU,
    where a CPU-only module has no handler, unless the example says where to run."""
    blocks = docs.group(docs.parse_blocks(doc), tag)
    work = docs.readme_workdir(tmp_path) if doc == docs.README else tmp_path / "work"
    docs.run_blocks(blocks, work, pathlib.Path(BEKC), tmp_path / "cache", python=sys.executable)
