#!/usr/bin/env python3
"""Lists the C++ functions longer than a limit (80 lines unless --max).

A function's length is the number of lines from the first line of its
declaration to its closing brace. Usage:

    scripts/check_function_length.py [--max N] [PATH ...]   (default: lib)

PATH is a file or a folder searched for .cpp and .hpp files. Each offender
is printed as 'FILE:LINE: NAME is N lines (at most M)'; the exit status is 1
when there is one, 0 otherwise.

This is a reader for clang-formatted code, not a parser: comments, strings
and preprocessor lines are blanked, and a brace at namespace or class scope
opens a function when the text before it ends with a parameter list (and
its qualifiers, a trailing return type or a constructor's initializers).
Lambdas and local classes count as part of the function that holds them.
"""

import argparse
import re
import sys
from pathlib import Path

DEFAULT_MAX = 80

# What may follow a parameter list before the body's brace.
_QUALIFIERS = re.compile(
    r"\)(\s*(const|volatile|noexcept(\s*\([^()]*\))?|override|final|mutable|&&|&"
    r"|->\s*[^{};]+|\[\[[^\]]*\]\]))*\s*$")
_CLASS_HEAD = re.compile(r"^(template\s*<.*>\s*)?\b(class|struct|union|enum)\b", re.S)
_ACCESS_LABEL = re.compile(r"^\s*(public|private|protected)\s*:(?!:)")
_OPERATOR = re.compile(r"\boperator\s*(\(\)|[^\w\s(]+)")


def blank_non_code(text):
    """Returns `text` with comments, string and character literals and
    preprocessor lines replaced by spaces, line breaks kept."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if line_start and c == "#":
            # A directive, with its continuation lines.
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == "R" and text.startswith('"', i + 1) and (i == 0 or not _ident(text[i - 1])):
            m = re.compile(r'R"([^()\\\s]{0,16})\(').match(text, i)
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            blank(i, j)
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A character literal, unless a digit separator (1'000).
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i, min(j + 1, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _ident(ch):
    return ch.isalnum() or ch == "_"


def _depth0(head):
    """`head` with everything inside (), [] and <> of a template prefix removed."""
    depth, out = 0, []
    for ch in head:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def classify(head):
    """What a brace at namespace or class scope opens, from the text before
    it: 'namespace', 'class', 'function', 'init' (a member initializer in a
    constructor's list) or 'other'."""
    head = _ACCESS_LABEL.sub("", head).strip()
    if re.search(r"\b(namespace|extern)\b", _depth0(head)):
        return "namespace"
    without_ops = _OPERATOR.sub("operator", _without_template_prefix(head))
    if "=" in _depth0(without_ops):
        return "other"
    if _QUALIFIERS.search(head):
        return "function"
    if _CLASS_HEAD.match(head) and "(" not in head:
        return "class"
    # Foo::Foo(int a) : a_(a), b_{b} {  -- the initializers' braces, then the body.
    params_end = _parameter_list_end(head)
    if params_end is not None and re.match(r"\s*:(?!:)", head[params_end:]):
        return "function" if head.endswith((")", "}")) else "init"
    return "other"


def _without_template_prefix(head):
    """`head` without a leading `template <...>` (whose defaults hold '=')."""
    m = re.match(r"\s*template\s*<", head)
    if not m:
        return head
    depth = 0
    for k in range(m.end() - 1, len(head)):
        if head[k] == "<":
            depth += 1
        elif head[k] == ">":
            depth -= 1
            if depth == 0:
                return head[k + 1:]
    return head


def _parameter_list_end(head):
    """The index after the first top-level parenthesised group, if any."""
    start = head.find("(")
    if start < 0:
        return None
    depth = 0
    for k in range(start, len(head)):
        if head[k] == "(":
            depth += 1
        elif head[k] == ")":
            depth -= 1
            if depth == 0:
                return k + 1
    return None


def function_name(head):
    head = _ACCESS_LABEL.sub("", head)
    m = re.search(r"([~\w:]*operator\s*(\(\)|[^\w\s(]+)|[~\w:]+)\s*\(", head)
    return re.sub(r"\s+", "", m.group(1)) if m else "?"


def functions(text):
    """Yields (name, first line, last line) for every function defined in
    `text`, lines counted from 1."""
    code = blank_non_code(text)
    # Each open brace: (kind, start line, name); kinds 'namespace' and
    # 'class' hold declarations, the others hold code.
    stack = []
    head_start = 0
    line = 1
    for i, ch in enumerate(code):
        if ch == "\n":
            line += 1
            continue
        at_decl_scope = not stack or stack[-1][0] in ("namespace", "class")
        if ch == "{":
            if not at_decl_scope:
                stack.append(("block", line, None))
                continue
            head = code[head_start:i]
            kind = classify(head)
            if kind == "function":
                stripped = _ACCESS_LABEL.sub("", head)
                offset = len(head) - len(stripped.lstrip())
                first = line - head[offset:].count("\n")
                stack.append(("function", first, function_name(head)))
            else:
                stack.append((kind, line, None))
            if kind != "init":
                head_start = i + 1
        elif ch == "}":
            if not stack:
                continue
            kind, first, name = stack.pop()
            if kind == "function":
                yield name, first, line
            if kind != "init" and (not stack or stack[-1][0] in ("namespace", "class")):
                head_start = i + 1
        elif ch == ";" and at_decl_scope:
            head_start = i + 1


def sources(paths):
    for p in paths:
        p = Path(p)
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*") if q.suffix in (".cpp", ".hpp"))
        else:
            yield p


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=DEFAULT_MAX,
                        help=f"the most lines a function may have (default {DEFAULT_MAX})")
    parser.add_argument("paths", nargs="*", default=["lib"])
    args = parser.parse_args(argv)
    offenders = 0
    for path in sources(args.paths):
        text = path.read_text(encoding="utf-8", errors="replace")
        for name, first, last in functions(text):
            length = last - first + 1
            if length > args.max:
                offenders += 1
                print(f"{path}:{first}: {name} is {length} lines (at most {args.max})")
    if offenders:
        print(f"{offenders} function(s) over {args.max} lines: split them into named helpers")
    return 1 if offenders else 0


if __name__ == "__main__":
    sys.exit(main())
