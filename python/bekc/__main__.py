"""``python -m bekc ARGS``: runs the ``bekc`` binary the package finds
(``bekc.find_binary``: the one installed with this package's wheel, for one)
with ARGS, in place of this process.

``python -m bekc --cmakedir`` alone prints the directory of bekc's CMake
package instead (``bekc.get_cmake_dir``), for ``-Dbekc_DIR=$(...)``."""

from __future__ import annotations

import os
import sys

from ._binary import find_binary
from ._cmake import get_cmake_dir
from ._errors import BekcError, BinaryNotFoundError


def main() -> None:
    if sys.argv[1:] == ["--cmakedir"]:
        try:
            print(get_cmake_dir())
        except BekcError as e:
            print(f"python -m bekc: error: {e}", file=sys.stderr)
            sys.exit(1)
        return
    try:
        binary = find_binary()
    except BinaryNotFoundError as e:
        print(f"python -m bekc: error: {e}", file=sys.stderr)
        sys.exit(127)
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
