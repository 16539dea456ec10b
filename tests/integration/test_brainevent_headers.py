"""bekc's runtime/include/brainevent offers every public name of brainevent's headers.

The reference is each brainevent release of ``tests/brainevent_releases.py``
(0.2.1, pinned in requirements-test.txt, and 0.3.0, the newest, which
scripts/setup.sh installs into .deps/), found without importing it; every test
runs once per release and skips, saying so, for one that is not installed.
Where the releases differ (0.3.0's dispatch macros fail through BE_CHECK where
0.2.1's abort), bekc's headers follow the newest. Its six headers are parsed as text for their public
names: macros, classes, structs, enums and their values, type aliases,
namespace-scope functions and constants, and the public members of classes,
in ``BE`` and ``BE::internal``. For each brainevent header a translation unit
is generated that includes bekc's header of the same name (only
runtime/include, never brainevent's) and uses every name that header offers in
brainevent, itself or through the brainevent headers it includes:

* a macro: ``#ifndef NAME`` / ``#error``;
* a type: ``sizeof(T*)``; an enum also its underlying type, an enumerator its
  value; a constant its type and value;
* a function or method: a call with brainevent's parameter types, whose type
  must be brainevent's return type (a template method: the name only); a
  constructor: ``std::is_constructible`` with its parameter types; a data member:
  its type.

These units compile with the host compiler. Names that need the CUDA runtime
(macros that call it) are checked with nvcc, in one unit through all headers
but dtypes.h and ffi_compat.h, whose names compile with XLA's headers from the
installed jaxlib. A failing compile is mapped back to names through the line numbers in
the compiler's messages, and the assertion lists every name missing (or
different); when the messages name no line, the names are bisected.

Two more programs compile and run: a few real uses (a nested
BE_DISPATCH_SIGNED_INDEX_PAIR, BE_CHECK throwing BE::CheckError, brainevent's
Tensor constructor ...) and the dtype tables, every ``case X: return Y;`` of
brainevent's switch functions (dtype_size, dtype_name, xla_to_jkb_dtype).

``python tests/integration/test_brainevent_headers.py [RELEASE]`` prints the names found.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from brainevent_releases import RELEASES  # noqa: E402

BEKC_INCLUDE = REPO / "runtime" / "include"
HEADERS = ("common.h", "tensor.h", "check.h", "dispatch.h", "dtypes.h", "ffi_compat.h")
XLA_HEADERS = ("dtypes.h", "ffi_compat.h")  # need "xla/ffi/api/ffi.h"
TIMEOUT_S = 300


def brainevent_include(version: str = "0.2.1") -> Optional[Path]:
    """That release's brainevent/include, or None; brainevent is not imported."""
    package = RELEASES.get(version)
    if package is None:
        return None
    inc = package / "include"
    return inc if (inc / "brainevent" / "common.h").is_file() else None


def xla_include() -> Optional[Path]:
    """The include directory of the installed jaxlib (XLA's ffi.h), or None."""
    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.origin:
        return None
    inc = Path(spec.origin).parent / "include"
    return inc if (inc / "xla" / "ffi" / "api" / "ffi.h").is_file() else None


def host_compiler() -> Optional[str]:
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")


# ----------------------------------------------------------------------- text


def strip_comments(text: str) -> str:
    """The text without // and /* */ comments; string and char literals kept."""
    out: List[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def logical_lines(text: str) -> List[str]:
    """Lines with backslash continuations joined."""
    return strip_comments(text).replace("\\\n", " ").split("\n")


TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|[A-Za-z_]\w*|\d[\w.]*'
                   r"|::|<<=?|&&|\|\||->|\.\.\.|[=!<>]=|\S")
IDENT = re.compile(r"[A-Za-z_]\w*$")
CUDA_CALL = re.compile(r"\bcuda[A-Z_]\w*")
# A conditional whose true branch holds only for CUDA compilers (not the device pass).
CUDA_CONDITION = re.compile(r"\b__CUDACC__\b|\b__CUDA__\b")
SPECIFIERS = {"inline", "static", "constexpr", "explicit", "virtual", "extern", "friend",
              "__host__", "__device__", "__forceinline__", "__noinline__"}


@dataclass
class Name:
    """One public name of brainevent's headers and how to use it."""

    name: str  # "BE_CHECK", "BE::Tensor::numel_checked_int", "BE::DType::Int8"
    kind: str  # macro, type, enumerator, constant, function, method, constructor, member
    header: str  # the brainevent header that declares it
    contexts: Set[str] = field(default_factory=set)  # any | cuda | host
    needs_cuda: bool = False  # a macro that calls the CUDA runtime
    checks: List[str] = field(default_factory=list)  # C++ lines, one use each
    bodies: List[str] = field(default_factory=list)  # a macro's replacement texts

    def add_check(self, check: str) -> None:
        if check not in self.checks:
            self.checks.append(check)

    @property
    def context(self) -> str:
        if "any" in self.contexts or {"cuda", "host"} <= self.contexts:
            return "any"
        return next(iter(self.contexts), "any")


@dataclass
class Switch:
    """A function whose body is a switch: its `case X: return Y;` pairs."""

    function: str  # qualified
    namespace: str
    param_type: str
    pairs: List[Tuple[str, str]]  # (label or "default", returned expression)
    prelude: List[str]  # `using D = ...;` lines of the body


@dataclass
class Api:
    names: Dict[str, Name]
    includes: Dict[str, List[str]]  # header -> brainevent headers it includes
    switches: List[Switch]
    enums: Dict[str, List[str]]  # qualified enum -> enumerator names
    probed: Set[Tuple[str, str]] = field(default_factory=set)  # (class, member) probes made

    def offered_by(self, header: str) -> List[Name]:
        """The names a header offers: its own and those of the headers it includes."""
        seen, todo = set(), [header]
        while todo:
            h = todo.pop()
            if h not in seen:
                seen.add(h)
                todo.extend(self.includes.get(h, []))
        return [n for n in self.names.values() if n.header in seen]


