"""Ctrl-C while bekc runs: the loader gives bekc SIGINT and waits for it, so
bekc can stop its compilers, remove its build directory and return make's
jobserver tokens (docs/cli.md, "Interrupts"), instead of killing it."""

import os
import signal
import stat
import sys
import threading
import time

import pytest

from bekc._run import run_bekc

FAKE = """#!{python}
import signal, sys, time, pathlib
d = pathlib.Path(sys.argv[1])
def stop(sig, frame):
    time.sleep(0.3)  # stopping compilers, removing the build directory
    (d / "cleaned").write_text(str(sig))
    sys.exit(130)
signal.signal(signal.SIGINT, stop)
(d / "started").touch()
time.sleep(60)
"""


@pytest.mark.parametrize("verbose", [False, True])
def test_ctrl_c_lets_bekc_clean_up(tmp_path, verbose):
    fake = tmp_path / "bekc"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)

    def interrupt():
        end = time.monotonic() + 30
        while not (tmp_path / "started").exists() and time.monotonic() < end:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C reaches the Python process

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_bekc([str(fake), str(tmp_path)], verbose=verbose)
    assert (tmp_path / "cleaned").read_text() == str(int(signal.SIGINT)), \
        "bekc was killed before it could clean up"
