"""brainevent's loader parameters as one ``bekc build`` argument vector
(:func:`build_argv`), the compute-capability pins brainevent reads, and
bekc's refusal of a spelling as brainevent's exception (:func:`arch_error`).
"""

from __future__ import annotations

import os
import sys
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Union

from ._errors import CompileError, UnsupportedArchError

Functions = Union[Dict[str, Union[Sequence[str], str]], Sequence[str], None]


# brainevent's environment pin, read when no compute_capability is given.
ARCH_ENV = "BRAINEVENT_COMPUTE_CAPABILITIES"


class ArchChoice(NamedTuple):
    """The CUDA loaders' ``--arch`` value, in the user's spellings, and where it
    came from (``compute_capability '8.6'``), which names it in an error."""

    value: str
    origin: str


def _arch_spelling(cc) -> Optional[str]:
    """``compute_capability`` as ``--arch`` takes it: a list, or a string or int,
    whose comma-separated parts are stripped and joined by commas, each kept as
    the user spelled it; ``bekc build`` alone reads the spellings (the same as
    brainevent's). ``None``, ``""``, ``" , "`` and an empty list give ``None``:
    no explicit choice (brainevent then looks at its pins, see
    :func:`_resolve_arch`). Only what is no spelling at all is refused here."""
    if cc is None:
        return None
    items = list(cc) if isinstance(cc, (list, tuple)) else [cc]
    tokens: list = []
    for item in items:
        if isinstance(item, bool):
            raise TypeError(f"compute_capability must be a string like 'sm_86', got {item!r}")
        tokens += [p.strip() for p in str(item).split(",") if p.strip()]
    return ",".join(tokens) or None


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
        arch = _arch_spelling(pinned)
        if arch:
            return ArchChoice(arch, f"brainevent.config.set_compute_capability({pinned!r})")
    env = os.environ.get(ARCH_ENV, "").strip()
    arch = _arch_spelling(env)
    return ArchChoice(arch, f"${ARCH_ENV}={env!r}") if arch else None


def _resolve_arch(cc) -> Optional[ArchChoice]:
    """The CUDA loaders' ``--arch``: ``compute_capability``, else brainevent's pins,
    else ``None`` (bekc's default, ``auto``: the GPUs present)."""
    arch = _arch_spelling(cc)
    return ArchChoice(arch, f"compute_capability {cc!r}") if arch else _pinned_arch()


# How ``bekc build`` refuses an --arch value (lib/plan/arch.cpp), and the
# exception brainevent raises for it.
_ARCH_ERROR = "bekc: error: --arch: "
_ARCH_REFUSALS = (("no CUDA GPU has a major version below 2", UnsupportedArchError),
                  ("is not a GPU architecture", ValueError))


def arch_error(error: CompileError, origin: str) -> Optional[ValueError]:
    """bekc's refusal of an ``--arch`` spelling as the exception brainevent raises
    for it (``ValueError``, or ``UnsupportedArchError`` for a major version below
    2), with bekc's reason after ``origin`` and bekc's notes (the architecture
    probably meant, those bekc knows) on lines of their own; ``None`` for any
    other failure."""
    if error.returncode != 2:
        return None
    lines = error.stderr.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith(_ARCH_ERROR):
            continue
        reason = line[len(_ARCH_ERROR):]
        notes = []
        for note in lines[i + 1:]:
            if not note.startswith("note: "):
                break
            notes.append(note)
        for words, kind in _ARCH_REFUSALS:
            if words in reason:
                return kind("\n".join([f"{origin}: {reason}"] + notes))
    return None


def _check_token(text: str, what: str) -> str:
    if not text or any(c in text for c in ",= \t\n\r\0"):
        raise ValueError(f"invalid {what} {text!r}: must be non-empty, without ',', '=' or spaces")
    return text


def _function_args(functions: Functions) -> List[str]:
    if functions is None:
        return []
    if isinstance(functions, dict):
        if not functions:
            raise ValueError("functions={} names no function; pass None to use // @BE annotations")
        args = []
        for fn, spec in functions.items():
            _check_token(str(fn), "function name")
            toks = spec.split(",") if isinstance(spec, str) else list(spec)
            toks = [_check_token(str(t).strip(), f"arg_spec token of {fn}") for t in toks]
            args.append(f"--function={fn}={','.join(toks)}")
        return args
    if isinstance(functions, str):
        functions = [functions]
    names = [_check_token(str(f), "function name") for f in functions]
    if not names:
        raise ValueError("functions=[] names no function; pass None to use // @BE annotations")
    # Bare names: bekc infers each arg_spec from the C++ signature.
    return [f"--function={n}" for n in names]


