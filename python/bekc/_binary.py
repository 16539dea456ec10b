"""Finding and running the ``bekc`` executable.

Lookup order: ``$BEKC`` (a path, or a command name looked up on ``PATH``),
then the ``bekc`` that pip installed from the same wheel as this package, then
``bekc`` on ``PATH``, then ``bin/bekc`` inside this package. The process is
always spawned with an argument vector, never through a shell.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import warnings
from typing import List, Optional, Sequence

from . import _lookup
from ._caller import caller_stacklevel
from ._errors import BekcError, BinaryNotFoundError, CacheError, CompileError

__all__ = ["find_binary", "run_bekc", "bundled_binary_path", "wheel_binary_path"]


def libraries_beside(real_binary: str, name: str) -> List[str]:
    """Where a library built with the bekc binary at ``real_binary`` (its real
    path) lies: beside it (a build tree), then in the Python package of the
    install prefix it belongs to."""
    bindir = os.path.dirname(real_binary)
    return [os.path.join(bindir, name),
            os.path.join(os.path.dirname(bindir), "lib", "bekc", "python", "bekc", "lib", name)]


def bundled_binary_path() -> str:
    """Where a copy of ``bekc`` shipped inside the package would live."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "bekc")


@functools.lru_cache(maxsize=1)
def wheel_binary_path() -> Optional[str]:
    """The ``bekc`` that pip installed together with this package from bekc's
    wheel (into the environment's ``bin/``), or None.

    The wheel's file list (RECORD, in the ``bekc-*.dist-info`` that pip puts
    beside the package directory whatever the scheme: a venv, ``--user``,
    ``--prefix``) says where pip put it. It comes before ``PATH`` because it is
    the binary this loader was released with; a venv that is not activated has
    it off ``PATH``. The list is trusted only when it also holds this very
    file, so another installation of bekc is not mistaken for this one. Read
    directly, not through ``importlib.metadata``, whose search of ``sys.path``
    would cost every process that imports bekc milliseconds.
    """
    here = os.path.realpath(__file__)
    site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        infos = sorted(n for n in os.listdir(site)
                       if n.startswith("bekc-") and n.endswith(".dist-info"))
    except OSError:
        return None
    for info in infos:
        paths = _record_paths(os.path.join(site, info, "RECORD"), site)
        if not any(os.path.basename(p) == "_binary.py" and os.path.realpath(p) == here
                   for p in paths):
            continue
        for p in paths:
            if os.path.basename(p) == "bekc" and os.path.basename(os.path.dirname(p)) == "bin":
                real = os.path.realpath(p)
                if _is_exe(real):
                    return real
    return None


def _record_paths(record: str, site: str) -> List[str]:
    """The files a wheel's RECORD lists, as paths under ``site``; [] when it
    cannot be read."""
    import csv
    try:
        with open(record, newline="", encoding="utf-8") as f:
            return [os.path.join(site, *row[0].split("/")) for row in csv.reader(f) if row]
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def _is_exe(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_binary() -> str:
    """Absolute path of the ``bekc`` executable, or :class:`BinaryNotFoundError`."""
    env = os.environ.get("BEKC", "")
    if env:
        cand = os.path.expanduser(env)
        if os.sep in cand or (os.altsep and os.altsep in cand):
            if _is_exe(cand):
                return os.path.abspath(cand)
        else:
            found = shutil.which(cand)
            if found:
                return os.path.abspath(found)
        raise BinaryNotFoundError(
            f"$BEKC is set to {env!r}, which is not an executable file. Point it at the "
            f"bekc binary (export BEKC=/path/to/bekc) or unset it to search PATH.")
    from_wheel = wheel_binary_path()
    if from_wheel:
        return from_wheel
    found = shutil.which("bekc")
    if found:
        return os.path.abspath(found)
    bundled = bundled_binary_path()
    if _is_exe(bundled):
        return bundled
    raise BinaryNotFoundError(
        "cannot find the bekc executable. Looked at: $BEKC (not set); 'bekc' on PATH "
        f"({os.environ.get('PATH', '')!r}); the package copy {bundled} (absent). "
        "Build it (cmake --build build) and set BEKC=/path/to/bekc, or put its "
        "directory on PATH.")


# An interrupted bekc stops its compilers, removes its build directory and
# returns make's jobserver tokens before it exits (docs/cli.md, "Signals"):
# give it the time to, rather than killing it outright.
_STOP_WAIT_S = 10.0


def _stop(proc: subprocess.Popen) -> None:
    """Ctrl-C (or any exception) while bekc runs: SIGINT, wait, and only
    then SIGKILL."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except KeyboardInterrupt:  # a second Ctrl-C: do not wait any more
            proc.kill()
            proc.wait()
            raise


def _stream_stderr(proc: subprocess.Popen):
    """Echo bekc's stderr as it arrives; returns (stdout, stderr) as text."""
    out_chunks: List[bytes] = []
    reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()),
                              daemon=True)
    reader.start()
    err_lines: List[str] = []
    for raw in iter(proc.stderr.readline, b""):
        line = raw.decode("utf-8", "replace")
        err_lines.append(line)
        sys.stderr.write(line)
        sys.stderr.flush()
    proc.wait()
    reader.join()
    return b"".join(out_chunks).decode("utf-8", "replace"), "".join(err_lines)


