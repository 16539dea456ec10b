"""brainevent-compatible loaders built on the ``bekc`` binary.

``load_cuda_inline``, ``load_cuda_file``, ``load_cuda_dir``, ``load_cpp_inline``
and ``load_cpp_file`` take brainevent's parameters, turn them into one
``bekc build ... --json`` command (see :func:`build_argv`), run it and
:func:`bekc.load` the manifest it prints.

Inline sources are written once to a content-addressed file,
``<cache dir>/src/<sha256 of the source>/<name>.cu`` (``.cpp`` for C++), so an
unchanged source keeps its path and bekc answers from its cache. A repeated
inline call runs bekc again, since a build also depends on headers, libraries,
response files and the environment, which only bekc's key checks; its hit
takes a few milliseconds and gives back the manifest already loaded, so the
call returns the same module.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.util
import os
import pathlib
import re
import sys
import sysconfig
from typing import List, Optional, Tuple

from . import _inline_sources
from ._argv import ArchChoice, Functions, arch_error, build_argv
from ._argv import _resolve_arch
from ._binary import find_binary, run_bekc
from ._caller import caller_location
from ._errors import BekcError, CacheError, CompileError
from ._loader import Module, load

__all__ = [
    "load_cuda_inline", "load_cuda_file", "load_cuda_dir",
    "load_cpp_inline", "load_cpp_file",
    "clear_cache", "set_cache_dir", "get_cache_dir", "build_argv",
]

_CACHE_DIR_OVERRIDE: Optional[str] = None


# --------------------------------------------------------------------------- cache dir
def get_cache_dir() -> str:
    """The bekc cache directory: ``set_cache_dir``'s value, else ``$BEKC_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/bekc``, else ``~/.cache/bekc`` (bekc's own rule)."""
    if _CACHE_DIR_OVERRIDE:
        return _CACHE_DIR_OVERRIDE
    env = os.environ.get("BEKC_CACHE_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    return _default_cache_dir()


def _default_cache_dir() -> str:
    """The cache when none is chosen: ``$XDG_CACHE_HOME/bekc``, else ``~/.cache/bekc``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "bekc")
    return os.path.join(os.path.expanduser("~"), ".cache", "bekc")


def set_cache_dir(path) -> None:
    """Use ``path`` as the cache for subsequent builds (passed as ``--cache-dir``).

    Created if missing; existing entries elsewhere are not moved. ``None``
    restores the default (``$BEKC_CACHE_DIR`` / XDG / ``~/.cache/bekc``).
    """
    global _CACHE_DIR_OVERRIDE
    if path is None:
        _CACHE_DIR_OVERRIDE = None
        return
    p = os.path.abspath(os.path.expanduser(os.fspath(path)))
    os.makedirs(p, exist_ok=True)
    _CACHE_DIR_OVERRIDE = p


def _cache_dir_args() -> List[str]:
    return [f"--cache-dir={_CACHE_DIR_OVERRIDE}"] if _CACHE_DIR_OVERRIDE else []


def clear_cache(name: Optional[str] = None) -> int:
    """Run ``bekc cache clear [NAME]``; also drops the inline sources this package
    wrote. Returns the number bekc reports removed
    (0 when it prints none). Targets already registered stay registered."""
    argv = [find_binary(), "cache", "clear"] + ([name] if name else []) + _cache_dir_args()
    out = run_bekc(argv, parse_json=False)
    _remove_inline_sources(name)
    m = re.search(r"\d+", out or "")
    return int(m.group(0)) if m else 0


# --------------------------------------------------------------------------- inline sources
# (_inline_sources.py), in the cache this module chooses.
def _remove_inline_sources(name: Optional[str]) -> None:
    _inline_sources.remove_inline_sources(get_cache_dir(), name)


