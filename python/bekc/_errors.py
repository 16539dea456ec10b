"""Exception types raised by the bekc loader and compatibility layer."""

from __future__ import annotations

import shlex

from ._interface import EXIT_CODES

__all__ = [
    "BekcError",
    "ManifestError",
    "LibraryHashMismatchError",
    "LibraryLoadError",
    "RegistrationError",
    "TargetConflictError",
    "BinaryNotFoundError",
    "CompileError",
    "NotBatchableError",
    "NotDifferentiableError",
]

# Where the Python documentation explains batching and gradients of a target;
# both errors below name it, so keep the heading of docs/python.md.
BATCHING_AND_GRADIENTS_DOCS = "docs/python.md#batching-and-gradients"


class BekcError(Exception):
    """Base class of every error raised by the ``bekc`` package."""


class ManifestError(BekcError, ValueError):
    """The manifest is unreadable, has the wrong schema, or is inconsistent.

    Also raised when a manifest asks for what the loader refuses to trust: a
    library outside the manifest's directory, a field of the wrong type or
    range, or a symbol that bekc does not generate or that the library does not
    define itself (docs/manifest.md, "What the loader checks").
    """


class LibraryHashMismatchError(ManifestError):
    """The library's SHA-256 differs from the one recorded in the manifest."""

    def __init__(self, message: str, *, library: str = "", expected: str = "",
                 actual: str = "") -> None:
        super().__init__(message)
        self.library = library
        self.expected = expected
        self.actual = actual


class LibraryLoadError(BekcError, OSError):
    """``ctypes`` could not load the shared library, or a symbol is missing."""


class RegistrationError(BekcError, RuntimeError):
    """Registering an FFI target with JAX failed."""


class TargetConflictError(RegistrationError):
    """A target name is already registered from a different library."""


class BinaryNotFoundError(BekcError, FileNotFoundError):
    """The ``bekc`` executable could not be found."""


class UnsupportedArchError(BekcError, ValueError):
    """A compute capability that is spelled right but names no CUDA GPU
    (major version below 2), as brainevent's ``UnsupportedArchError``."""


class NotBatchableError(BekcError, NotImplementedError):
    """``jax.vmap`` reached a target that has no ``vmap_method``: JAX cannot
    batch an FFI call without one. Attributes: ``target`` (the FFI target's
    name) and ``function``."""

    def __init__(self, message: str, *, target: str = "", function: str = "") -> None:
        super().__init__(message)
        self.target = target
        self.function = function


class NotDifferentiableError(BekcError, ValueError):
    """``jax.grad`` (or any JAX differentiation) reached a target, which has no
    derivative of its own. Attributes: ``target`` and ``function``."""

    def __init__(self, message: str, *, target: str = "", function: str = "") -> None:
        super().__init__(message)
        self.target = target
        self.function = function


def exit_code(kind: str) -> int:
    """The binary's exit code for a failure of ``kind`` ("source", "usage",
    "toolchain", "cache", "internal"), from its own table (``_interface.py``)."""
    return EXIT_CODES[kind][0]


# exit code -> what it means, as ``bekc --help`` says it.
_EXIT_MEANING = {code: meaning for code, meaning in EXIT_CODES.values()}


class CacheError(BekcError, OSError):
    """bekc's cache could not be read or written (``bekc build`` exit 4, or
    the inline source bekc writes into it). Not a :class:`CompileError`: the
    sources may be fine. The message names the cache and how to choose
    another. Attributes: ``cache_dir`` (may be ``None``), and, when the
    binary failed, ``returncode``, ``stderr``, ``stdout`` and ``argv``."""

    def __init__(self, message: str, *, cache_dir=None, returncode=None, stderr: str = "",
                 argv=(), stdout: str = "") -> None:
        super().__init__(message)
        self.cache_dir = cache_dir
        self.returncode = returncode
        self.stderr = stderr or ""
        self.stdout = stdout or ""
        self.argv = list(argv)

    def __str__(self) -> str:
        return self.args[0]


class CompileError(BekcError, RuntimeError):
    """``bekc build`` exited with a non-zero status.

    Attributes: ``returncode``, ``stderr`` (bekc's diagnostics), ``stdout``,
    ``argv`` (the command that was run).
    """

    def __init__(self, returncode: int, stderr: str, argv=(), stdout: str = "") -> None:
        self.returncode = returncode
        self.stderr = stderr or ""
        self.stdout = stdout or ""
        self.argv = list(argv)
        meaning = _EXIT_MEANING.get(returncode, "unexpected failure")
        if returncode < 0:
            meaning = f"killed by signal {-returncode}"
        diag = self.stderr.strip() or "(bekc printed no diagnostics)"
        cmd = shlex.join(str(a) for a in self.argv)
        words = [str(a) for a in self.argv[1:3] if not str(a).startswith("-")]
        what = "bekc " + (" ".join(words) if words[:1] == ["cache"] else (words[:1] or [""])[0])
        super().__init__(
            f"{what.strip()} failed (exit {returncode}: {meaning})\n"
            f"{diag}\n"
            f"command: {cmd}"
        )
