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

import hashlib
import importlib.util
import os
import pathlib
import re
import stat
import secrets
import sys
import sysconfig
from typing import Dict, Iterable, List, Optional, Sequence, Union

from ._binary import find_binary, run_bekc
from ._errors import BekcError, CacheError, UnsupportedArchError
from ._loader import Module, load

__all__ = [
    "load_cuda_inline", "load_cuda_file", "load_cuda_dir",
    "load_cpp_inline", "load_cpp_file",
    "clear_cache", "set_cache_dir", "get_cache_dir", "build_argv",
]

_CACHE_DIR_OVERRIDE: Optional[str] = None

Functions = Union[Dict[str, Union[Sequence[str], str]], Sequence[str], None]


# --------------------------------------------------------------------------- cache dir
def get_cache_dir() -> str:
    """The bekc cache directory: ``set_cache_dir``'s value, else ``$BEKC_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/bekc``, else ``~/.cache/bekc`` (bekc's own rule)."""
    if _CACHE_DIR_OVERRIDE:
        return _CACHE_DIR_OVERRIDE
    env = os.environ.get("BEKC_CACHE_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
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


# bekc's inline sources: <cache>/src/<sha256 of the text>/<stem>.cu|.cpp, and
# the temporaries _ensure_source_file writes beside them.
_INLINE_DIR_NAME = re.compile(r"[0-9a-f]{64}")
_INLINE_FILE_NAME = re.compile(r"(?:[A-Za-z0-9_+][A-Za-z0-9_.+-]*|\.tmp-\d+-[0-9a-f]{16})"
                               r"\.(?:cu|cpp)")


def _remove_inline_sources(name: Optional[str]) -> None:
    """Removes the inline sources under <cache>/src: only names bekc writes
    there (a project's own src/ in a directory used as the cache stays), never
    following a link. With `name`, only that module's files."""
    try:
        root = _open_dir_nofollow(get_cache_dir(), ["src"], create=False)
    except OSError:
        return  # missing, or a link: not ours to walk
    safe = _safe_file_stem(name) if name is not None else None
    try:
        for sub in os.listdir(root):
            if not _INLINE_DIR_NAME.fullmatch(sub):
                continue
            try:
                d = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
            except OSError:
                if safe is None:  # one of bekc's names, but a link or a file: it goes
                    try:
                        os.unlink(sub, dir_fd=root)  # a link itself, never its target
                    except OSError:
                        pass
                continue
            try:
                for entry in os.listdir(d):
                    ours = (entry in (safe + ".cu", safe + ".cpp") if safe is not None
                            else _INLINE_FILE_NAME.fullmatch(entry))
                    if not ours:
                        continue
                    try:
                        st = os.stat(entry, dir_fd=d, follow_symlinks=False)
                        if not stat.S_ISDIR(st.st_mode):
                            os.unlink(entry, dir_fd=d)  # a link itself, never its target
                    except OSError:
                        pass
            finally:
                os.close(d)
            if safe is None:
                try:
                    os.rmdir(sub, dir_fd=root)  # only when nothing else is left in it
                except OSError:
                    pass
    finally:
        os.close(root)
    if name is None:
        try:
            cache = _open_dir_nofollow(get_cache_dir(), [], create=False)
        except OSError:
            return
        try:
            os.rmdir("src", dir_fd=cache)
        except OSError:
            pass
        finally:
            os.close(cache)


# --------------------------------------------------------------------------- argv
# The words bekc's --arch takes besides architectures (brainevent takes none).
_ARCH_WORDS = {"native", "auto"}
# nvcc's architecture names: sm_ and two or three digits, maybe one letter.
_ARCH_NAME = re.compile(r"sm_\d{2,3}[a-z]?")
# brainevent's environment pin, read when no compute_capability is given.
ARCH_ENV = "BRAINEVENT_COMPUTE_CAPABILITIES"


def _arch_tokens(cc) -> list:
    """Comma-split, stripped, non-empty tokens of a string, int or list of them."""
    items = list(cc) if isinstance(cc, (list, tuple)) else [cc]
    tokens: list = []
    for item in items:
        if isinstance(item, bool):
            raise TypeError(f"compute_capability must be a string like 'sm_86', got {item!r}")
        if isinstance(item, int):
            tokens.append(str(item))
            continue
        tokens += [p.strip() for p in str(item).split(",") if p.strip()]
    return tokens


def _normalize_arch_token(token: str, whole) -> str:
    """One token in brainevent's rule: case and a sm_/compute_ prefix do not
    matter, a trailing letter is a suffix ("9.0a"), dots are dropped ("8.6",
    "12.0"); what is left must be two or three digits, major version 2 or more."""
    s = token.strip().lower()
    if s in _ARCH_WORDS:
        return s
    for prefix in ("sm_", "compute_"):
        if s.startswith(prefix):
            s = s[len(prefix):]
            break
    suffix = s[-1] if s and s[-1].isalpha() else ""
    digits = s[:len(s) - len(suffix)].replace(".", "")
    arch = f"sm_{digits}{suffix}"
    if not (digits.isascii() and digits.isdigit() and _ARCH_NAME.fullmatch(arch)):
        raise ValueError(
            f"compute_capability {whole!r}: {token!r} is not a compute capability; use e.g. "
            f"'sm_86', '8.6', '86', 'compute_86' or '9.0a', a list or comma-separated "
            f"string of those, or 'native'/'auto'")
    if int(digits[:-1]) < 2:
        raise UnsupportedArchError(
            f"compute_capability {whole!r}: {token!r} is {arch}, and no CUDA GPU has a "
            f"major version below 2")
    return arch


def _normalize_arch(cc) -> Optional[str]:
    """brainevent's compute-capability spellings -> bekc's ``--arch`` LIST.

    ``"8.6"``, ``"86"``, ``86``, ``"sm_86"``, ``"SM_86"``, ``"compute_86"`` all
    mean ``sm_86`` (SASS, plus PTX for the highest, as in brainevent); lists and
    comma-separated strings are split and de-duplicated. ``None``, ``""`` and an
    empty list give ``None``: no explicit choice (brainevent then looks at its
    pins, see :func:`_resolve_arch`).
    """
    if cc is None:
        return None
    tokens = _arch_tokens(cc)
    out: List[str] = []
    for t in tokens:
        n = _normalize_arch_token(t, cc)
        if n not in out:
            out.append(n)
    if len(out) > 1 and any(n in _ARCH_WORDS for n in out):
        raise ValueError(f"compute_capability {cc!r}: 'native', 'auto', 'all' and "
                         f"'all-major' cannot be combined with other architectures")
    return ",".join(out) or None


def _pinned_arch() -> Optional[str]:
    """brainevent's pins, in its order: ``brainevent.config.set_compute_capability``,
    then ``$BRAINEVENT_COMPUTE_CAPABILITIES``.

    The first is process state of an imported brainevent, so it is read only
    when ``brainevent.config`` is already in ``sys.modules`` (nothing else can
    have set it); bekc never imports brainevent for it.
    """
    config = sys.modules.get("brainevent.config")
    getter = getattr(config, "get_compute_capability", None)
    if getter is not None:
        arch = _normalize_arch(getter())
        if arch:
            return arch
    env = os.environ.get(ARCH_ENV, "").strip()
    if env:
        try:
            return _normalize_arch(env)
        except ValueError as e:
            raise ValueError(f"${ARCH_ENV}: {e}") from None
    return None


def _resolve_arch(cc) -> Optional[str]:
    """The CUDA loaders' ``--arch``: ``compute_capability``, else brainevent's pins,
    else ``None`` (bekc's default, ``auto``: the GPUs present)."""
    return _normalize_arch(cc) or _pinned_arch()


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
    arch = _normalize_arch(compute_capability)
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


# --------------------------------------------------------------------------- inline sources
def _safe_file_stem(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.+-]", "_", name).lstrip(".-")
    return stem or "module"


def _join_sources(sources) -> str:
    if isinstance(sources, (list, tuple)):
        return "\n\n".join(sources)
    if not isinstance(sources, str):
        raise TypeError(f"sources must be a string or a list of strings, got {type(sources).__name__}")
    return sources


def _inline_source_path(text: str, name: str, ext: str) -> str:
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return os.path.join(get_cache_dir(), "src", sha, _safe_file_stem(name) + ext)


def _open_dir_nofollow(root: str, parts: List[str], create: bool) -> int:
    """A descriptor of root/parts..., each component opened without following
    a link (the cache may be shared: a planted link must not send a write
    elsewhere). The root itself is the user's choice and is followed."""
    if create:
        os.makedirs(root, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _read_regular_at(dir_fd: int, name: str, limit: int) -> Optional[bytes]:
    """The bytes of a regular file (no link, FIFO or device), or None."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return f.read(limit + 1)


def _ensure_source_file(path: str, text: str) -> None:
    data = text.encode("utf-8")
    root = get_cache_dir()
    rel = os.path.relpath(path, root).split(os.sep)
    d = _open_dir_nofollow(root, rel[:-1], create=True)
    try:
        if _read_regular_at(d, rel[-1], len(data)) == data:
            return
        tmp = f".tmp-{os.getpid()}-{secrets.token_hex(8)}{os.path.splitext(path)[1]}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=d)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, rel[-1], src_dir_fd=d, dst_dir_fd=d)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=d)
            except OSError:
                pass
            raise
    finally:
        os.close(d)


def _build_and_load(argv_tail: List[str], *, verbose: bool, auto_register: bool,
                    replace: bool = False) -> Module:
    argv = [find_binary()] + argv_tail
    result = run_bekc(argv, verbose=verbose)
    manifest = result.get("manifest") if isinstance(result, dict) else None
    if not manifest:
        raise BekcError(f"bekc --json output has no 'manifest': {result!r}")
    # An unchanged entry comes back as the same Module (load's own memo).
    return load(manifest, register=auto_register, replace=replace)


def _python_sites() -> List[str]:
    """The directories of this interpreter where a CUDA toolkit from pip would be:
    every ``sys.path`` entry that holds the ``nvidia`` namespace package (where
    brainevent's pipeline looks), else this environment's site-packages."""
    sites: List[str] = []
    try:
        spec = importlib.util.find_spec("nvidia")
        locations = list(spec.submodule_search_locations or []) if spec else []
    except (ImportError, ValueError):
        locations = []
    candidates = [os.path.dirname(os.path.abspath(loc)) for loc in locations]
    if not candidates:
        paths = sysconfig.get_paths()
        candidates = [paths["purelib"], paths["platlib"]]
    for d in candidates:
        if d and d not in sites:
            sites.append(d)
    return sites


def _nvcc_args() -> List[str]:
    """How bekc is to find nvcc from this interpreter (docs/cli.md, "Which nvcc"):
    its site-packages for a pip toolkit, and, while bekc stands in for brainevent's
    loaders, brainevent's ``BRAINEVENT_NVCC_PATH`` and nvcc discovery preference."""
    args = [f"--python-site={d}" for d in _python_sites()]
    from . import _brainevent  # imports _compat: a late import
    path, prefer = _brainevent.nvcc_settings()
    if path:
        args.append(f"--brainevent-nvcc={os.path.abspath(path)}")
    if prefer:
        args.append(f"--nvcc-prefer={prefer}")
    return args


def _loader_argv(inputs, *, flag_kind: str, compute_capability=None, **options) -> List[str]:
    """``build_argv`` plus what brainevent's pipeline adds to every build: its
    ``include`` directory and XLA's FFI headers (``jax.ffi.include_dir()``), and,
    for CUDA, its compute-capability pins and the nvcc this interpreter has."""
    arch = _resolve_arch(compute_capability) if flag_kind == "cuda" else None
    argv = build_argv(inputs, flag_kind=flag_kind, compute_capability=arch,
                      cache_dir=_CACHE_DIR_OVERRIDE, brainevent_include=_brainevent_include_dir(),
                      xla_include=_xla_include_dir(), **options)
    return argv + (_nvcc_args() if flag_kind == "cuda" else [])


def _load_inline(name, sources, ext, flag_kind, functions, extra_flags, *, replace,
                 auto_register, **options) -> Module:
    """``options``: the keyword arguments of :func:`build_argv` a loader takes."""
    text = _join_sources(sources)
    src = _inline_source_path(text, name, ext)
    argv = _loader_argv([src], name=name, functions=functions, flag_kind=flag_kind,
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
        root = get_cache_dir()
        raise CacheError(
            f"cannot write the inline source {src} into bekc's cache {root}: "
            f"{e.strerror or e}; choose another cache with bekc.set_cache_dir(DIR), "
            f"$BEKC_CACHE_DIR=DIR, or --cache-dir DIR for the bekc command",
            cache_dir=root) from e
    return _build_and_load(tail, verbose=options["verbose"], auto_register=auto_register,
                           replace=replace)


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
    ``-I``, ahead of brainevent's ``include`` directory (added when brainevent
    is installed), and jaxlib's XLA FFI headers go in as ``--xla-include``;
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
    Raises :class:`bekc.CompileError` with bekc's diagnostics on failure.
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
    argv = _loader_argv(
        files, name=name, functions=functions, flag_kind=flag_kind, extra_flags=extra_flags,
        extra_ldflags=extra_ldflags, extra_include_paths=extra_include_paths,
        build_directory=build_directory, verbose=verbose, compute_capability=compute_capability,
        force_rebuild=force_rebuild, target_prefix=target_prefix, ninja_workers=ninja_workers,
        optimization_level=optimization_level, use_fast_math=use_fast_math,
        allow_cuda_graph=allow_cuda_graph)
    # Files on disk may include headers bekc alone tracks: always ask bekc (a hit costs ms).
    return _build_and_load(argv[1:], verbose=verbose, auto_register=auto_register,
                           replace=bool(replace or force_rebuild))


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