def _inline_source_path(text: str, name: str, ext: str) -> str:
    """In the cache this module chooses; when that is a bekc cache this process
    cannot write and it lacks the source, in the default cache, where bekc
    builds the misses of a read-only cache (docs/cache.md, "Layered caches")."""
    root = get_cache_dir()
    path = _inline_sources.inline_source_path(root, text, name, ext)
    if not _inline_sources.read_only_cache(root) or _inline_sources.holds(root, path, text):
        return path
    return _inline_sources.inline_source_path(_default_cache_dir(), text, name, ext)


def _ensure_source_file(path: str, text: str) -> None:
    _inline_sources.ensure_source_file(_inline_sources.cache_of(path), path, text)


# --------------------------------------------------------------------------- include dirs
def _package_dir(name: str) -> Optional[str]:
    """The directory of top-level package ``name``, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin and os.path.isabs(spec.origin):
        return os.path.dirname(spec.origin)
    locations = list(spec.submodule_search_locations or ())
    return locations[0] if locations else None


# True while a build that brainevent asked for runs: one of the loaders that
# use_for_brainevent() put in brainevent's modules (_brainevent.py) was called.
# Only such a build compiles against brainevent's own headers and takes
# brainevent's nvcc settings; every other load is the `bekc build` of its
# arguments, with bekc's runtime headers (docs/migrating.md, "Which headers").
_FOR_BRAINEVENT: contextvars.ContextVar = contextvars.ContextVar("bekc_for_brainevent",
                                                                default=False)


@contextlib.contextmanager
def building_for_brainevent():
    """Marks the loads made inside it as brainevent's own (use_for_brainevent)."""
    token = _FOR_BRAINEVENT.set(True)
    try:
        yield
    finally:
        _FOR_BRAINEVENT.reset(token)


def _brainevent_include_dir() -> Optional[str]:
    """The real path of the installed brainevent's ``include`` directory, or ``None``."""
    d = _package_dir("brainevent")
    inc = os.path.join(d, "include") if d else None
    return os.path.realpath(inc) if inc and os.path.isdir(inc) else None


def _xla_include_dir() -> Optional[str]:
    """The real path of jaxlib's ``include`` directory (what ``jax.ffi.include_dir()``
    returns) when it holds XLA's FFI headers, or ``None``."""
    d = _package_dir("jaxlib")
    inc = os.path.join(d, "include") if d else None
    if inc and os.path.isfile(os.path.join(inc, "xla", "ffi", "api", "ffi.h")):
        return os.path.realpath(inc)
    return None



def _build_and_load(argv_tail: List[str], *, verbose: bool, auto_register: bool,
                    replace: bool = False, arch: Optional[ArchChoice] = None) -> Module:
    """Runs ``bekc build`` and loads its manifest. bekc's refusal of ``arch``
    raises what brainevent raises for that value (see :func:`arch_error`)."""
    argv = [find_binary()] + argv_tail
    try:
        result = run_bekc(argv, verbose=verbose)
    except CompileError as e:
        refused = arch_error(e, arch.origin) if arch else None
        if refused is None:
            raise
        raise refused from e
    manifest = result.get("manifest") if isinstance(result, dict) else None
    if not manifest:
        raise BekcError(f"bekc --json output has no 'manifest': {result!r}")
    # An unchanged entry comes back as the same Module (load's own memo).
    return load(manifest, register=auto_register, replace=replace)


def _nvidia_sites() -> List[str]:
    """Every ``sys.path`` entry that holds the ``nvidia`` namespace package
    (where brainevent's pipeline looks for a pip CUDA toolkit)."""
    try:
        spec = importlib.util.find_spec("nvidia")
        locations = list(spec.submodule_search_locations or []) if spec else []
    except (ImportError, ValueError):
        locations = []
    return [os.path.dirname(os.path.abspath(loc)) for loc in locations]


@functools.lru_cache(maxsize=1)
def _site_packages() -> Tuple[str, ...]:
    """This interpreter's site-packages (purelib, platlib), which its
    configuration fixes for the life of the process."""
    paths = sysconfig.get_paths()
    return (paths["purelib"], paths["platlib"])


