"""--compile-commands for clangd, and progress lines on a terminal."""
import json
import os
import pty
import subprocess

KERNEL = r"""
#include "brainevent/common.h"
#include "%s.h"
// @BE %s
void %s(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] * SCALE;
}
"""


def write_inputs(d, names):
    inc = d / "include"
    inc.mkdir(exist_ok=True)
    paths = []
    for n in names:
        (inc / f"{n}.h").write_text("#define SCALE 2.0f\n")
        p = d / f"{n}.cpp"
        p.write_text(KERNEL % (n, n, n))
        paths.append(p)
    return inc, paths


def test_compile_commands_let_clang_see_be_tensor(bekc_path, tmp_path):
    inc, (src,) = write_inputs(tmp_path, ["k"])
    cc = tmp_path / "compile_commands.json"
    cc.write_text(json.dumps([{"directory": "/", "file": "/other.cpp", "arguments": ["cc", "-c", "/other.cpp"]}]))
    r = subprocess.run([str(bekc_path), "build", str(src), "-I", str(inc), "--cache-dir",
                        str(tmp_path / "c"), "--compile-commands", str(cc)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    entries = json.loads(cc.read_text())
    assert [e["file"] for e in entries] == ["/other.cpp", str(src)]  # merged, not replaced
    ours = entries[1]
    runtime = [a[2:] for a in ours["arguments"] if a.startswith("-I") and "runtime" in a]
    assert runtime and os.path.isfile(os.path.join(runtime[0], "brainevent", "common.h"))
    assert f"-I{inc}" in ours["arguments"]
    # The entry really compiles: what clangd would parse, g++ accepts.
    args = ["g++"] + ours["arguments"][1:-2] + ["-fsyntax-only", str(src)]
    check = subprocess.run(args, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def run_on_terminal(argv):
    """Runs argv with stderr on a pseudo-terminal; returns (exit code, what it printed there)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(), out.decode(errors="replace")


def test_progress_lines_on_a_terminal_only(bekc_path, tmp_path):
    _, paths = write_inputs(tmp_path, ["a", "b"])
    argv = [str(bekc_path), "build", *map(str, paths), "-I", str(tmp_path / "include"),
            "--name", "two", "-j1", "--cache-dir", str(tmp_path / "c")]
    rc, tty_err = run_on_terminal(argv + ["--force"])
    assert rc == 0, tty_err
    # One line per process of the build graph as it starts, numbered over all
    # of them: bekc's runtime object (first build with this compiler), each
    # input, the link.
    assert tty_err.splitlines() == [
        "[1/5] c++ bekc/handler_rt.cpp", f"[2/5] c++ {paths[0]}", f"[3/5] c++ {paths[1]}",
        "[4/5] c++ bekc_handlers.cpp", "[5/5] link libtwo.so"], tty_err
    piped = subprocess.run(argv + ["--force"], capture_output=True, text=True)
    assert piped.returncode == 0 and "[1/" not in piped.stderr  # quiet when not a terminal
    rc, quiet = run_on_terminal(argv + ["--force", "-q"])
    assert rc == 0 and "[1/" not in quiet
