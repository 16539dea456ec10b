"""Handler symbol names: exports `f` and `f_nograph` in one module.

Every export `f` gets two handlers, `bekc_ffi_f` and `bekc_ffi_f_nograph`, so
an export named `f_nograph` next to `f` would define `bekc_ffi_f_nograph`
twice. bekc must say so at the user's annotation, never leave it to a
compiler or linker error about generated files.
"""

from __future__ import annotations

import subprocess

from support.binaries import bekc_binary

FOO = """#include "brainevent/common.h"
// @BE foo
void foo(const BE::Tensor a, BE::Tensor out) {}
"""
FOO_NOGRAPH = """#include "brainevent/common.h"
// @BE foo_nograph
void foo_nograph(const BE::Tensor a, BE::Tensor out) {}
"""


def bekc(*args, cwd):
    return subprocess.run([str(bekc_binary()), "build", *args, "--cache-dir", str(cwd / "cache")], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_clash_in_one_file_is_a_spec_error_at_the_annotation(tmp_path):
    (tmp_path / "k.cpp").write_text(FOO + FOO_NOGRAPH.replace('#include "brainevent/common.h"\n', ""))
    r = bekc("k.cpp", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert ("k.cpp:4: error: exported functions 'foo' and 'foo_nograph' would both define the "
            "handler symbol 'bekc_ffi_foo_nograph'") in r.stderr
    assert "bekc.cpp" not in r.stderr  # no generated file named


def test_distinct_names_build(tmp_path):
    (tmp_path / "k.cpp").write_text(FOO + FOO_NOGRAPH.replace('#include "brainevent/common.h"\n', "")
                                    .replace("foo_nograph", "foo_graphless"))
    r = bekc("k.cpp", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_clash_across_files_is_a_spec_error_at_the_annotation(tmp_path):
    (tmp_path / "a.cpp").write_text(FOO)
    (tmp_path / "b.cpp").write_text(FOO_NOGRAPH)
    r = bekc("a.cpp", "b.cpp", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "b.cpp:2: error:" in r.stderr and "bekc_ffi_foo_nograph" in r.stderr
    assert "multiple definition" not in r.stderr
