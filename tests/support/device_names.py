"""Names in device code that a module id is part of."""

from __future__ import annotations

import re


def anonymous_names_hidden(text: str) -> str:
    """`text` with each anonymous namespace's name ("36_GLOBAL__N__<module id>"
    in a mangled name, "_GLOBAL__N_<module id>" elsewhere) as "NS": the name
    holds the module id of the source it is compiled from, which bekc gives
    a split compile itself (graph/nvcc_split: nvcc_module_id) and cudafe++
    derives otherwise."""
    out, at = [], 0
    for m in re.finditer(r"(\d+)_GLOBAL__N_", text):
        if m.start() < at:
            continue
        out.append(text[at:m.start()] + "NS")
        at = m.start() + len(m.group(1)) + int(m.group(1))
    out.append(text[at:])
    return re.sub(r"_GLOBAL__N_\w*", "NS", "".join(out))