# --------------------------------------------------------------------- parse


def _balanced(tokens: Sequence[str], i: int, open_: str, close: str) -> int:
    """Index just past the bracket closing tokens[i] (== open_)."""
    depth = 0
    while i < len(tokens):
        if tokens[i] == open_:
            depth += 1
        elif tokens[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _split_top(tokens: Sequence[str], sep: str = ",") -> List[List[str]]:
    parts: List[List[str]] = [[]]
    depth = 0
    for t in tokens:
        if t in "(<[{":
            depth += 1
        elif t in ")>]}":
            depth -= 1
        if t == sep and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    return [p for p in parts if p]


def _join(tokens: Sequence[str]) -> str:
    out = ""
    for t in tokens:
        if out and (IDENT.match(t) or t[0].isdigit()) and (IDENT.match(out[-1]) or
                                                          out[-1].isdigit()):
            out += " "
        elif out and t not in ("::", ",", ")", ">", "*", "&", "&&") and out[-1] == ",":
            out += " "
        out += t
    return out


def _param_types(tokens: Sequence[str]) -> List[str]:
    """Parameter types of a parameter list (without its parentheses)."""
    types = []
    for p in _split_top(tokens):
        if "=" in p:
            p = p[:p.index("=")]
        if p == ["void"]:
            continue
        # The last identifier is the parameter's name unless it ends a
        # qualified name or is all there is.
        if len(p) > 1 and IDENT.match(p[-1]) and p[-2] != "::" and p[-1] not in (
                "int", "long", "short", "char", "unsigned", "signed", "double", "float"):
            p = p[:-1]
        types.append(_join(p))
    return types


class _Parser:
    """Walks one header's tokens, keeping namespace/class scopes."""

    def __init__(self, api: Api, header: str):
        self.api, self.header = api, header

    def add(self, name: str, kind: str, ctx: str) -> Name:
        entry = self.api.names.get(name)
        if entry is None:
            entry = self.api.names[name] = Name(name, kind, self.header)
        entry.contexts.add(ctx)
        return entry

    def run(self, toks: List[Tuple[str, str]]) -> None:
        self.tokens = [t for t, _ in toks]
        self.ctxs = [c for _, c in toks]
        # (kind, qualified name, access); kinds: ns, class, enum
        self.scopes: List[Tuple[str, str, str]] = [("ns", "", "public")]
        decl: List[int] = []  # token indices of the current declaration
        tokens, i = self.tokens, 0
        while i < len(tokens):
            t = tokens[i]
            kind, qual, _ = self.scopes[-1]
            if kind == "enum":
                end = tokens.index("}", i)
                self.enumerators(qual, tokens[i:end], self.ctxs[i])
                self.scopes.pop()
                i, decl = end + 1, []
            elif t == "}":
                self.scopes.pop()
                i, decl = i + 1, []
            elif kind == "class" and t in ("public", "private", "protected") and \
                    tokens[i + 1:i + 2] == [":"]:
                self.scopes[-1] = (kind, qual, t)
                i += 2
            elif t == ";":
                self.declaration(decl, body=None)
                i, decl = i + 1, []
            elif t == "{":
                i, decl = self.brace(i, decl)
            else:
                decl.append(i)
                i += 1

    def brace(self, i: int, decl: List[int]) -> Tuple[int, List[int]]:
        """Handles the `{` at i after `decl`; returns where to go on, and the
        declaration still being read."""
        tokens = self.tokens
        kind, qual, access = self.scopes[-1]
        words = [tokens[k] for k in decl]
        core = self.without_template(words)
        ctx = self.ctxs[decl[0]] if decl else self.ctxs[i]
        if core[:1] == ["namespace"]:  # `namespace A::B {` is one scope, one brace
            self.scopes.append(("ns", f"{qual}::{_join(core[1:])}".lstrip(":"), "public"))
            return i + 1, []
        if core[:1] in (["class"], ["struct"], ["union"]) and "(" not in core:
            full = f"{qual}::{core[1]}".lstrip(":")
            if access == "public":
                self.add(full, "type", ctx).add_check(
                    f"static_assert(sizeof(::{full}*) > 0, \"{full}\");")
            self.scopes.append(("class", full, "private" if core[0] == "class" else "public"))
            return i + 1, []
        if core[:1] == ["enum"]:
            name = core[2] if core[1] in ("class", "struct") else core[1]
            full = f"{qual}::{name}".lstrip(":")
            entry = self.add(full, "type", ctx)
            entry.add_check(f"static_assert(sizeof(::{full}*) > 0, \"{full}\");")
            if ":" in core:
                under = _join(core[core.index(":") + 1:])
                entry.add_check(f"static_assert(std::is_same_v<std::underlying_type_t<::{full}>, "
                                f"{under}>, \"underlying type of {full}\");")
            self.api.enums[full] = []
            self.scopes.append(("enum", full, "public"))
            return i + 1, []
        end = _balanced(tokens, i, "{", "}")
        prev = words[-1] if words else ""
        if prev == "=" or ("(" not in core and words) or (self.in_init_list(core) and (
                IDENT.match(prev) or prev == ">")):
            return end, decl + list(range(i, end))  # an initializer, not a body
        if "(" in core:
            self.declaration(decl, body=tokens[i + 1:end - 1])
        return (end + 1 if tokens[end:end + 1] == [";"] else end), []

    @staticmethod
    def without_template(words: List[str]) -> List[str]:
        if words[:1] == ["template"] and words[1:2] == ["<"]:
            return words[_balanced(words, 1, "<", ">"):]
        return words

    @staticmethod
    def in_init_list(core: List[str]) -> bool:
        if "(" not in core:
            return False
        end = _balanced(core, core.index("("), "(", ")")
        rest = [w for w in core[end:] if w not in ("noexcept", "const")]
        return rest[:1] == [":"]

    def enumerators(self, enum: str, tokens: List[str], ctx: str) -> None:
        value = -1
        for part in _split_top(tokens):
            name = part[0]
            if len(part) > 2 and part[1] == "=":
                text = _join(part[2:])
                value = int(text, 0) if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", text) else None
            elif value is not None:
                value += 1
            full = f"{enum}::{name}"
            entry = self.add(full, "enumerator", ctx)
            self.api.enums[enum].append(name)
            check = f"static_assert(sizeof(::{full}) > 0, \"{full}\");"
            if value is not None:
                check = (f"static_assert(static_cast<long long>(::{full}) == {value}, "
                         f"\"{full} == {value}\");")
            entry.add_check(check)

    def declaration(self, decl: List[int], body: Optional[List[str]]) -> None:
        words = [self.tokens[k] for k in decl]
        ctxs = [self.ctxs[k] for k in decl]
        kind, qual, access = self.scopes[-1]
        if not words or access != "public" or kind not in ("ns", "class"):
            return
        core = self.without_template(words)
        is_template = core is not words
        if not core or core[0] in ("friend", "static_assert", "typedef", "namespace"):
            return
        ctx = ctxs[len(words) - len(core)] if ctxs else "any"
        namespace = qual if kind == "ns" else qual.rsplit("::", 1)[0] if "::" in qual else ""
        if core[0] == "using" and "=" in core:
            full = f"{qual}::{core[1]}".lstrip(":")
            self.add(full, "type", ctx).add_check(
                f"static_assert(sizeof(::{full}*) > 0, \"{full}\");")
            return
        if core[0] in ("class", "struct", "enum", "using"):
            return  # a forward declaration or a using-declaration
        if "(" not in core:
            self.variable(core, ctx, kind, qual)
            return
        paren = core.index("(")
        if core[paren - 1] == "operator":  # operator()
            paren = core.index("(", paren + 1)
        head, close = core[:paren], _balanced(core, paren, "(", ")")
        params = _param_types(core[paren + 1:close - 1])
        tail = core[close:]
        if tail[:2] == ["=", "delete"]:
            return
        if "operator" in head:
            at = head.index("operator")
            name, ret = "operator" + "".join(head[at + 1:]), head[:at]
        else:
            name, ret = head[-1], head[:-1]
        if name.startswith("~") or (ret and ret[-1] == "~"):
            return
        ret = [w for w in ret if w not in SPECIFIERS]
        const = "const" in tail[:tail.index(":")] if ":" in tail else "const" in tail
        if kind == "class":
            cls = qual
            short = cls.rsplit("::", 1)[-1]
            if name == short and not ret:
                self.constructor(cls, namespace, params, ctx)
                return
            self.method(cls, namespace, name, ret, params, const, is_template, ctx)
        else:
            full = f"{qual}::{name}".lstrip(":")
            entry = self.add(full, "function", ctx)
            args = ", ".join(f"std::declval<{p}>()" for p in params)
            call = f"::{full}({args})"
            if is_template:  # the name only: a using-declaration elsewhere
                entry.add_check(f"namespace be_names_ns {{ using ::{full}; }}")
            else:
                entry.add_check(
                    f"namespace {namespace} {{ static_assert(std::is_same_v<decltype({call}), "
                    f"{_join(ret)}>, \"{full}({', '.join(params)}) returns {_join(ret)}\"); }}")
            if body is not None and len(params) == 1:
                self.switch(full, namespace, params[0], body)

    def variable(self, core: List[str], ctx: str, kind: str, qual: str) -> None:
        words = core[:core.index("=")] if "=" in core else core
        if "[" in words:
            words = words[:words.index("[")]
        if not words or not IDENT.match(words[-1]):
            return
        name, type_words = words[-1], [w for w in words[:-1] if w not in SPECIFIERS]
        full = f"{qual}::{name}".lstrip(":")
        static = "static" in core[:core.index(name)] if kind == "class" else True
        type_text = _join([w for w in type_words if w != "const"])
        if kind == "class" and not static:
            entry = self.add(full, "member", ctx)
            if (qual, name) not in self.api.probed:
                entry.add_check(self.probe(qual, name))
            entry.add_check(f"static_assert(std::is_same_v<decltype(::{full}), {type_text}>, "
                            f"\"{full} is a {type_text}\");")
            return
        entry = self.add(full, "constant", ctx)
        namespace = qual if kind == "ns" else qual.rsplit("::", 1)[0]
        entry.add_check(
            f"namespace {namespace} {{ static_assert(std::is_same_v<std::remove_cv_t<decltype("
            f"::{full})>, {type_text}>, \"{full} is a {type_text}\"); }}")
        if "=" in core:
            value = _join(core[core.index("=") + 1:])
            if re.fullmatch(r"-?\d+|true|false", value):
                entry.add_check(f"static_assert(::{full} == {value}, \"{full} == {value}\");")

    def probe(self, cls: str, member: str) -> str:
        """A class that names `member` of `cls` in a using-declaration: it fails
        to compile unless the member exists and is public."""
        number = len(self.api.probed)
        self.api.probed.add((cls, member))
        return f"struct be_names_probe_{number} : ::{cls} {{ using ::{cls}::{member}; }};"

    def constructor(self, cls: str, namespace: str, params: List[str], ctx: str) -> None:
        short = cls.rsplit("::", 1)[-1]
        entry = self.add(f"{cls}::{short}", "constructor", ctx)
        types = "".join(f", {p}" for p in params)
        entry.add_check(
            f"namespace {namespace} {{ static_assert(std::is_constructible_v<::{cls}{types}>, "
            f"\"{cls}({', '.join(params)})\"); }}")

    def method(self, cls, namespace, name, ret, params, const, is_template, ctx) -> None:
        full = f"{cls}::{name}"
        entry = self.add(full, "method", ctx)
        if (cls, name) not in self.api.probed:
            entry.add_check(self.probe(cls, name))
        if is_template:
            return
        obj = f"std::declval<{'const ' if const else ''}::{cls}&>()"
        args = ", ".join(f"std::declval<{p}>()" for p in params)
        signature = f"{name}({', '.join(params)}){' const' if const else ''}"
        entry.add_check(
            f"namespace {namespace} {{ static_assert(std::is_same_v<decltype("
            f"{obj}.{name}({args})), {_join(ret)}>, "
            f"\"{cls}::{signature} returns {_join(ret)}\"); }}")

    def switch(self, function: str, namespace: str, param_type: str, body: List[str]) -> None:
        if "switch" not in body:
            return
        pairs: List[Tuple[str, str]] = []
        prelude: List[str] = []
        labels: List[str] = []
        i = 0
        while i < len(body):
            t = body[i]
            if t == "using" and i == 0 or (t == "using" and body[i - 1] in (";", "{")):
                end = body.index(";", i)
                prelude.append(_join(body[i:end]) + ";")
                i = end + 1
            elif t == "case":
                end = body.index(":", i)  # "::" is one token
                labels.append(_join(body[i + 1:end]))
                i = end + 1
            elif t == "default" and body[i + 1] == ":":
                labels.append("default")
                i += 2
            elif t == "return":
                end = body.index(";", i)
                pairs.extend((label, _join(body[i + 1:end])) for label in labels)
                labels = []
                i = end + 1
            else:
                i += 1
        if pairs:
            self.api.switches.append(Switch(function, namespace, param_type, pairs, prelude))


def _classify(directive: str) -> Tuple[str, str]:
    """(true-branch, else-branch) contexts of a conditional directive (no '#')."""
    word, _, rest = directive.partition(" ")
    if not CUDA_CONDITION.search(rest):
        return "any", "any"
    negated = word == "ifndef" or rest.lstrip().startswith("!")
    return ("host", "cuda") if negated else ("cuda", "host")


def parse_header(api: Api, header: str, text: str) -> None:
    lines = logical_lines(text)
    stack: List[Tuple[str, str]] = []  # (current branch context, else context)
    toks: List[Tuple[str, str]] = []
    macros: Dict[str, List[str]] = {}
    first_directives: List[str] = []

    def context() -> str:
        for ctx, _ in reversed(stack):
            if ctx != "any":
                return ctx
        return "any"

    for line in lines:
        s = line.strip()
        if s.startswith("#"):
            body = s[1:].strip()
            word = body.split()[0] if body.split() else ""
            if len(first_directives) < 2 and word not in ("pragma", ""):
                first_directives.append(body)
            if word in ("if", "ifdef", "ifndef"):
                stack.append(_classify(" ".join(body.split())))
            elif word in ("elif", "else"):
                if stack:
                    stack[-1] = (stack[-1][1], stack[-1][1])
            elif word == "endif":
                if stack:
                    stack.pop()
            elif word == "define":
                m = re.match(r"define\s+([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)", body)
                if m:
                    name = m.group(1)
                    macros.setdefault(name, []).append(m.group(4))
                    if not name.startswith("_"):
                        entry = api.names.get(name) or Name(name, "macro", header)
                        api.names[name] = entry
                        entry.contexts.add(context())
            elif word == "include":
                m = re.match(r'include\s+"brainevent/([\w.]+)"', body)
                if m:
                    api.includes.setdefault(header, []).append(m.group(1))
            continue
        toks.extend((t, context()) for t in TOKEN.findall(line))

    # An include guard (#ifndef X / #define X first) is no API.
    if len(first_directives) == 2:
        a, b = first_directives
        if a.startswith("ifndef") and b.split()[:2] == ["define", a.split()[1]]:
            api.names.pop(a.split()[1], None)

    for name, bodies in macros.items():
        if name in api.names and api.names[name].header == header:
            entry = api.names[name]
            entry.checks = [f"#ifndef {name}", f"#error \"missing macro {name}\"", "#endif"]
            entry.needs_cuda = any(CUDA_CALL.search(b) for b in bodies)
            entry.bodies = bodies
    _Parser(api, header).run(toks)


def extract_api(include: Path) -> Api:
    api = Api(names={}, includes={}, switches=[], enums={})
    for header in HEADERS:
        parse_header(api, header, (include / "brainevent" / header).read_text())
    # A macro that expands to one calling the CUDA runtime needs it too.
    macros = [n for n in api.names.values() if n.kind == "macro"]
    changed = True
    while changed:
        changed = False
        cuda = {n.name for n in macros if n.needs_cuda}
        for n in macros:
            if not n.needs_cuda and any(re.search(rf"\b{c}\b", b) for b in n.bodies for c in cuda):
                n.needs_cuda = changed = True
    return api


# ------------------------------------------------------------------- compile


@dataclass
class Toolchain:
    command: List[str]  # compiler and flags; the source file is appended
    suffix: str  # ".cpp" or ".cu"


@dataclass
class Unit:
    source: str
    owner: Dict[int, str]  # 1-based line -> name


def render(names: Sequence[Name], headers: Sequence[str]) -> Unit:
    lines = ["// Generated by tests/integration/test_brainevent_headers.py.",
             "#include <stddef.h>", "#include <stdint.h>", "#include <cstddef>",
             "#include <cstdint>",
             "#include <string>", "#include <type_traits>", "#include <utility>"]
    lines.extend(f'#include "brainevent/{h}"' for h in headers)
    owner = {}
    for n in names:
        lines.append(f"// {n.name}")
        for check in n.checks:
            lines.append(check)
            owner[len(lines)] = n.name
    return Unit("\n".join(lines) + "\n", owner)


LINE_REF = (r"{f}:(\d+)", r"{f}\((\d+)\)", r"at line (\d+) of \S*{f}")


def compile_unit(toolchain: Toolchain, unit: Unit, workdir: Path,
                 stem: str = "be_names_check") -> subprocess.CompletedProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / (stem + toolchain.suffix)
    src.write_text(unit.source)
    return subprocess.run(toolchain.command + [str(src)], cwd=workdir, capture_output=True,
                          text=True, timeout=TIMEOUT_S)


def blame(output: str, unit: Unit, stem: str) -> Set[str]:
    """The names whose lines the compiler's messages point at."""
    f = re.escape(stem) + r"\.(?:cpp|cu)"
    found: Set[str] = set()
    for raw in output.splitlines():
        if raw.lstrip().startswith(("In file included from", "from ")):
            continue
        for pattern in LINE_REF:
            found |= {unit.owner[int(m.group(1))] for m in re.finditer(pattern.format(f=f), raw)
                      if int(m.group(1)) in unit.owner}
    return found


def find_missing(toolchain: Toolchain, names: Sequence[Name], headers: Sequence[str],
                 workdir: Path) -> Tuple[Set[str], str]:
    """Names that do not compile against bekc's headers, and the first failing output."""
    stem = "be_names_check"
    missing: Set[str] = set()
    remaining = list(names)
    first_output = ""
    for attempt in range(4):
        unit = render(remaining, headers)
        result = compile_unit(toolchain, unit, workdir, stem)
        if result.returncode == 0:
            return missing, first_output
        output = result.stdout + result.stderr
        first_output = first_output or output
        if attempt == 0:
            # A header that is missing or does not compile alone offers nothing.
            alone = compile_unit(toolchain, render([], headers), workdir, stem)
            if alone.returncode != 0:
                return {n.name for n in names}, alone.stdout + alone.stderr
        blamed = blame(output, unit, stem)
        if not blamed:
            break
        missing |= blamed
        remaining = [n for n in remaining if n.name not in blamed]

    # The messages pointed at no check's line: bisect.
    def failing(group: List[Name]) -> Set[str]:
        if not group:
            return set()
        if compile_unit(toolchain, render(group, headers), workdir, stem).returncode == 0:
            return set()
        if len(group) == 1:
            return {group[0].name}
        mid = len(group) // 2
        return failing(group[:mid]) | failing(group[mid:])

    return missing | failing(remaining), first_output


def report(missing_by_header: Dict[str, Set[str]], outputs: Dict[str, str]) -> str:
    lines = ["bekc's runtime/include/brainevent lacks (or differs in) brainevent's names:"]
    for header, missing in sorted(missing_by_header.items()):
        if missing:
            lines.append(f"  brainevent/{header}: {', '.join(sorted(missing))}")
    for header, output in sorted(outputs.items()):
        if output and missing_by_header.get(header):
            lines.append(f"--- compiler output for brainevent/{header} (first 40 lines):")
            lines.extend(output.splitlines()[:40])
    return "\n".join(lines)


def check_headers(api: Api, headers: Sequence[str], toolchain: Toolchain, workdir: Path,
                  select) -> Tuple[Dict[str, Set[str]], Dict[str, str]]:
    """For each header: the names (chosen by `select`) that it fails to offer."""
    missing, outputs = {}, {}
    for header in headers:
        names = [n for n in api.offered_by(header) if select(n)]
        if names:
            missing[header], outputs[header] = find_missing(toolchain, names, [header],
                                                            workdir / header.replace(".", "_"))
    return missing, outputs


def host_names(n: Name) -> bool:
    return n.context != "cuda" and not n.needs_cuda


def gcc(*extra: str, syntax_only: bool = True) -> Toolchain:
    """The host compiler on bekc's headers (the `cxx` fixture skips without one)."""
    flags = ["-std=c++17", "-w", "-I", str(BEKC_INCLUDE), *extra]
    cmd = [host_compiler() or "c++", *flags]
    return Toolchain(cmd + ["-fsyntax-only"] if syntax_only else cmd, ".cpp")


# --------------------------------------------------------------------- tests


@pytest.fixture(scope="module", params=sorted(RELEASES))
def reference(request) -> Path:
    inc = brainevent_include(request.param)
    if inc is None:
        pytest.skip(f"brainevent {request.param} is not installed (0.2.1: requirements-test.txt; "
                    f"0.3.0: scripts/setup.sh puts it in .deps/)")
    return inc


@pytest.fixture(scope="module")
def api(reference: Path) -> Api:
    return extract_api(reference)


@pytest.fixture(scope="module")
def cxx() -> Toolchain:
    if host_compiler() is None:
        pytest.skip("no host C++ compiler (g++, c++ or $CXX)")
    return gcc()


@pytest.fixture(scope="module")
def xla() -> Path:
    inc = xla_include()
    if inc is None:
        pytest.skip("jaxlib's include directory (xla/ffi/api/ffi.h) is not installed")
    return inc


def test_extractor_finds_brainevents_api(api: Api) -> None:
    names = set(api.names)
    assert len(names) >= 40, sorted(names)
    for known in ("BE_CHECK", "BE_CUDA_CHECK", "BE_CHECK_KERNEL_LAUNCH_SYNC",
                  "BE_DISPATCH_SIGNED_INDEX_PAIR", "BE_CHECK_CSR_INDICES_INT32", "BE::Tensor",
                  "BE::Tensor::numel_checked_int", "BE::Tensor::Tensor", "BE::Tensor::data_ptr",
                  "BE::DType::BFloat16", "BE::kMaxDim", "BE::dtype_name", "BE::CheckError",
                  "BE::CudaError", "BE::internal::CheckFailMessageStream",
                  "BE::internal::CheckFailMessageStream::operator<<",
                  "BE::internal::Voidify::operator&", "BE::float16_t", "BE::complex64_t::real",
                  "BE::xla_to_jkb_dtype", "BE::internal::buffer_to_tensor",
                  "BE::internal::result_buffer_to_tensor"):
        assert known in names, known
    # Private members, the include guard-free #pragma once and locals are no API.
    for private in ("BE::Tensor::data_", "BE::Tensor::shape_",
                    "BE::internal::CheckFailMessageStream::append",
                    "BE::internal::CheckFailMessageStream::buf_", "BE::D", "dt"):
        assert private not in names, private
    assert api.names["BE_CHECK_KERNEL_LAUNCH"].needs_cuda
    assert not api.names["BE_CHECK"].needs_cuda
    assert api.names["BE::complex64_t"].context == "any"
    assert api.names["BE::float16_t::bits"].context == "host"
    assert api.names["BE::DType::Invalid"].checks == [
        'static_assert(static_cast<long long>(::BE::DType::Invalid) == 255, '
        '"BE::DType::Invalid == 255");']
    # brainevent's common.h offers what tensor.h, check.h and dispatch.h declare.
    assert {n.name for n in api.offered_by("common.h")} >= {"BE_CHECK", "BE::Tensor",
                                                             "BE_DISPATCH_ALL"}
    assert {s.function for s in api.switches} >= {"BE::dtype_size", "BE::dtype_name",
                                                  "BE::xla_to_jkb_dtype"}


def test_host_headers_offer_every_name(api: Api, cxx: Toolchain, tmp_path: Path) -> None:
    headers = [h for h in HEADERS if h not in XLA_HEADERS]
    missing, outputs = check_headers(api, headers, cxx, tmp_path, host_names)
    assert not any(missing.values()), report(missing, outputs)


def test_cuda_names_compile_with_nvcc(api: Api, nvcc: str, tmp_path: Path) -> None:
    # One unit through all four headers: nvcc is slow, and the host test has
    # checked each header alone.
    tc = Toolchain([nvcc, "-std=c++17", "-w", "-c", "-o", "be_names_check.o", "-I",
                    str(BEKC_INCLUDE)], ".cu")
    headers = [h for h in HEADERS if h not in XLA_HEADERS]
    names = [n for h in headers for n in api.offered_by(h)
             if n.header == h and n.context != "host"]
    missing, output = find_missing(tc, names, headers, tmp_path)
    assert not missing, report({"(nvcc) " + ", ".join(headers): missing},
                               {"(nvcc) " + ", ".join(headers): output})


def test_xla_headers_offer_every_name(api: Api, cxx: Toolchain, xla: Path, tmp_path: Path) -> None:
    tc = gcc("-isystem", str(xla))
    missing, outputs = check_headers(api, XLA_HEADERS, tc, tmp_path,
                                     lambda n: host_names(n) and n.header in XLA_HEADERS)
    assert not any(missing.values()), report(missing, outputs)


def switch_checks(api: Api, functions: Iterable[str]) -> List[str]:
    """Runtime checks of every `case X: return Y;` of brainevent's switch functions:
    bekc's function must return the same for X (and for a value with no case,
    what brainevent's `default` returns)."""
    unmapped = {"xla::ffi::DataType": "xla::ffi::DataType::TOKEN"}
    out, calls = [], []
    for sw in api.switches:
        if sw.function not in functions:
            continue
        check = f"be_check_{len(calls)}"
        calls.append(f"    {sw.namespace}::{check}(failures);")
        body = ["{"] + [f"    {p}" for p in sw.prelude]
        labels = [label for label, _ in sw.pairs if label != "default"]
        for label, value in sw.pairs:
            if label == "default":
                enum = api.enums.get(f"{sw.namespace}::{sw.param_type}")
                spare = [e for e in enum or [] if f"{sw.param_type}::{e}" not in labels]
                label = (f"{sw.param_type}::{spare[0]}" if spare else
                         unmapped.get(sw.param_type))
                if label is None:
                    continue
            got = f"::{sw.function}({label})"
            same = (f"std::string({got}) == {value}" if value.startswith('"') else
                    f"{got} == ({value})")
            text = f"{sw.function}({label}) == {value}".replace("\\", "\\\\").replace('"', '\\"')
            body.append(f'    if (!({same})) {{ std::printf("differs: %s\\n", "{text}"); '
                        f'++failures; }}')
        body.append("}")
        out.append(f"namespace {sw.namespace} {{ inline void {check}(int& failures) ")
        out.extend(body)
        out.append("}")
    return out + ["int be_switch_checks() {", "    int failures = 0;", *calls,
                  "    return failures;", "}"]


def run_program(tc: Toolchain, source: str, workdir: Path) -> subprocess.CompletedProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "uses.cpp").write_text(source)
    built = subprocess.run(tc.command + ["uses.cpp", "-o", "uses"], cwd=workdir,
                           capture_output=True, text=True, timeout=TIMEOUT_S)
    assert built.returncode == 0, built.stdout + built.stderr
    return subprocess.run([str(workdir / "uses")], capture_output=True, text=True,
                          timeout=TIMEOUT_S)


