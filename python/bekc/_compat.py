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

import functools
import importlib.util
import os
import pathlib
import re
import sys
import sysconfig
from typing import List, Optional, Tuple

from . import _cache_choice, _inline_sources
from ._argv import (BRAINEVENT_NVCC, CACHE_DIR, NVCC_PREFER, PYTHON_SITE, ArchChoice, Functions,
                    arch_error, build_argv, resolve_arch, spelled)
from ._binary import find_binary
from ._cache_choice import cache_choice
from ._caller import caller_location
from ._errors import BekcError, CacheError, CompileError
from ._for_brainevent import building_for_brainevent  # noqa: F401  (tests reach it here)
from ._for_brainevent import for_brainevent, nvcc_settings
from ._loader import Module, load
from ._options import LoaderOptions
from ._run import run_bekc

__all__ = [
    "load_cuda_inline", "load_cuda_file", "load_cuda_dir",
    "load_cpp_inline", "load_cpp_file",
    "clear_cache", "set_cache_dir", "get_cache_dir", "build_argv",
]

_CACHE_DIR_OVERRIDE: Optional[str] = None


# --------------------------------------------------------------------------- cache dir
def get_cache_dir() -> str:
    """The bekc cache directory: ``set_cache_dir``'s value, else the one the
    ``bekc`` binary uses (``$BEKC_CACHE_DIR``, else ``cache_dir`` in bekc.conf,
    else ``$XDG_CACHE_HOME/bekc``, else ``~/.cache/bekc``), as the binary
    says it (``bekc cache path``)."""
    return cache_choice(find_binary(), _CACHE_DIR_OVERRIDE).dir


def set_cache_dir(path) -> None:
    """Use ``path`` as the cache for subsequent builds (passed as ``--cache-dir``).

    Created if missing; existing entries elsewhere are not moved. ``None``
    restores the default (the one the binary chooses: see :func:`get_cache_dir`).
    """
    global _CACHE_DIR_OVERRIDE
    if path is None:
        _CACHE_DIR_OVERRIDE = None
        return
    p = os.path.abspath(os.path.expanduser(os.fspath(path)))
    os.makedirs(p, exist_ok=True)
    _CACHE_DIR_OVERRIDE = p


def _cache_dir_args() -> List[str]:
    return [spelled(CACHE_DIR, _CACHE_DIR_OVERRIDE)] if _CACHE_DIR_OVERRIDE else []


def clear_cache(name: Optional[str] = None) -> int:
    """Run ``bekc cache clear [NAME]``; also drops the inline sources this package
    wrote. Returns the number bekc reports removed
    (0 when it prints none). Targets already registered stay registered."""
    binary = find_binary()
    out = run_bekc([binary, "cache", "clear"] + ([name] if name else []) + _cache_dir_args(),
                   parse_json=False)
    _inline_sources.remove_inline_sources(cache_choice(binary, _CACHE_DIR_OVERRIDE).dir, name)
    m = re.search(r"\d+", out or "")
    return int(m.group(0)) if m else 0


# --------------------------------------------------------------------------- inline sources
# (_inline_sources.py), in the cache the binary chooses.
def _remove_inline_sources(name: Optional[str]) -> None:
    _inline_sources.remove_inline_sources(get_cache_dir(), name)


def _inline_source_path(text: str, name: str, ext: str, binary: Optional[str] = None) -> str:
    """In the cache the binary uses; when that is a bekc cache this process
    cannot write and it lacks the source, in the cache the binary builds the
    misses of such a cache into (docs/cache.md, "Layered caches")."""
    choice = cache_choice(binary or find_binary(), _CACHE_DIR_OVERRIDE)
    path = _inline_sources.inline_source_path(choice.dir, text, name, ext)
    if choice.demoted is None or _inline_sources.holds(choice.dir, path, text):
        return path
    return _inline_sources.inline_source_path(choice.own, text, name, ext)


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



def _build_and_load(argv: List[str], options: LoaderOptions,
                    arch: Optional[ArchChoice] = None) -> Module:
    """Runs ``bekc build`` and loads its manifest. bekc's refusal of ``arch``
    raises what brainevent raises for that value (see :func:`arch_error`).
    brainevent: ``force_rebuild`` re-registers as ``replace`` would."""
    try:
        result = run_bekc(argv, verbose=options.verbose)
    except CompileError as e:
        refused = arch_error(e, arch.origin) if arch else None
        if refused is None:
            raise
        raise refused from e
    manifest = result.get("manifest") if isinstance(result, dict) else None
    if not manifest:
        raise BekcError(f"bekc --json output has no 'manifest': {result!r}")
    # An unchanged entry comes back as the same Module (load's own memo).
    return load(manifest, register=options.auto_register,
                replace=bool(options.replace or options.force_rebuild))


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
    return [spelled(PYTHON_SITE, d) for d in sites]