def _spawn(argv: List[str], verbose: bool):
    """Runs bekc: (exit code, stdout, stderr); with ``verbose`` its stderr is
    echoed as it arrives."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise BinaryNotFoundError(f"cannot execute {argv[0]}: file not found") from None
    except PermissionError:
        raise BinaryNotFoundError(f"cannot execute {argv[0]}: permission denied") from None
    try:
        if verbose:
            stdout, stderr = _stream_stderr(proc)
        else:
            out, err = proc.communicate()
            stdout = out.decode("utf-8", "replace")
            stderr = err.decode("utf-8", "replace")
    except BaseException:
        _stop(proc)
        raise
    return proc.returncode, stdout, stderr


def run_bekc(argv: Sequence[str], *, verbose: bool = False, parse_json: bool = True):
    """Run ``argv`` (argv[0] is the binary). Returns parsed JSON stdout, or stdout.

    A non-zero exit raises :class:`CompileError` carrying bekc's stderr. With
    ``verbose`` bekc's stderr is echoed to ``sys.stderr`` as it arrives;
    without, each warning line becomes a ``RuntimeWarning`` raised at the
    user's line that called into bekc (``_caller.py``). A
    ``bekc build --json`` that the local cache holds is answered in this
    process, without starting bekc (``_lookup.py``; ``BEKC_IN_PROCESS_LOOKUP=0``
    turns that off).
    """
    argv = [os.fspath(a) for a in argv]
    # A local cache hit, answered in this process (_lookup.py); else the binary.
    warm = _lookup.warm_hit(argv) if parse_json else None
    if warm is not None:
        stdout, stderr = warm
        rc = 0
        if verbose:
            sys.stderr.write(stderr)
    else:
        rc, stdout, stderr = _spawn(argv, verbose)
    if rc == 4:  # the cache, not the sources (docs/cli.md, "Exit codes")
        text = CompileError(rc, stderr, argv, stdout)
        raise CacheError(str(text), returncode=rc, stderr=stderr, argv=argv, stdout=stdout)
    if rc != 0:
        raise CompileError(rc, stderr, argv, stdout)
    if not verbose:
        # Progress stays quiet; bekc's warnings (e.g. a default --arch) still reach the user.
        for line in stderr.splitlines():
            if "warning" in line.lower():
                # bekc's own lines already say whose they are; a compiler's do not.
                text = line.strip()
                if not text.startswith("bekc:"):
                    text = f"bekc: {text}"
                warnings.warn(text, RuntimeWarning, stacklevel=caller_stacklevel())
    if not parse_json:
        return stdout
    text = stdout.strip()
    try:
        return json.loads(text)
    except ValueError:
        # Tolerate stray lines before the object: take the last line that parses.
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except ValueError:
                    continue
    raise BekcError(
        f"bekc printed no JSON object on stdout (command: {shlex.join(argv)})\n"
        f"stdout: {stdout[-2000:]!r}\nstderr: {stderr[-2000:]}")
