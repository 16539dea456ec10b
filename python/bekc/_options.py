"""What one load asks for: the loaders' keyword arguments as one value,
:class:`LoaderOptions`, as C++'s ``BuildOptions`` is what ``bekc build``
takes. Each field is a keyword of the binary's table of them
(lib/scan/loader_keywords.hpp, in ``_interface.LOADER_KEYWORDS``), which says
the option it becomes; the field's ``convert`` checks the value and gives
what that option is written with (``_argv.py`` writes them).
"""

from __future__ import annotations

import collections
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from ._interface import LOADER_KEYWORDS

__all__ = ["LoaderOptions", "Functions", "KINDS"]

Functions = Union[Dict[str, Union[Sequence[str], str]], Sequence[str], None]

# The loaders' kinds: "cuda" (load_cuda_*) and "cxx" (load_cpp_*).
KINDS = ("cuda", "cxx")


# --------------------------------------------------------------------------- checks
def _check_token(text: str, what: str) -> str:
    if not text or any(c in text for c in ",= \t\n\r\0"):
        raise ValueError(f"invalid {what} {text!r}: must be non-empty, without ',', '=' or spaces")
    return text


def _name(name, kind: str) -> str:
    if not isinstance(name, str) or not name or "\0" in name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    return name


def _functions(functions: Functions, kind: str) -> List[str]:
    """``NAME=spec`` for each function with a spec, ``NAME`` for a bare name
    (bekc infers its arg_spec from the C++ signature)."""
    if functions is None:
        return []
    if isinstance(functions, dict):
        if not functions:
            raise ValueError("functions={} names no function; pass None to use // @BE annotations")
        out = []
        for fn, spec in functions.items():
            _check_token(str(fn), "function name")
            toks = spec.split(",") if isinstance(spec, str) else list(spec)
            toks = [_check_token(str(t).strip(), f"arg_spec token of {fn}") for t in toks]
            out.append(f"{fn}={','.join(toks)}")
        return out
    if isinstance(functions, str):
        functions = [functions]
    names = [_check_token(str(f), "function name") for f in functions]
    if not names:
        raise ValueError("functions=[] names no function; pass None to use // @BE annotations")
    return names


def _text_or_none(value, kind: str) -> Optional[str]:
    return str(value) if value else None  # brainevent: `target_prefix or name`


def _optimization_level(level, kind: str) -> str:
    if isinstance(level, bool) or level not in (0, 1, 2, 3):
        raise ValueError(f"optimization_level must be 0, 1, 2 or 3, got {level!r}")
    return str(level)


def _flag(value, kind: str) -> bool:
    return bool(value)


def arch_spelling(cc, kind: str = "cuda") -> Optional[str]:
    """``compute_capability`` as ``--arch`` takes it: a list, or a string or int,
    whose comma-separated parts are stripped and joined by commas, each kept as
    the user spelled it; ``bekc build`` alone reads the spellings (the same as
    brainevent's). ``None``, ``""``, ``" , "`` and an empty list give ``None``:
    no explicit choice (brainevent then looks at its pins, ``_argv.py``).
    Only what is no spelling at all is refused here."""
    if cc is None:
        return None
    items = list(cc) if isinstance(cc, (list, tuple)) else [cc]
    tokens: list = []
    for item in items:
        if isinstance(item, bool):
            raise TypeError(f"compute_capability must be a string like 'sm_86', got {item!r}")
        tokens += [p.strip() for p in str(item).split(",") if p.strip()]
    return ",".join(tokens) or None


def _include_paths(paths, kind: str) -> List[str]:
    if paths is None:
        return []
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = os.fspath(p)
        if not p:
            # abspath("") would quietly name the working directory.
            raise ValueError("extra_include_paths entry '' is empty; leave it out")
        out.append(os.path.abspath(p))
    return out


def _compiler_flags(flags, kind: str) -> List[str]:
    if flags is None:
        return []
    if isinstance(flags, str):
        flags = [flags]  # one flag; a list is expected, but be forgiving
    out = []
    for f in flags:
        if not isinstance(f, str):
            raise TypeError(f"extra flags must be strings, got {f!r}")
        if not f:
            # bekc refuses an empty flag (exit 2); say which list held it.
            raise ValueError("extra compiler flags entry '' is empty; leave it out")
        out.append(f)
    return out


