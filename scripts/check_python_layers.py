#!/usr/bin/env python3
"""Checks that no module of python/bekc imports a module of a layer above its
own, and that no modules import each other in a cycle.

The layers are the rows of the table in docs/ARCHITECTURE.md whose header is
"| python layer | modules |", lowest first; each row names its modules in
backquotes (`_errors`, `__init__`). A module may import modules of its own
layer and of the layers listed before it, at the top of the file or inside a
function alike; within a layer, imports must not go round in a circle. A
`from . import NAME` of a name that is no module of the package imports the
package itself (`__init__`). Every module of python/bekc must have a row, and
every module a row names must exist.

Prints one line per problem, "FILE:LINE: ...", and exits 1 when there is
any; exits 0 with no output otherwise.

    python3 scripts/check_python_layers.py [--root DIR]
"""
import ast
import re
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from check_layers import run_check  # the same command line (scripts/ is on sys.path)

TABLE_HEADER = re.compile(r"^\|\s*python layer\s*\|\s*modules\s*\|\s*$")
MODULE = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")
DOC = "docs/ARCHITECTURE.md"
PACKAGE = "python/bekc"
NAME = "bekc"

Edge = Tuple[str, int]  # (the module imported, the line)


def read_layers(doc: Path) -> Tuple[Dict[str, int], Dict[str, str], List[str]]:
    """Each module's layer (its row, from 0) and the layer's name, and problems."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if TABLE_HEADER.match(line)), None)
    if start is None:
        return {}, {}, [f"{DOC}: no table of python/bekc's layers "
                        "(a row '| python layer | modules |')"]
    rank: Dict[str, int] = {}
    layer_of: Dict[str, str] = {}
    problems: List[str] = []
    for number, line in enumerate(lines[start + 2:], start + 3):
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2:
            continue
        layer, row = cells[0].strip("`"), number - start - 3
        for module in MODULE.findall(cells[1]):
            if module in rank:
                problems.append(f"{DOC}:{number}: module {module} is listed twice")
                continue
            rank[module], layer_of[module] = row, layer
    if not rank:
        problems.append(f"{DOC}:{start + 1}: the table names no module of {PACKAGE}")
    return rank, layer_of, problems


def imports_of(source: Path, modules: set) -> List[Edge]:
    """The package's modules `source` imports, anywhere in it, with the line."""
    tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
    out: List[Edge] = []

    def named(name: str, line: int) -> None:
        out.append((name if name in modules else "__init__", line))

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            relative = node.level >= 1
            base = node.module or ""
            if not relative:
                if base != NAME and not base.startswith(NAME + "."):
                    continue
                base = base[len(NAME) + 1:] if base != NAME else ""
            if base:
                named(base.split(".")[0], node.lineno)
            else:
                for alias in node.names:
                    named(alias.name, node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(NAME + "."):
                    named(alias.name.split(".")[1], node.lineno)
                elif alias.name == NAME:
                    named("__init__", node.lineno)
    return out


def cycles(edges: Dict[str, List[Edge]]) -> List[List[str]]:
    """The strongly connected groups of more than one module (Tarjan's)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _ in edges.get(v, []):
            if w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def check(root: Path) -> List[str]:
    rank, layer_of, problems = read_layers(root / DOC)
    if not rank:
        return problems
    package = root / PACKAGE
    files = {p.stem: p for p in sorted(package.glob("*.py"))} if package.is_dir() else {}
    for module in sorted(set(rank) - set(files)):
        problems.append(f"{DOC}: the table of python/bekc's layers names {module}, which has "
                        f"no {PACKAGE}/{module}.py: remove it")
    for module in sorted(set(files) - set(rank)):
        problems.append(f"{PACKAGE}/{module}.py: not in {DOC}'s table of python/bekc's layers: "
                        "add it to the layer it belongs to, lowest layers first")
    edges = {m: imports_of(p, set(files)) for m, p in files.items()}
    for module, imported in sorted(edges.items()):
        if module not in rank:
            continue
        for target, line in imported:
            if target in rank and rank[target] > rank[module]:
                problems.append(
                    f"{PACKAGE}/{module}.py:{line}: {module} ({layer_of[module]}) imports "
                    f"{target}, which is in the layer {layer_of[target]} above it in {DOC}: "
                    f"move what {module} needs down, or pass it in as a value")
    for group in cycles(edges):
        first = group[0]
        line = next(line for target, line in edges[first] if target in group)
        problems.append(f"{PACKAGE}/{first}.py:{line}: {', '.join(group)} import each other "
                        "in a cycle: move what they share into a module below them")
    return problems


def main() -> int:
    return run_check(check, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
