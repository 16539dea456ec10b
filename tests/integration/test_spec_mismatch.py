"""A written spec that does not fit the signature fails the build at the spec
(SPEC §1.3): `// @BE dbl ret arg` on
`void dbl(const BE::Tensor x, BE::Tensor out)` compiles as C++ (top-level
const is not part of a function's type), so bekc's scanner compares each
token with the parameter as written, before any compiler runs. The
function-pointer check in the wrapper stays as a second line of defence.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

FAST = "-O0"
REPO = Path(__file__).resolve().parents[2]

SWAPPED = """\
#include "brainevent/common.h"

// @BE dbl ret arg{stream_token}
void dbl(const BE::Tensor x, BE::Tensor out{stream_param}) {{
    (void)x; (void)out;
}}
"""

RET_ON_INPUT = ("'ret' does not match parameter 1, 'const BE::Tensor x': 'ret' is an output, "
                "and a const BE::Tensor is an input")


@pytest.mark.parametrize("suffix", ["cpp", "cu"])
def test_swapped_inline_spec_fails_at_the_annotation(bekc, kernels, suffix, request):
    cuda = suffix == "cu"
    if cuda:
        request.getfixturevalue("nvcc")
    src = kernels.text(bekc.workdir / f"swapped.{suffix}", SWAPPED.format(
        stream_token=" stream" if cuda else "", stream_param=", int64_t stream" if cuda else ""))
    r = bekc.build(src, FAST, *(["--arch", "sm_90"] if cuda else []), ok=False)
    assert r.rc == 1, r.describe()
    # file:line:col of the 'ret' token in the annotation, the line, a caret and the fix.
    assert f"{src}:3:12: error: function 'dbl': {RET_ON_INPUT}\n" in r.stderr, r.stderr
    assert "    // @BE dbl ret arg" in r.stderr
    assert "\n               ^\n" in r.stderr
    assert "note: write 'arg' for an input" in r.stderr
    # Caught by the scanner: no compiler ran, nothing was cached.
    assert "invalid conversion" not in r.stderr and "error:" not in r.stderr.split("note:")[1]
    assert bekc.entries() == []
    # inspect reports the same, without compiling.
    ins = bekc.run("inspect", src)
    assert ins.returncode == 1 and RET_ON_INPUT in ins.stderr, ins.stderr


def test_swapped_function_option_fails_at_the_parameter(bekc, kernels):
    src = kernels.text(bekc.workdir / "plain.cpp", """\
        #include "brainevent/common.h"

        void dbl(const BE::Tensor x,
                 BE::Tensor out) {}
        """)
    r = bekc.build(src, FAST, "--function", "dbl=ret,arg", ok=False)
    assert r.rc == 1
    assert (f"{src}:3:10: error: function 'dbl' (spec from --function): {RET_ON_INPUT}\n"
            in r.stderr), r.stderr
    specs = bekc.workdir / "specs.json"
    specs.write_text(json.dumps({"dbl": ["args", "args"]}))
    r = bekc.build(src, FAST, "--functions", specs, ok=False)
    assert r.rc == 1
    assert (f"{src}:4:10: error: function 'dbl' (spec from {specs}): 'args' does not match "
            "parameter 2, 'BE::Tensor out'") in r.stderr, r.stderr
    assert bekc.entries() == []


def test_overloads_are_ambiguous(bekc, kernels):
    src = kernels.text(bekc.workdir / "overloads.cpp", """\
        #include "brainevent/common.h"
        // @BE f
        // @BE g
        void g(BE::Tensor y) {}
        void f(BE::Tensor y, int a);
        void f(BE::Tensor y, float b) {}
        """)
    r = bekc.build(src, FAST, ok=False)
    assert r.rc == 1
    assert (f"{src}:2:8: error: function 'f' is ambiguous: {src}:5 and {src}:6 declare it "
            "with different parameters") in r.stderr, r.stderr


def test_the_compiler_still_checks_types_bekc_cannot_see(bekc, kernels):
    # size_t is not a type bekc reads: the wrapper's function-pointer check
    # reports it, at the annotation's line.
    src = kernels.text(bekc.workdir / "other.cpp", """\
        #include <cstddef>
        #include "brainevent/common.h"

        // @BE f arg ret attr.n:int32
        void f(const BE::Tensor x, BE::Tensor out, size_t n) {}
        """)
    r = bekc.build(src, FAST, ok=False)
    assert r.rc == 1
    assert re.search(rf"{re.escape(str(src))}:4:\d+: error: invalid conversion", r.stderr), r.stderr
    assert bekc.entries() == []


NAMESPACED = """\
#include "brainevent/common.h"

// @BE dbl
void dbl(const BE::Tensor x, BE::Tensor out);

namespace detail {
// Another function: its parameters in the other order.
inline void dbl(BE::Tensor out, const BE::Tensor x) {
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = -1.0f;
    (void)x;
}
}  // namespace detail

void dbl(const BE::Tensor x, BE::Tensor out) {
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = 2.0f * in[i];
}
"""

RUN = """\
import sys
import jax, jax.numpy as jnp, numpy as np
import bekc

mod = bekc.load(sys.argv[1])
x = jnp.arange(4, dtype=jnp.float32)
out = mod.dbl(x)
np.testing.assert_allclose(np.asarray(out), [0.0, 2.0, 4.0, 6.0])
np.testing.assert_allclose(np.asarray(x), [0.0, 1.0, 2.0, 3.0])
print("ok")
"""


def test_a_namespaced_function_of_the_same_name_is_another_function(bekc, kernels, tmp_path):
    pytest.importorskip("jax")
    src = kernels.text(bekc.workdir / "namespaced.cpp", NAMESPACED)
    ins = bekc.run("inspect", "--json", src)
    assert ins.returncode == 0, ins.stderr
    (fn,) = json.loads(ins.stdout)["files"][0]["functions"]
    assert (fn["name"], fn["arg_spec"], fn["line"]) == ("dbl", ["arg", "ret"], 3)
    b = bekc.build(src, FAST)
    script = tmp_path / "run.py"
    script.write_text(RUN)
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, str(script), str(b.manifest_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr
