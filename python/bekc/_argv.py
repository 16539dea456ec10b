"""A load's :class:`~bekc._options.LoaderOptions` as one ``bekc build``
argument vector (:func:`build_argv`), written from the binary's own table of
the loaders' keywords (``_interface.LOADER_KEYWORDS``) as its ``to_argv``
writes options; the compute-capability pins brainevent reads; and bekc's
refusal of a spelling as brainevent's exception (:func:`arch_error`).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Iterable, List, NamedTuple, Optional

from ._errors import CompileError, UnsupportedArchError
from ._interface import ARCH_REFUSALS, LOADER_KEYWORDS
from ._options import Functions, LoaderOptions, arch_spelling

__all__ = ["build_argv", "argv_of", "resolve_arch", "arch_error", "ArchChoice", "Functions"]

# brainevent's environment pin, read when no compute_capability is given.
ARCH_ENV = "BRAINEVENT_COMPUTE_CAPABILITIES"

# The options a load adds to its keywords' (docs/python.md, "What a load
# passes"): each is written as the keywords' options are.
JSON = "--json"
INCLUDE = "-I"
XLA_INCLUDE = "--xla-include"
CACHE_DIR = "--cache-dir"
PYTHON_SITE = "--python-site"
BRAINEVENT_NVCC = "--brainevent-nvcc"
NVCC_PREFER = "--nvcc-prefer"


class ArchChoice(NamedTuple):
    """The CUDA loaders' ``--arch`` value, in the user's spellings, and where it
    came from (``compute_capability '8.6'``), which names it in an error."""

    value: str
    origin: str


def _pinned_arch() -> Optional[ArchChoice]:
    """brainevent's pins, in its order: ``brainevent.config.set_compute_capability``,
    then ``$BRAINEVENT_COMPUTE_CAPABILITIES``.

    The first is process state of an imported brainevent, so it is read only
    when ``brainevent.config`` is already in ``sys.modules`` (nothing else can
    have set it); bekc never imports brainevent for it.
    """
    config = sys.modules.get("brainevent.config")
    getter = getattr(config, "get_compute_capability", None)
    if getter is not None:
        pinned = getter()
        arch = arch_spelling(pinned)
        if arch:
            return ArchChoice(arch, f"brainevent.config.set_compute_capability({pinned!r})")
    env = os.environ.get(ARCH_ENV, "").strip()
    arch = arch_spelling(env)
    return ArchChoice(arch, f"${ARCH_ENV}={env!r}") if arch else None


def resolve_arch(cc) -> Optional[ArchChoice]:
    """The CUDA loaders' ``--arch``: ``compute_capability``, else brainevent's pins,
    else ``None`` (bekc's default, ``auto``: the GPUs present)."""
    arch = arch_spelling(cc)
    return ArchChoice(arch, f"compute_capability {cc!r}") if arch else _pinned_arch()


def _failure(error: CompileError) -> Optional[dict]:
    """The object ``bekc build --json`` printed for its failure, or None."""
    for line in reversed(error.stdout.strip().splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        return found.get("error") if isinstance(found, dict) else None
    return None


def arch_error(error: CompileError, origin: str) -> Optional[ValueError]:
    """bekc's refusal of an ``--arch`` spelling as the exception brainevent raises
    for it (``ValueError``, or ``UnsupportedArchError`` for a major version below
    2), with bekc's reason after ``origin`` and bekc's notes (the architecture
    probably meant, those bekc knows) on lines of their own; ``None`` for any
    other failure. Read from the failure's JSON: its kind, and its message
    against the binary's words for the two refusals (``_interface.ARCH_REFUSALS``)."""
    failure = _failure(error)
    if not failure or failure.get("kind") != "usage":
        return None
    message = str(failure.get("message") or "")
    if not message.startswith(ARCH_REFUSALS["prefix"]):
        return None
    reason = message[len(ARCH_REFUSALS["prefix"]):]
    lines = [f"{origin}: {reason}"] + [f"note: {n}" for n in failure.get("notes") or ()]
    for refusal, kind in (("no_gpu", UnsupportedArchError), ("unreadable", ValueError)):
        if ARCH_REFUSALS[refusal] in reason:
            return kind("\n".join(lines))
    return None


def spelled(option: str, value: str) -> str:
    """One option with its value as the binary's ``to_argv`` writes it:
    ``--option=VALUE``, or ``-XVALUE`` for a short option; so a value that
    starts with '-' is never read as an option."""
    return f"{option}={value}" if option.startswith("--") else f"{option}{value}"


def argv_of(options: LoaderOptions) -> List[str]:
    """The ``bekc build`` arguments ``options``' keywords become, in the order
    of the binary's table; each value checked by its field (``_options.py``)."""
    out: List[str] = []
    for keyword, kind, option, form in LOADER_KEYWORDS:
        if kind not in ("", options.kind) or form == "none":
            continue
        value = options.converted(keyword)
        if form == "each":
            out += [spelled(option, v) for v in value]
        elif form == "value" and value is not None:
            out.append(spelled(option, value))
        elif (form == "when_true" and value) or (form == "when_false" and not value):
            out.append(option)
    return out


def build_argv(inputs: Iterable, options: Optional[LoaderOptions] = None, *,
               flag_kind: str = "cuda", extra_flags=None, cache_dir: Optional[str] = None,
               binary: str = "bekc", brainevent_include: Optional[str] = None,
               xla_include: Optional[str] = None, **keywords) -> List[str]:
    """The ``bekc build`` argument vector for a brainevent-style call.

    ``options`` is a :class:`~bekc._options.LoaderOptions`, or it is made of
    ``flag_kind`` (``"cuda"`` or ``"cxx"``) and the loaders' ``keywords``
    (``name=...``, ``compute_capability=...``, ...); ``extra_flags`` stands
    for that kind's compiler flags (``extra_cuda_cflags`` or ``extra_cflags``).
    Each keyword becomes the option the binary's table names
    (lib/scan/loader_keywords.hpp: ``extra_cuda_cflags`` -> ``--cuda-flag=F``
    each; ``extra_ldflags`` -> one ``--linker-arg=E`` per entry for CUDA, one
    argument for the linker as brainevent's ``-Xlinker E``, ``--ldflag=E`` for
    C++; ...), a value that cannot be passed raising ``TypeError`` or
    ``ValueError`` naming it. ``brainevent_include`` is added as ``-I`` after
    ``extra_include_paths`` (the user's directories are never shadowed),
    ``xla_include`` as ``--xla-include``; the loaders fill both in from the
    installed packages. Values are joined to their options (``--opt=value``,
    ``-Ivalue``), so values starting with ``-`` are never mistaken for
    options; paths are made absolute.
    """
    if options is None:
        if flag_kind not in ("cuda", "cxx"):
            raise ValueError(f"flag_kind must be 'cuda' or 'cxx', got {flag_kind!r}")
        if extra_flags is not None:
            keywords["extra_cuda_cflags" if flag_kind == "cuda" else "extra_cflags"] = extra_flags
        options = LoaderOptions(kind=flag_kind, **keywords)
    argv = [binary, "build"] + [os.path.abspath(os.fspath(p)) for p in inputs] + [JSON]
    argv += argv_of(options)
    if brainevent_include:
        argv.append(spelled(INCLUDE, brainevent_include))
    if xla_include:
        argv.append(spelled(XLA_INCLUDE, xla_include))
    if cache_dir:
        argv.append(spelled(CACHE_DIR, cache_dir))
    return argv
