"""Run a command with the system CUDA hidden: ``hide_system_cuda.py [--compilers] CMD ARG...``.

It first enters a private mount namespace of its own (``unshare -m
--propagation private``, as root), so nothing it mounts is ever seen outside,
even when it is run by hand. It puts an empty
tmpfs over the directory /usr/local/cuda resolves to and /dev/null over the
nvcc wrappers some machines keep in /usr/local/bin, then executes CMD: a
machine with no CUDA toolkit but what pip installed. With ``--compilers``,
every host C++ compiler goes too (g++, c++, clang++, gcc, cc, clang and
their versioned names: /dev/null over the file each resolves to), as on a
machine with no compiler at all. Exit status 97 when no private
namespace can be made or a mount fails (the caller skips).
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

CUDA = "/usr/local/cuda"
WRAPPERS = ("/usr/local/bin/nvcc",)
COMPILER_GLOBS = ("/usr/bin/*g++*", "/usr/bin/*gcc*", "/usr/bin/c++", "/usr/bin/cc",
                  "/usr/bin/*clang*", "/usr/local/bin/*g++*", "/usr/local/bin/*clang*",
                  "/usr/lib/llvm-*/bin/clang*", "/usr/lib/gcc/*/*/cc1plus")


def compilers() -> set:
    """The files the compilers' names resolve to."""
    found = set()
    for pattern in COMPILER_GLOBS:
        for path in glob.glob(pattern):
            real = os.path.realpath(path)
            if os.path.isfile(real):
                found.add(real)
    return found


def mount(*argv: str) -> None:
    if subprocess.run(["mount", *argv], stdin=subprocess.DEVNULL).returncode != 0:
        sys.exit(97)


OUTER_NS = "BEKC_HIDE_OUTER_MOUNT_NS"


def private_namespace(argv) -> None:
    """Re-runs this script in a new private mount namespace unless it already
    runs in one it made; never mounts in the caller's namespace."""
    here = os.readlink("/proc/self/ns/mnt")
    outer = os.environ.pop(OUTER_NS, None)
    if outer is None:
        env = dict(os.environ, **{OUTER_NS: here})
        try:
            os.execvpe("unshare", ["unshare", "-m", "--propagation", "private", sys.executable,
                                   os.path.abspath(__file__), *argv], env)
        except OSError:
            sys.exit(97)
    if outer == here:  # unshare ran but made no namespace
        sys.exit(97)


def main(argv) -> None:
    private_namespace(argv)
    hide_compilers = bool(argv) and argv[0] == "--compilers"
    if hide_compilers:
        argv = argv[1:]
    if not argv:
        sys.exit("usage: hide_system_cuda.py [--compilers] CMD [ARG...]")
    if os.path.isdir(CUDA):
        mount("-t", "tmpfs", "tmpfs", os.path.realpath(CUDA))
    for wrapper in WRAPPERS:
        if os.path.isfile(wrapper):
            mount("--bind", "/dev/null", wrapper)
    if hide_compilers:
        for compiler in sorted(compilers()):
            mount("--bind", "/dev/null", compiler)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
