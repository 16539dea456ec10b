"""``python -m bekc ARGS``: runs the ``bekc`` binary the package finds
(``bekc.find_binary``: the one installed with this package's wheel, for one)
with ARGS, in place of this process."""

from __future__ import annotations

import os
import sys

from ._binary import find_binary
from ._errors import BinaryNotFoundError


def main() -> None:
    try:
        binary = find_binary()
    except BinaryNotFoundError as e:
        print(f"python -m bekc: error: {e}", file=sys.stderr)
        sys.exit(127)
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