HOST_USES = r"""
#include <climits>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include "brainevent/common.h"

@@SWITCHES@@

static int failures = 0;
#define EXPECT(cond) ((cond) ? (void)0 : (void)(std::printf("failed: %s\n", #cond), ++failures))

template <class E, class F>
static bool throws(F f) {
    try { f(); } catch (const E&) { return true; } catch (...) {}
    return false;
}

int main() {
    failures += be_switch_checks();

    // Both names of the pair, in one block; int32/int64 in either position.
    int widths = 0;
    BE_DISPATCH_SIGNED_INDEX_PAIR(BE::DType::Int64, BE::DType::Int32, index_t, offset_t, {
        widths = static_cast<int>(10 * sizeof(index_t) + sizeof(offset_t));
    });
    EXPECT(widths == 84);
    EXPECT(throws<std::exception>([] {
        BE_DISPATCH_SIGNED_INDEX_PAIR(BE::DType::Int32, BE::DType::Float32, I, O,
                                      { (void)(sizeof(I) + sizeof(O)); });
    }));
    BE_DISPATCH_SIGNED_INDEX(BE::DType::Int32, idx_t, { widths = sizeof(idx_t); });
    EXPECT(widths == 4);
    BE_DISPATCH_CSR_INDPTR(BE::DType::Int64, indptr_t, { widths = sizeof(indptr_t); });
    EXPECT(widths == 8);

    // brainevent's dtype sets: INTEGRAL includes bool.
    bool saw_bool = false;
    BE_DISPATCH_INTEGRAL(BE::DType::Bool, scalar_t,
                         { saw_bool = typeid(scalar_t) == typeid(bool); });
    EXPECT(saw_bool);

    // BE_CHECK throws a BE::CheckError, a std::runtime_error.
    EXPECT(throws<BE::CheckError>([] { BE_CHECK(1 + 1 == 3) << "arithmetic"; }));
    EXPECT(throws<std::runtime_error>([] { BE_CHECK(false); }));
    EXPECT(throws<BE::CheckError>([] {
        using BE::internal::CheckFailMessageStream;
        BE::internal::Voidify() & CheckFailMessageStream(__FILE__, __LINE__, "x") << "y";
    }));
    const BE::CheckError check_error(std::string("text"));
    const BE::CudaError cuda_error(std::string("text"));
    EXPECT(std::string(check_error.what()) == "text" && std::string(cuda_error.what()) == "text");

    // brainevent's constructor order, numel_checked_int, kMaxDim.
    float data[12] = {};
    const int64_t shape[2] = {3, 4};
    const BE::Tensor t(data, shape, 2, BE::DType::Float32);
    EXPECT(t.data_ptr<float>() == data && t.ndim() == 2 && t.shape(0) == 3 && t.size(1) == 4);
    EXPECT(t.stride(0) == 4 && t.stride(1) == 1 && t.numel() == 12 && t.nbytes() == 48);
    EXPECT(t.numel_checked_int() == 12 && t.is_contiguous() && t.element_size() == 4);
    EXPECT(BE::kMaxDim == 8);
    const int64_t huge[2] = {1 << 20, 1 << 20};
    EXPECT(throws<std::overflow_error>(
        [&] { (void)BE::Tensor(data, huge, 2, BE::DType::Int8).numel_checked_int(); }));
    EXPECT(throws<std::out_of_range>(
        [&] { BE::Tensor(data, shape, BE::kMaxDim + 1, BE::DType::Int8); }));
    const BE::Tensor empty;
    EXPECT(empty.data_ptr() == nullptr && empty.ndim() == 0 && empty.dtype() == BE::DType::Invalid);

    const int64_t n = 5;
    BE::Tensor indices(data, &n, 1, BE::DType::Int32);
    BE_CHECK_CSR_INDICES_INT32(indices);
    BE::Tensor wide(data, &n, 1, BE::DType::Int64);
    EXPECT(throws<std::exception>([&] { BE_CHECK_CSR_INDICES_INT32(wide); }));

    std::printf("%d failures\n", failures);
    return failures != 0;
}
"""


