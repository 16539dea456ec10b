#!/usr/bin/env python3
"""Checks that no folder of lib/ (or cli/) includes a header of a folder above it.

The layers are the rows of the folder table in docs/ARCHITECTURE.md (the
table whose header is "| folder | what it holds |"), lowest first: a row
naming `lib/NAME/` is a layer, `cli/` is the top one, and other rows (cmake/,
templates/, ...) are not code. A source in a layer may include headers of its
own layer and of the layers listed before it. Every folder under lib/ must
have a row, and every row must name a folder that exists.

Prints one line per problem, "FILE:LINE: ...", and exits 1 when there is
any; exits 0 with no output otherwise.

    python3 scripts/check_layers.py [--root DIR]
"""
import argparse
import re
import sys
from pathlib import Path

TABLE_HEADER = re.compile(r"^\|\s*folder\s*\|\s*what it holds\s*\|\s*$")
ROW_FOLDER = re.compile(r"^\|\s*`(lib/[a-z_]+/|cli/)`\s*\|")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/[^"]*"')
DOC = "docs/ARCHITECTURE.md"


def read_layers(doc: Path) -> tuple[list[str], list[str]]:
    """The layer names, lowest first ("util", ..., "cli"), and problems."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if TABLE_HEADER.match(line)), None)
    if start is None:
        return [], [f"{DOC}: no folder table (a row '| folder | what it holds |')"]
    layers: list[str] = []
    problems: list[str] = []
    for number, line in enumerate(lines[start + 2:], start + 3):
        if not line.startswith("|"):
            break
        m = ROW_FOLDER.match(line)
        if not m:
            continue
        name = m.group(1).removeprefix("lib/").rstrip("/")
        if name in layers:
            problems.append(f"{DOC}:{number}: folder {m.group(1)} is listed twice")
        else:
            layers.append(name)
    if not layers:
        problems.append(f"{DOC}:{start + 1}: the folder table names no lib/ folder")
    return layers, problems


def folder_of(layer: str, root: Path) -> Path:
    return root / ("cli" if layer == "cli" else f"lib/{layer}")


def check(root: Path) -> list[str]:
    doc = root / DOC
    layers, problems = read_layers(doc)
    if not layers:
        return problems
    rank = {name: i for i, name in enumerate(layers)}
    for name in layers:
        if not folder_of(name, root).is_dir():
            problems.append(f"{DOC}: the folder table names {folder_of(name, root).relative_to(root)}/, "
                            "which does not exist: remove its row")
    lib = root / "lib"
    for folder in sorted(p for p in lib.iterdir() if p.is_dir()) if lib.is_dir() else []:
        if folder.name not in rank:
            problems.append(f"lib/{folder.name}/: not in {DOC}'s folder table: add a row for it "
                            "where it belongs, lowest layers first")
    for name in sorted(layers, key=lambda n: str(folder_of(n, root))):
        folder = folder_of(name, root)
        if not folder.is_dir():
            continue
        for source in sorted(folder.rglob("*")):
            if source.suffix not in (".cpp", ".hpp", ".h", ".cc", ".in") or not source.is_file():
                continue
            text = source.read_text(encoding="utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                m = INCLUDE.match(line)
                if not m or m.group(1) not in rank or rank[m.group(1)] <= rank[name]:
                    continue
                header = line.split('"')[1]
                problems.append(
                    f"{source.relative_to(root)}:{number}: {name}/ includes {header}, but "
                    f"{m.group(1)}/ is above {name}/ in {DOC}'s folder table: move what "
                    f"{name}/ needs down, or pass it in as a plain value")
    return problems


def run_check(check_tree, description: str) -> int:
    """The command line of a check of the tree (this one, and
    check_python_layers.py): `--root DIR`, one line per problem, exit 1 when
    there is any."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository to check (default: this one)")
    args = parser.parse_args()
    problems = check_tree(args.root.resolve())
    for p in problems:
        print(p)
    return 1 if problems else 0


def main() -> int:
    return run_check(check, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