def _linker_entries(entries, kind: str) -> List[str]:
    """brainevent's ``extra_ldflags``, each entry checked first.

    CUDA: brainevent passes each entry to the host linker as one argument
    (``-Xlinker E``); bekc's ``--linker-arg=E`` does the same. nvcc splits an
    ``-Xlinker`` value at commas, so an entry with a comma cannot reach the
    linker whole and is refused here. C++: each entry goes to the compiler
    driver as it is (``--ldflag=E``), so ``-Wl,-rpath,/x`` is fine there.
    """
    if entries is None:
        return []
    if isinstance(entries, (str, os.PathLike)):
        entries = [entries]  # one entry; a list is expected, but be forgiving
    out = []
    for e in entries:
        value = os.fspath(e) if isinstance(e, os.PathLike) else e
        if not isinstance(value, str):
            raise TypeError(f"extra_ldflags entry {e!r} is not a string")
        if not value:
            raise ValueError("extra_ldflags entry '' is empty; leave it out")
        if "\0" in value or "\n" in value or "\r" in value:
            raise ValueError(f"extra_ldflags entry {value!r} contains a NUL or a line break, "
                             f"which no linker argument can hold")
        if kind == "cuda" and "," in value:
            raise ValueError(
                f"extra_ldflags entry {value!r} has a comma: a CUDA build passes each entry "
                f"to the linker as one argument through nvcc's -Xlinker, which splits at "
                f"commas. Pass the parts as separate entries (e.g. '-rpath=/dir' instead of "
                f"'-Wl,-rpath,/dir').")
        out.append(value)
    return out


def _path_or_none(path, kind: str) -> Optional[str]:
    return None if path is None else os.path.abspath(os.fspath(path))


def _workers(workers, kind: str) -> Optional[str]:
    if workers is None:
        return None
    if isinstance(workers, bool) or int(workers) < 1:
        raise ValueError(f"ninja_workers must be a positive integer, got {workers!r}")
    return str(int(workers))


def _loader_only(value, kind: str) -> None:
    return None  # the loader's own (replace, auto_register): no option


# --------------------------------------------------------------------------- the options
# The loaders' keywords, each once: its default, and the check that gives the
# value its option is written with (``_argv.py``). One per keyword of the
# binary's table; tests/python/test_binary_interface.py checks both lists.
_KEYWORDS = (
    ("name", None, _name),
    ("functions", None, _functions),
    ("target_prefix", None, _text_or_none),
    ("optimization_level", 3, _optimization_level),
    ("use_fast_math", False, _flag),
    ("compute_capability", None, arch_spelling),
    ("extra_include_paths", None, _include_paths),
    ("extra_cuda_cflags", None, _compiler_flags),
    ("extra_cflags", None, _compiler_flags),
    ("extra_ldflags", None, _linker_entries),
    ("allow_cuda_graph", True, _flag),
    ("force_rebuild", False, _flag),
    ("build_directory", None, _path_or_none),
    ("ninja_workers", None, _workers),
    ("verbose", False, _flag),
    ("replace", False, _loader_only),
    ("auto_register", True, _loader_only),
)
_CONVERT: Dict[str, Callable[[Any, str], Any]] = {k: convert for k, _, convert in _KEYWORDS}

# A named tuple, not a dataclass: making the class costs `import bekc` a
# tenth of what a dataclass of as many fields costs.
_Fields = collections.namedtuple("_Fields", ("kind",) + tuple(k for k, _, _ in _KEYWORDS),
                                 defaults=("cuda",) + tuple(d for _, d, _ in _KEYWORDS))


class LoaderOptions(_Fields):
    """One load's keyword arguments (see :func:`bekc.load_cuda_inline` for
    each), as one value; ``_replace(...)`` gives a changed copy. ``kind`` is
    not a keyword: which loaders made it, ``"cuda"`` or ``"cxx"``; a keyword
    only the other kind's loaders take keeps its default. Values are checked
    when the command is written (:meth:`converted`)."""

    __slots__ = ()

    def __new__(cls, kind: str = "cuda", **keywords) -> "LoaderOptions":
        if kind not in KINDS:
            raise ValueError(f"flag_kind must be 'cuda' or 'cxx', got {kind!r}")
        for key in keywords:
            if key not in _CONVERT:
                raise TypeError(f"unexpected keyword argument {key!r}: the loaders' keywords "
                                f"are {', '.join(_CONVERT)}")
        return super().__new__(cls, kind, **keywords)

    @staticmethod
    def keywords() -> List[str]:
        """Every keyword, in the order of the fields."""
        return [k for k, _, _ in _KEYWORDS]

    @staticmethod
    def taken_by(kind: str) -> List[str]:
        """The keywords the loaders of ``kind`` take."""
        return [k for k, of_kind, _, _ in LOADER_KEYWORDS if of_kind in ("", kind)]

    @classmethod
    def of_call(cls, loader: str, kind: str, arguments: Mapping[str, Any]) -> "LoaderOptions":
        """The options of a call of ``loader`` (of ``kind``): ``arguments`` are
        its parameters by name (its ``locals()`` on entry), ``**kwargs`` among
        them. A name in ``**kwargs`` that the loader does not take raises the
        ``TypeError`` Python raises for a keyword a function does not take."""
        taken = cls.taken_by(kind)
        given = dict(arguments)
        extra = given.pop("kwargs", None) or {}
        for key in extra:
            if key not in taken:
                raise TypeError(f"{loader}() got an unexpected keyword argument {key!r}")
        given.update(extra)
        return cls(kind=kind, **{k: v for k, v in given.items() if k in taken})

    def converted(self, keyword: str) -> Any:
        """The checked value of ``keyword``, as its option is written."""
        return _CONVERT[keyword](getattr(self, keyword), self.kind)