def test_real_uses_and_dtype_tables(api: Api, cxx: Toolchain, tmp_path: Path) -> None:
    tc = gcc("-O0", syntax_only=False)
    switches = "\n".join(switch_checks(api, {"BE::dtype_size", "BE::dtype_name"}))
    run = run_program(tc, HOST_USES.replace("@@SWITCHES@@", switches), tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


# How each dtype-checking macro is called with a dtype it refuses; a
# BE_DISPATCH_* macro not listed takes (dtype, name, block).
REFUSED_DTYPE_CALLS = {
    "BE_DISPATCH_SIGNED_INDEX_PAIR": "BE_DISPATCH_SIGNED_INDEX_PAIR(BE::DType::Int32, "
                                     "BE::DType::Float32, I, O, { (void)(sizeof(I) + sizeof(O)); })",
    "BE_CHECK_CSR_INDICES_INT32": "BE_CHECK_CSR_INDICES_INT32(BE::Tensor(nullptr, nullptr, 0, "
                                  "BE::DType::Int64))",
}


def refused_dtype_program(api: Api) -> str:
    """A program that gives every dtype-checking macro of brainevent's headers a
    dtype it refuses and expects BE::CheckError, brainevent 0.3.0's BE_CHECK
    (0.2.1's aborted), then prints "survived"."""
    macros = sorted(n.name for n in api.names.values() if n.kind == "macro" and (
        n.name.startswith("BE_DISPATCH_") or n.name in REFUSED_DTYPE_CALLS))
    lines = ["#include <cstdio>", "#include \"brainevent/common.h\"", "int main() {",
             "    int failures = 0;"]
    for m in macros:
        call = REFUSED_DTYPE_CALLS.get(m, f"{m}(BE::DType::Invalid, T, {{ (void)sizeof(T); }})")
        lines += ["    try {", f"        {call};",
                  f'        std::printf("{m}: no error\\n"); ++failures;',
                  "    } catch (const BE::CheckError&) {",
                  f'    }} catch (...) {{ std::printf("{m}: not a BE::CheckError\\n"); ++failures; }}']
    lines += ['    std::printf("%d failures, survived\\n", failures);', "    return failures != 0;",
              "}"]
    return "\n".join(lines) + "\n"


def test_a_refused_dtype_is_a_check_error_not_an_abort(api: Api, cxx: Toolchain,
                                                         tmp_path: Path) -> None:
    source = refused_dtype_program(api)
    assert source.count("try {") >= 10, source  # the nine BE_DISPATCH_* and the CSR check
    run = run_program(gcc("-O0", syntax_only=False), source, tmp_path)
    assert run.returncode == 0 and "0 failures, survived" in run.stdout, run.stdout + run.stderr


XLA_USES = r"""
#include <cstdio>
#include <stdexcept>
#include <string>
#include "brainevent/ffi_compat.h"

@@SWITCHES@@

int main() {
    int failures = be_switch_checks();
    // A buffer of a type BE::DType has no name for is refused; others map.
    int64_t dims[2] = {2, 3};
    float data[6] = {};
    XLA_FFI_Buffer raw = {XLA_FFI_Buffer_STRUCT_SIZE, nullptr, XLA_FFI_DataType_F32, data, 2, dims};
    BE::Tensor t = BE::internal::buffer_to_tensor(xla::ffi::AnyBuffer(&raw));
    if (!(t.dtype() == BE::DType::Float32 && t.ndim() == 2 && t.shape(1) == 3 &&
          t.data_ptr() == data)) {
        std::printf("buffer_to_tensor(f32[2,3]) differs\n"); ++failures;
    }
    BE::Tensor r = BE::internal::result_buffer_to_tensor(
        xla::ffi::Result<xla::ffi::AnyBuffer>(xla::ffi::AnyBuffer(&raw)));
    if (!(r.numel() == 6)) { std::printf("result_buffer_to_tensor differs\n"); ++failures; }
    raw.dtype = XLA_FFI_DataType_F8E5M2;
    try {
        (void)BE::internal::buffer_to_tensor(xla::ffi::AnyBuffer(&raw));
        std::printf("buffer_to_tensor(f8e5m2) did not throw\n"); ++failures;
    } catch (const std::invalid_argument&) {
    }
    std::printf("%d failures\n", failures);
    return failures != 0;
}
"""


def test_xla_uses_and_dtype_table(api: Api, cxx: Toolchain, xla: Path, tmp_path: Path) -> None:
    tc = gcc("-O0", "-isystem", str(xla), syntax_only=False)
    switches = "\n".join(switch_checks(api, {"BE::xla_to_jkb_dtype"}))
    run = run_program(tc, XLA_USES.replace("@@SWITCHES@@", switches), tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


def _remove_define(text: str, macro: str) -> str:
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if re.match(rf"#define {macro}\b", line))
    end = start
    while lines[end].endswith("\\"):
        end += 1
    return "\n".join(lines[:start] + lines[end + 1:])


def test_a_missing_name_is_reported(api: Api, cxx: Toolchain, tmp_path: Path) -> None:
    broken = tmp_path / "include"
    shutil.copytree(BEKC_INCLUDE, broken)
    dispatch = broken / "brainevent" / "dispatch.h"
    dispatch.write_text(_remove_define(dispatch.read_text(), "BE_DISPATCH_CSR_INDPTR"))
    tensor = broken / "brainevent" / "tensor.h"
    tensor.write_text(tensor.read_text().replace("numel_checked_int", "numel_as_int"))
    tc = Toolchain([c if c != str(BEKC_INCLUDE) else str(broken) for c in cxx.command], ".cpp")

    missing, outputs = check_headers(api, ["common.h", "tensor.h"], tc, tmp_path / "work",
                                     host_names)
    assert missing == {"common.h": {"BE_DISPATCH_CSR_INDPTR", "BE::Tensor::numel_checked_int"},
                       "tensor.h": {"BE::Tensor::numel_checked_int"}}, missing
    message = report(missing, outputs)
    assert "brainevent/common.h: BE::Tensor::numel_checked_int, BE_DISPATCH_CSR_INDPTR" in message

    # Messages that point at no line (here: none at all) are bisected.
    names = [api.names[n] for n in ("BE_CHECK", "BE_DISPATCH_CSR_INDPTR", "BE::Tensor")]
    silence = ("import subprocess, sys; "
               "sys.exit(subprocess.run(sys.argv[1:], capture_output=True).returncode)")
    quiet = Toolchain([sys.executable, "-c", silence, *tc.command], ".cpp")
    assert find_missing(quiet, names, ["dispatch.h"], tmp_path / "bisect")[0] == {
        "BE_DISPATCH_CSR_INDPTR"}


if __name__ == "__main__":
    release = sys.argv[1] if len(sys.argv) > 1 else max(RELEASES)
    inc = brainevent_include(release)
    if inc is None:
        sys.exit(f"brainevent {release} is not installed")
    for entry in sorted(extract_api(inc).names.values(), key=lambda n: (n.header, n.name)):
        flags = f"{entry.context}{', needs CUDA' if entry.needs_cuda else ''}"
        print(f"{entry.header:14} {entry.kind:12} {entry.name}  [{flags}]")