def _nvcc_args() -> List[str]:
    """How bekc is to find nvcc from this interpreter (docs/cli.md, "Which nvcc"):
    its site-packages for a pip toolkit, and, for a build brainevent asked for
    through :func:`bekc.use_for_brainevent`, brainevent's ``BRAINEVENT_NVCC_PATH``
    and nvcc discovery preference."""
    args = _site_args(cuda=True)
    if not for_brainevent():
        return args
    path, prefer = nvcc_settings()
    if path:
        args.append(spelled(BRAINEVENT_NVCC, os.path.abspath(path)))
    if prefer:
        args.append(spelled(NVCC_PREFER, prefer))
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
    ``nvidia`` packages or site-packages) and the cache the binary uses (of
    its lookup library only: no process starts), so that the first load need
    not. Called on import; a later change of ``sys.path`` makes the next load
    look again (:func:`_found`), as a change of the variables the cache's
    choice read does (``_cache_choice.py``). Never raises."""
    try:
        _found("brainevent", _brainevent_include_dir)
        _found("xla", _xla_include_dir)
        _python_sites()
        _cache_choice.prime(find_binary(), _CACHE_DIR_OVERRIDE)
    except Exception:  # whatever a finder on sys.path raises: the load looks again
        pass


def _routed_include(name: str, verbose: bool) -> Optional[str]:
    """brainevent's ``include`` directory for a build brainevent asked for
    (``_for_brainevent.py``), else ``None``: every other load compiles with
    bekc's runtime headers, as ``bekc build`` does. With ``verbose`` the switch
    is said."""
    if not for_brainevent():
        return None
    include = _found("brainevent", _brainevent_include_dir)
    if include and verbose:
        sys.stderr.write(f"bekc: use_for_brainevent(): brainevent's build of {name!r} uses "
                         f"brainevent's own headers ({include}) ahead of bekc's\n")
    return include


def _loader_argv(inputs, options: Optional[LoaderOptions] = None, binary: str = "bekc", *,
                 flag_kind: str = "cuda", **keywords) -> Tuple[List[str], Optional[ArchChoice]]:
    """``build_argv`` of ``options`` (or of ``flag_kind`` and the loaders'
    ``keywords``) plus what every load adds: XLA's FFI headers
    (``jax.ffi.include_dir()``), this interpreter's site-packages (for its
    installed packs), and, for CUDA, brainevent's compute-capability pins and
    the nvcc this interpreter has; for a build brainevent asked for
    (:func:`building_for_brainevent`), also brainevent's ``include`` directory.
    Also the architecture chosen, for :func:`_build_and_load`."""
    if options is None:
        options = LoaderOptions(kind=flag_kind, **keywords)
    cuda = options.kind == "cuda"
    arch = resolve_arch(options.compute_capability) if cuda else None
    chosen = options._replace(compute_capability=arch and arch.value)
    argv = build_argv(inputs, chosen, binary=binary, cache_dir=_CACHE_DIR_OVERRIDE,
                      brainevent_include=_routed_include(options.name, options.verbose),
                      xla_include=_found("xla", _xla_include_dir))
    return argv + (_nvcc_args() if cuda else _site_args(cuda=False)), arch


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


def _load_inline(loader: str, sources, ext: str, options: LoaderOptions) -> Module:
    """Writes the inline source into the cache (``_inline_sources.py``) and loads it.
    bekc runs every time: besides the text and the argv, a build reads
    headers, libraries, response files and the environment ($CPATH, ...),
    which only bekc's key checks. A hit costs it a few milliseconds."""
    text = _inline_sources.join_sources(sources)
    binary = find_binary()
    src = _inline_source_path(text, options.name, ext, binary)
    argv, arch = _loader_argv([src], options, binary)
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
        return _build_and_load(argv, options, arch)
    except CompileError as e:
        _name_the_caller(e, loader, src)
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
    options = LoaderOptions.of_call("load_cuda_inline", "cuda", locals())
    return _load_inline("load_cuda_inline", cuda_sources, ".cu", options)


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
    options = LoaderOptions.of_call("load_cpp_inline", "cxx", locals())
    return _load_inline("load_cpp_inline", cpp_sources, ".cpp", options)


def _load_files(files: List[str], options: LoaderOptions) -> Module:
    argv, arch = _loader_argv(files, options, find_binary())
    # Files on disk may include headers bekc alone tracks: always ask bekc (a hit costs ms).
    return _build_and_load(argv, options, arch)


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
    options = LoaderOptions.of_call("load_cuda_file", "cuda", locals())
    p = _existing_file(filepath)
    return _load_files([p], options._replace(name=name or _stem(filepath)))


def load_cuda_dir(directory, functions: Functions = None, *, name: Optional[str] = None,
                  file_patterns: Optional[List[str]] = None, extra_cuda_cflags=None,
                  **kwargs) -> Module:
    """Compile every file of ``directory`` matching ``file_patterns`` (default
    ``["*.cu"]``; ``pathlib`` glob patterns, so ``"**/*.cu"`` recurses, as in
    brainevent; ``.cpp`` files matched too become CPU targets) into one module.
    ``name`` defaults to the directory name; other keywords as in
    :func:`load_cuda_inline`."""
    options = LoaderOptions.of_call("load_cuda_dir", "cuda", locals())
    given = os.path.abspath(os.fspath(directory))
    d = os.path.realpath(given)
    if not os.path.isdir(d):
        raise FileNotFoundError(f"not a directory: {given}")
    patterns = list(file_patterns or ["*.cu"])
    files: List[str] = []
    root = pathlib.Path(d)
    for pat in patterns:
        for p in sorted(str(m) for m in root.glob(pat)):
            real = os.path.realpath(p)
            if os.path.isfile(real) and real not in files:
                files.append(real)
    if not files:
        raise FileNotFoundError(f"no source files matching {patterns} in {given}")
    return _load_files(files, options._replace(
        name=name or os.path.basename(given.rstrip(os.sep))))


def load_cpp_file(filepath, functions: Functions = None, *, name: Optional[str] = None,
                  extra_cflags=None, **kwargs) -> Module:
    """Compile one C++ file for the CPU and load it. ``name`` defaults to the file
    stem as spelled; other keywords as in :func:`load_cpp_inline`."""
    options = LoaderOptions.of_call("load_cpp_file", "cxx", locals())
    p = _existing_file(filepath)
    return _load_files([p], options._replace(name=name or _stem(filepath)))