def _python_sites() -> List[str]:
    """The directories of this interpreter where a CUDA toolkit from pip would be:
    those holding ``nvidia`` (:func:`_nvidia_sites`), else this environment's
    site-packages."""
    candidates = _found("nvidia", _nvidia_sites) or _site_packages()
    sites: List[str] = []
    for d in candidates:
        if d and d not in sites:
            sites.append(d)
    return sites


def _site_args(cuda: bool) -> List[str]:
    """``--python-site`` for each directory bekc is to look in: for a CUDA load
    those of a pip toolkit (:func:`_python_sites`), and for every load this
    interpreter's site-packages, whose ``bekc_packs/`` hold the installed packs
    (docs/cache.md, "Installed packs")."""
    sites = _python_sites() if cuda else []
    for d in _site_packages():
        if d and d not in sites:
            sites.append(d)
    return [f"--python-site={d}" for d in sites]


def _nvcc_args() -> List[str]:
    """How bekc is to find nvcc from this interpreter (docs/cli.md, "Which nvcc"):
    its site-packages for a pip toolkit, and, for a build brainevent asked for
    through :func:`bekc.use_for_brainevent`, brainevent's ``BRAINEVENT_NVCC_PATH``
    and nvcc discovery preference."""
    args = _site_args(cuda=True)
    if not _FOR_BRAINEVENT.get():
        return args
    from . import _brainevent  # imports _compat: a late import
    path, prefer = _brainevent.nvcc_settings()
    if path:
        args.append(f"--brainevent-nvcc={os.path.abspath(path)}")
    if prefer:
        args.append(f"--nvcc-prefer={prefer}")
    return args


# What _loader_argv found in this interpreter's packages, and the sys.path (and
# find_spec) it looked with: found again when either changes. Only what was
# found is kept; what was missing is looked for again on every build, so a
# package installed while the process runs is seen on its next build. Not
# seen: a new nvidia/ directory in a site already found, and a chdir while ''
# is on sys.path; both change at most which nvcc bekc chooses, which the key
# records.
_FOUND: dict = {}


def _found(what: str, find):
    stamp = (tuple(sys.path), importlib.util.find_spec)
    kept = _FOUND.get(what)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    value = find()
    if value:
        _FOUND[what] = (stamp, value)
    return value


def prime() -> None:
    """Look up, once per process, what every CUDA load of this interpreter
    passes to bekc (brainevent's and jaxlib's include directories, the
    ``nvidia`` packages or site-packages), so that the first load need not.
    Called on import; a later change of ``sys.path`` makes the next load look
    again (:func:`_found`). Never raises."""
    try:
        _found("brainevent", _brainevent_include_dir)
        _found("xla", _xla_include_dir)
        _python_sites()
    except Exception:  # whatever a finder on sys.path raises: the load looks again
        pass


def _routed_include(name: str, verbose: bool) -> Optional[str]:
    """brainevent's ``include`` directory for a build brainevent asked for
    (:data:`_FOR_BRAINEVENT`), else ``None``: every other load compiles with
    bekc's runtime headers, as ``bekc build`` does. With ``verbose`` the switch
    is said."""
    if not _FOR_BRAINEVENT.get():
        return None
    include = _found("brainevent", _brainevent_include_dir)
    if include and verbose:
        sys.stderr.write(f"bekc: use_for_brainevent(): brainevent's build of {name!r} uses "
                         f"brainevent's own headers ({include}) ahead of bekc's\n")
    return include


