"""Running the ``bekc`` executable: :func:`run_bekc`, the one place that
starts it, always with an argument vector, never through a shell. A
``bekc build --json`` that the local cache holds is answered in this process
instead (``_lookup.py``).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import warnings
from typing import List, Sequence

from . import _lookup
from ._caller import caller_stacklevel
from ._errors import BekcError, BinaryNotFoundError, CacheError, CompileError, exit_code

__all__ = ["run_bekc"]


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
    if rc == exit_code("cache"):  # the cache, not the sources (docs/cli.md, "Exit codes")
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