def build_argv(
    inputs: Iterable[str],
    *,
    name: str,
    functions: Functions = None,
    flag_kind: str = "cuda",
    extra_flags: Optional[Sequence[str]] = None,
    extra_ldflags: Optional[Sequence[str]] = None,
    extra_include_paths: Optional[Sequence[str]] = None,
    build_directory: Optional[str] = None,
    verbose: bool = False,
    compute_capability=None,
    force_rebuild: bool = False,
    target_prefix: Optional[str] = None,
    ninja_workers: Optional[int] = None,
    optimization_level: int = 3,
    use_fast_math: bool = False,
    allow_cuda_graph: bool = True,
    cache_dir: Optional[str] = None,
    binary: str = "bekc",
    brainevent_include: Optional[str] = None,
    xla_include: Optional[str] = None,
) -> List[str]:
    """The ``bekc build`` argument vector for a brainevent-style call.

    ``flag_kind`` is ``"cuda"`` (``extra_flags`` become ``--cuda-flag=F``, each
    ``extra_ldflags`` entry one ``--linker-arg=E``: one argument for the
    linker, as brainevent's ``-Xlinker E``) or ``"cxx"`` (``--cxx-flag=F`` and
    ``--ldflag=E``: the entry goes to the compiler driver as it is, as in
    brainevent). An ``extra_ldflags`` entry that cannot be passed that way
    raises ``TypeError``/``ValueError`` naming it. ``brainevent_include`` is
    added as ``-I`` after ``extra_include_paths`` (the user's directories are
    never shadowed), ``xla_include`` as ``--xla-include``; the loaders fill both
    in from the installed packages. Options with values use the
    ``--opt=value`` form so values starting with ``-`` are never mistaken for
    options; paths are made absolute.
    """
    if not isinstance(name, str) or not name or "\0" in name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if isinstance(optimization_level, bool) or optimization_level not in (0, 1, 2, 3):
        raise ValueError(f"optimization_level must be 0, 1, 2 or 3, got {optimization_level!r}")
    if flag_kind not in ("cuda", "cxx"):
        raise ValueError(f"flag_kind must be 'cuda' or 'cxx', got {flag_kind!r}")
    argv = [binary, "build"]
    argv += [os.path.abspath(os.fspath(p)) for p in inputs]
    argv += [f"--name={name}", "--json", f"-O{optimization_level}"]
    if verbose:
        argv.append("-v")
    if target_prefix:  # brainevent: `target_prefix or name`
        argv.append(f"--target-prefix={target_prefix}")
    if use_fast_math:
        argv.append("--fast-math")
    arch = _arch_spelling(compute_capability)
    if arch:
        argv.append(f"--arch={arch}")
    for inc in _as_paths(extra_include_paths):
        if not inc:
            # abspath("") would quietly name the working directory.
            raise ValueError("extra_include_paths entry '' is empty; leave it out")
        argv += ["-I", os.path.abspath(inc)]
    if brainevent_include:
        argv += ["-I", brainevent_include]
    if xla_include:
        argv.append(f"--xla-include={xla_include}")
    opt = "--cuda-flag" if flag_kind == "cuda" else "--cxx-flag"
    for f in _as_list(extra_flags, "extra flags"):
        if isinstance(f, str) and not f:
            # bekc refuses an empty flag (exit 2); say which list held it.
            raise ValueError("extra compiler flags entry '' is empty; leave it out")
        argv.append(f"{opt}={f}")
    argv += _linker_args(extra_ldflags, flag_kind)
    if not allow_cuda_graph:
        argv.append("--no-cuda-graph")
    if force_rebuild:
        argv.append("--force")
    if ninja_workers is not None:
        if isinstance(ninja_workers, bool) or int(ninja_workers) < 1:
            raise ValueError(f"ninja_workers must be a positive integer, got {ninja_workers!r}")
        argv += ["-j", str(int(ninja_workers))]
    if cache_dir:
        argv.append(f"--cache-dir={cache_dir}")
    if build_directory is not None:
        argv += ["-o", os.path.abspath(os.fspath(build_directory))]
    argv += _function_args(functions)
    return argv


def _as_paths(paths) -> List[str]:
    if paths is None:
        return []
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def _linker_args(entries, flag_kind: str) -> List[str]:
    """brainevent's ``extra_ldflags`` as bekc options, each entry checked first.

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
    cuda = flag_kind == "cuda"
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
        if cuda and "," in value:
            raise ValueError(
                f"extra_ldflags entry {value!r} has a comma: a CUDA build passes each entry "
                f"to the linker as one argument through nvcc's -Xlinker, which splits at "
                f"commas. Pass the parts as separate entries (e.g. '-rpath=/dir' instead of "
                f"'-Wl,-rpath,/dir').")
        out.append(("--linker-arg=" if cuda else "--ldflag=") + value)
    return out


def _as_list(flags, what: str) -> List[str]:
    if flags is None:
        return []
    if isinstance(flags, str):
        return [flags]  # one flag; a list is expected, but be forgiving
    out = []
    for f in flags:
        if not isinstance(f, str):
            raise TypeError(f"{what} must be strings, got {f!r}")
        out.append(f)
    return out