def _loader_argv(inputs, *, flag_kind: str, compute_capability=None,
                 **options) -> Tuple[List[str], Optional[ArchChoice]]:
    """``build_argv`` plus what every load adds: XLA's FFI headers
    (``jax.ffi.include_dir()``), this interpreter's site-packages (for its
    installed packs), and, for CUDA, brainevent's compute-capability pins and
    the nvcc this interpreter has; for a build brainevent asked for
    (:func:`building_for_brainevent`), also brainevent's ``include`` directory.
    Also the architecture chosen, for :func:`_build_and_load`."""
    arch = _resolve_arch(compute_capability) if flag_kind == "cuda" else None
    include = _routed_include(options["name"], options.get("verbose", False))
    argv = build_argv(inputs, flag_kind=flag_kind, compute_capability=arch and arch.value,
                      cache_dir=_CACHE_DIR_OVERRIDE, brainevent_include=include,
                      xla_include=_found("xla", _xla_include_dir), **options)
    return argv + (_nvcc_args() if flag_kind == "cuda" else _site_args(cuda=False)), arch


def _name_the_caller(error: CompileError, loader: str, src: str) -> None:
    """Adds to ``error``'s message, after bekc's diagnostics (which name the
    file in the cache the source was written to), a note in compiler format
    naming the user's line that passed the inline source; kept as
    ``error.caller`` ``(file, line)`` too."""
    where = caller_location()
    if where is None:
        return
    note = f"{where[0]}:{where[1]}: note: {loader}() was called here; its inline source is {src}"
    text = str(error)
    cut = text.rfind("\ncommand: ")
    error.args = ((text[:cut] + "\n" + note + text[cut:]) if cut >= 0 else text + "\n" + note,)
    error.caller = where


def _load_inline(name, sources, ext, flag_kind, functions, extra_flags, *, replace,
                 auto_register, **options) -> Module:
    """``options``: the keyword arguments of :func:`build_argv` a loader takes."""
    text = _inline_sources.join_sources(sources)
    src = _inline_source_path(text, name, ext)
    argv, arch = _loader_argv([src], name=name, functions=functions, flag_kind=flag_kind,
                              extra_flags=extra_flags, **options)
    tail = argv[1:]
    force_rebuild = options["force_rebuild"]
    # brainevent: force_rebuild re-registers as replace would.
    replace = bool(replace or force_rebuild)
    # bekc runs every time: besides the text and the argv, a build reads
    # headers, libraries, response files and the environment ($CPATH, ...),
    # which only bekc's key checks. A hit costs it a few milliseconds.
    try:
        _ensure_source_file(src, text)
    except OSError as e:
        root = _inline_sources.cache_of(src)
        raise CacheError(
            f"cannot write the inline source {src} into bekc's cache {root}: "
            f"{e.strerror or e}; choose another cache with bekc.set_cache_dir(DIR), "
            f"$BEKC_CACHE_DIR=DIR, or --cache-dir DIR for the bekc command",
            cache_dir=root) from e
    try:
        return _build_and_load(tail, verbose=options["verbose"], auto_register=auto_register,
                               replace=replace, arch=arch)
    except CompileError as e:
        _name_the_caller(e, "load_cuda_inline" if flag_kind == "cuda" else "load_cpp_inline", src)
        raise


# --------------------------------------------------------------------------- public loaders
def load_cuda_inline(
    name: str,
    cuda_sources,
    functions: Functions = None,
    *,
    extra_cuda_cflags: Optional[List[str]] = None,
    extra_ldflags: Optional[List[str]] = None,
    extra_include_paths: Optional[List[str]] = None,
    build_directory: Optional[str] = None,
    verbose: bool = False,
    compute_capability=None,
    force_rebuild: bool = False,
    replace: bool = False,
    auto_register: bool = True,
    target_prefix: Optional[str] = None,
    ninja_workers: Optional[int] = None,
    optimization_level: int = 3,
    use_fast_math: bool = False,
    allow_cuda_graph: bool = True,
) -> Module:
    """Compile inline CUDA source with ``bekc build`` and load it (brainevent API).

    ``cuda_sources`` is a string or a list of strings (joined). ``functions``
    maps names to arg_spec tokens (``{"vector_add": ["arg", "arg", "ret",
    "stream"]}``), lists bare names (spec inferred), or is ``None`` (``// @BE``
    annotations). Targets are registered as ``<target_prefix or name>.<fn>``
    unless ``auto_register=False``.

    ``extra_cuda_cflags`` -> ``--cuda-flag`` each; ``extra_ldflags`` -> one
    ``--linker-arg`` per entry (one linker argument, brainevent's ``-Xlinker``;
    an entry with a comma raises ``ValueError``); ``extra_include_paths`` ->
    ``-I``, ahead of bekc's runtime headers (the headers ``bekc build`` uses:
    brainevent's own ``include`` directory is added only to the builds
    brainevent asks for under :func:`bekc.use_for_brainevent`), and jaxlib's
    XLA FFI headers go in as ``--xla-include``;
    ``build_directory`` -> ``-o`` (the library and manifest are placed there);
    ``compute_capability`` (``"8.6"``, ``"sm_86"``, ``"compute_86"``, lists) ->
    ``--arch``, and when it is ``None`` brainevent's pins
    (``brainevent.config.set_compute_capability``, then
    ``$BRAINEVENT_COMPUTE_CAPABILITIES``) apply; ``force_rebuild`` ->
    ``--force``; ``replace``: see :func:`bekc.load` (XLA cannot re-point a
    registered target, so a changed library under a registered name raises
    :class:`bekc.TargetConflictError`, with or without it);
    ``ninja_workers`` -> ``-j``; ``optimization_level`` -> ``-O<n>``;
    ``use_fast_math`` -> ``--fast-math``; ``allow_cuda_graph=False`` ->
    ``--no-cuda-graph``; ``verbose`` -> ``-v``.
    Raises :class:`bekc.CompileError` with bekc's diagnostics on failure
    (they name the file in bekc's cache the source was written to), followed
    by a note naming the line that called this function.
    """
    return _load_inline(
        name, cuda_sources, ".cu", "cuda", functions, extra_cuda_cflags,
        extra_ldflags=extra_ldflags, extra_include_paths=extra_include_paths,
        build_directory=build_directory, verbose=verbose, compute_capability=compute_capability,
        force_rebuild=force_rebuild, replace=replace, auto_register=auto_register,
        target_prefix=target_prefix, ninja_workers=ninja_workers,
        optimization_level=optimization_level, use_fast_math=use_fast_math,
        allow_cuda_graph=allow_cuda_graph)


def load_cpp_inline(
    name: str,
    cpp_sources,
    functions: Functions = None,
    *,
    extra_cflags: Optional[List[str]] = None,
    extra_ldflags: Optional[List[str]] = None,
    extra_include_paths: Optional[List[str]] = None,
    build_directory: Optional[str] = None,
    verbose: bool = False,
    force_rebuild: bool = False,
    replace: bool = False,
    auto_register: bool = True,
    target_prefix: Optional[str] = None,
    ninja_workers: Optional[int] = None,
    optimization_level: int = 3,
    use_fast_math: bool = False,
) -> Module:
    """Compile inline C++ (CPU) source with ``bekc build`` and load it.

    Same parameters as :func:`load_cuda_inline`, with ``extra_cflags``
    (-> ``--cxx-flag``) in place of ``extra_cuda_cflags`` and no CUDA options.
    Each ``extra_ldflags`` entry goes to the compiler driver as it is
    (``--ldflag``), as in brainevent. Targets are registered for platform
    ``"cpu"``.
    """
    return _load_inline(
        name, cpp_sources, ".cpp", "cxx", functions, extra_cflags,
        extra_ldflags=extra_ldflags, extra_include_paths=extra_include_paths,
        build_directory=build_directory, verbose=verbose, compute_capability=None,
        force_rebuild=force_rebuild, replace=replace, auto_register=auto_register,
        target_prefix=target_prefix, ninja_workers=ninja_workers,
        optimization_level=optimization_level, use_fast_math=use_fast_math,
        allow_cuda_graph=True)


def _load_files(files: List[str], name: str, flag_kind: str, functions, extra_flags, *,
                extra_ldflags=None, extra_include_paths=None, build_directory=None,
                verbose=False, compute_capability=None, force_rebuild=False, replace=False,
                auto_register=True, target_prefix=None, ninja_workers=None,
                optimization_level=3, use_fast_math=False, allow_cuda_graph=True) -> Module:
    argv, arch = _loader_argv(
        files, name=name, functions=functions, flag_kind=flag_kind, extra_flags=extra_flags,
        extra_ldflags=extra_ldflags, extra_include_paths=extra_include_paths,
        build_directory=build_directory, verbose=verbose, compute_capability=compute_capability,
        force_rebuild=force_rebuild, target_prefix=target_prefix, ninja_workers=ninja_workers,
        optimization_level=optimization_level, use_fast_math=use_fast_math,
        allow_cuda_graph=allow_cuda_graph)
    # Files on disk may include headers bekc alone tracks: always ask bekc (a hit costs ms).
    return _build_and_load(argv[1:], verbose=verbose, auto_register=auto_register,
                           replace=bool(replace or force_rebuild), arch=arch)


def _stem(path) -> str:
    return os.path.splitext(os.path.basename(os.fspath(path)))[0]


def _existing_file(path) -> str:
    """The real path of a source file: one file reached through different
    spellings (symlinks, ``..``) is one input, so one bekc cache key."""
    p = os.path.realpath(os.fspath(path))
    if not os.path.isfile(p):
        raise FileNotFoundError(f"source file not found: {os.path.abspath(os.fspath(path))}")
    return p


def load_cuda_file(filepath, functions: Functions = None, *, name: Optional[str] = None,
                   extra_cuda_cflags=None, **kwargs) -> Module:
    """Compile one ``.cu`` file (passed to bekc by its real path, so diagnostics
    name it) and load it. ``name`` defaults to the file stem as spelled; other
    keywords as in :func:`load_cuda_inline`."""
    p = _existing_file(filepath)
    return _load_files([p], name or _stem(filepath), "cuda", functions, extra_cuda_cflags,
                       **kwargs)


def load_cuda_dir(directory, functions: Functions = None, *, name: Optional[str] = None,
                  file_patterns: Optional[List[str]] = None, extra_cuda_cflags=None,
                  **kwargs) -> Module:
    """Compile every file of ``directory`` matching ``file_patterns`` (default
    ``["*.cu"]``; ``pathlib`` glob patterns, so ``"**/*.cu"`` recurses, as in
    brainevent; ``.cpp`` files matched too become CPU targets) into one module.
    ``name`` defaults to the directory name; other keywords as in
    :func:`load_cuda_inline`."""
    spelled = os.path.abspath(os.fspath(directory))
    d = os.path.realpath(spelled)
    if not os.path.isdir(d):
        raise FileNotFoundError(f"not a directory: {spelled}")
    patterns = list(file_patterns or ["*.cu"])
    files: List[str] = []
    root = pathlib.Path(d)
    for pat in patterns:
        for p in sorted(str(m) for m in root.glob(pat)):
            real = os.path.realpath(p)
            if os.path.isfile(real) and real not in files:
                files.append(real)
    if not files:
        raise FileNotFoundError(f"no source files matching {patterns} in {spelled}")
    return _load_files(files, name or os.path.basename(spelled.rstrip(os.sep)), "cuda",
                       functions, extra_cuda_cflags, **kwargs)


def load_cpp_file(filepath, functions: Functions = None, *, name: Optional[str] = None,
                  extra_cflags=None, **kwargs) -> Module:
    """Compile one C++ file for the CPU and load it. ``name`` defaults to the file
    stem as spelled; other keywords as in :func:`load_cpp_inline`."""
    p = _existing_file(filepath)
    return _load_files([p], name or _stem(filepath), "cxx", functions, extra_cflags, **kwargs)
