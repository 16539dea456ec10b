"""Run a command with the system CUDA hidden: ``hide_system_cuda.py CMD ARG...``.

Meant to run inside a private mount namespace (``unshare -m --propagation
private``, as root), so nothing it mounts is seen outside. It puts an empty
tmpfs over the directory /usr/local/cuda resolves to and /dev/null over the
nvcc wrappers some machines keep in /usr/local/bin, then executes CMD: a
machine with no CUDA toolkit but what pip installed. Exit status 97 when a
mount fails (the caller skips).
"""

from __future__ import annotations

import os
import subprocess
import sys

CUDA = "/usr/local/cuda"
WRAPPERS = ("/usr/local/bin/nvcc",)


def mount(*argv: str) -> None:
    if subprocess.run(["mount", *argv], stdin=subprocess.DEVNULL).returncode != 0:
        sys.exit(97)


def main(argv) -> None:
    if not argv:
        sys.exit("usage: hide_system_cuda.py CMD [ARG...]")
    if os.path.isdir(CUDA):
        mount("-t", "tmpfs", "tmpfs", os.path.realpath(CUDA))
    for wrapper in WRAPPERS:
        if os.path.isfile(wrapper):
            mount("--bind", "/dev/null", wrapper)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
