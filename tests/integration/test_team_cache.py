"""A cache shared by a team, set up as docs/cache.md says ("On a shared
filesystem"): a common group, the setgid bit, umask 002. Two members, run as
two users with setpriv(1); one (the member) tries each harm of the table below
on the other (the victim), whose next build must neither run the member's
program, nor send the victim's token to the member's server, nor write where
the member chose.

| harm                                          | what stops it                      |
|-----------------------------------------------|------------------------------------|
| `launcher` in <cache>/bekc.conf               | read only from the user's or root's |
|                                               | files that no one else can write   |
| `remote_cache` redirected to the member       | the same                           |
| `log_file` in <cache>/bekc.conf               | the same                           |
| the victim's log in the cache made a link     | the log is opened like every file  |
|                                               | in the cache: no link followed     |

(A /tmp/bekc-<uid> made first by the member does not stop the victim's
build: test_cache_safety.py::test_another_users_tmp_directory_does_not_stop_the_build.)

A team cache one member publishes and the others may only read is a
read-only cache for them (docs/cache.md, "Layered caches"): its hits are
theirs, their misses build into their own cache, and nothing in it changes.

Needs root (to become two users) and setpriv; skipped otherwise.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from other_users import require_setpriv, shared_base  # tests/integration/other_users.py
from support.trees import listing

FAST = "-O0"
VICTIM, MEMBER, TEAM = 60101, 60102, 60110
TOKEN = "victims-secret-token"


class Team:
    """<base>/cache (root:TEAM, 2775), a home per member, a shared src/."""

    def __init__(self, base: Path, binary: Path):
        self.base = base
        self.binary = binary
        self.cache = base / "cache"
        self.cache.mkdir()
        os.chown(self.cache, 0, TEAM)
        os.chmod(self.cache, 0o2775)
        self.src = base / "src"
        self.src.mkdir()
        os.chmod(self.src, 0o755)
        self.homes = {}
        for uid in (VICTIM, MEMBER):
            home = base / f"home-{uid}"
            (home / ".config" / "bekc").mkdir(parents=True)
            for d in (home, home / ".config", home / ".config" / "bekc"):
                os.chown(d, uid, uid)
                os.chmod(d, 0o755)
            self.homes[uid] = home

    def run(self, uid: int, *args, env=None) -> subprocess.CompletedProcess:
        """bekc as `uid`, a member of TEAM, with umask 002."""
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", f"--groups={TEAM}",
                str(self.binary), *map(str, args)]
        e = {k: v for k, v in os.environ.items() if not k.startswith("BEKC_")}
        e.pop("XDG_CONFIG_HOME", None)
        e.pop("XDG_CACHE_HOME", None)
        e.update(HOME=str(self.homes[uid]), TMPDIR=str(self.homes[uid]))
        e.update(env or {})
        return subprocess.run(argv, cwd=self.homes[uid], env=e, capture_output=True, text=True,
                              timeout=300, umask=0o002)

    def build(self, uid: int, src: Path, *args, env=None) -> subprocess.CompletedProcess:
        return self.run(uid, "build", src, FAST, "--cache-dir", self.cache, *args, env=env)

    def as_member(self, path: Path) -> Path:
        """A file the member wrote (owned by the member, group-writable)."""
        os.chown(path, MEMBER, TEAM)
        os.chmod(path, 0o664)
        return path


@pytest.fixture
def team(bekc_path):
    if os.geteuid() != 0:
        pytest.skip("becoming two users needs root")
    require_setpriv(bekc_path, "other users")
    base = shared_base("bekc-team-")
    yield Team(base, bekc_path)
    shutil.rmtree(base, ignore_errors=True)


def describe(proc) -> str:
    return (f"$ {' '.join(map(str, proc.args))}\n-> exit {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}")


def source(team: Team, kernels, name: str, value: str = "1.0f") -> Path:
    src = kernels.cpp(team.src / name / "k.cpp", value=value)
    os.chmod(src.parent, 0o755)
    os.chmod(src, 0o644)
    return src


def first_build(team: Team, kernels) -> Path:
    """The victim's first build: the cache exists, as a team's does."""
    src = source(team, kernels, "warmup")
    proc = team.build(VICTIM, src)
    assert proc.returncode == 0, describe(proc)
    return src


def test_a_launcher_in_the_teams_bekc_conf_does_not_run_as_the_victim(team, kernels):
    first_build(team, kernels)
    mark = team.base / "ran-as-victim"
    evil = team.base / "evil-launcher"
    evil.write_text(f"#!/bin/sh\nid -u >> {mark}\nexec \"$@\"\n")
    os.chmod(evil, 0o755)
    os.chmod(team.base, 0o777)  # the launcher's mark may be written by anyone
    conf = team.cache / "bekc.conf"
    conf.write_text(f"launcher = {evil}\n")
    team.as_member(conf)
    proc = team.build(VICTIM, source(team, kernels, "miss", value="2.0f"))
    assert proc.returncode == 0, describe(proc)
    assert not mark.exists(), f"the member's launcher ran as uid {mark.read_text().strip()}"
    assert (f"{conf}:1: warning: launcher ignored: this file is owned by uid {MEMBER}"
            in proc.stderr), describe(proc)


class Recorder:
    """An HTTP server of the member's that records the Authorization headers."""

    def __init__(self):
        self.seen = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self):
                recorder.seen.append((self.command, self.path,
                                      self.headers.get("Authorization", "")))
                length = int(self.headers.get("Content-Length", "0") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_PUT = answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/bekc"


def test_a_remote_cache_in_the_teams_bekc_conf_gets_no_token(team, kernels):
    if shutil.which("curl") is None:
        pytest.skip("no curl")
    first_build(team, kernels)
    server = Recorder()
    try:
        conf = team.cache / "bekc.conf"
        conf.write_text(f"remote_cache = {server.url}\nremote_read_only = false\n")
        team.as_member(conf)
        proc = team.build(VICTIM, source(team, kernels, "miss", value="3.0f"),
                          env={"BEKC_REMOTE_TOKEN": TOKEN})
    finally:
        server.server.shutdown()
    assert proc.returncode == 0, describe(proc)
    assert not [s for s in server.seen if TOKEN in s[2]], f"the token was sent: {server.seen}"
    assert server.seen == [], f"the victim's build asked the member's server: {server.seen}"
    assert f"{conf}:1: warning: remote_cache ignored" in proc.stderr, describe(proc)


def test_a_log_file_in_the_teams_bekc_conf_is_ignored(team, kernels):
    first_build(team, kernels)
    target = team.homes[VICTIM] / ".bashrc"
    target.write_text("# the victim's\n")
    os.chown(target, VICTIM, VICTIM)
    conf = team.cache / "bekc.conf"
    conf.write_text(f"log_file = {target}\n")
    team.as_member(conf)
    proc = team.build(VICTIM, source(team, kernels, "warmup"))
    assert proc.returncode == 0, describe(proc)
    assert target.read_text() == "# the victim's\n", "the member chose where the victim writes"
    assert f"{conf}:1: warning: log_file ignored" in proc.stderr, describe(proc)


def test_the_victims_log_in_the_cache_replaced_by_a_link_is_not_followed(team, kernels):
    """The victim logs into the shared cache from their own file; the member
    replaces the log by a link to the victim's ~/.bashrc."""
    target = team.homes[VICTIM] / ".bashrc"
    target.write_text("# the victim's\n")
    os.chown(target, VICTIM, VICTIM)
    own = team.homes[VICTIM] / ".config" / "bekc" / "bekc.conf"
    own.write_text(f"log_file = {team.cache / 'build.jsonl'}\n")
    os.chown(own, VICTIM, VICTIM)
    os.chmod(own, 0o644)
    src = first_build(team, kernels)
    log = team.cache / "build.jsonl"
    assert log.is_file() and '"result":"miss"' in log.read_text()
    # The member may remove it: the cache directory is group-writable.
    proc = subprocess.run(["setpriv", f"--reuid={MEMBER}", f"--regid={MEMBER}", f"--groups={TEAM}",
                           "ln", "-sf", str(target), str(log)], capture_output=True, text=True)
    assert proc.returncode == 0 and log.is_symlink(), proc.stderr
    proc = team.build(VICTIM, src)
    assert proc.returncode == 0, describe(proc)
    assert target.read_text() == "# the victim's\n", "the victim's build wrote through the link"
    assert "bekc: warning: build log: " in proc.stderr, describe(proc)


def test_settings_of_a_root_owned_team_file_still_apply(team, kernels):
    """The trusted way to set a team's launcher: a bekc.conf root owns and
    only root can write."""
    first_build(team, kernels)
    mark = team.base / "ran"
    launcher = team.base / "launcher"
    launcher.write_text(f"#!/bin/sh\ntouch {mark}\nexec \"$@\"\n")
    os.chmod(launcher, 0o755)
    os.chmod(team.base, 0o777)
    conf = team.cache / "bekc.conf"
    conf.write_text(f"launcher = {launcher}\n")
    os.chmod(conf, 0o644)
    proc = team.build(VICTIM, source(team, kernels, "miss", value="4.0f"))
    assert proc.returncode == 0, describe(proc)
    assert mark.exists(), describe(proc)
    assert "warning" not in proc.stderr, describe(proc)


# --------------------------------------------------------------------------- read-only team cache
@pytest.fixture
def published(team) -> Path:
    """A cache the member publishes (theirs, mode 755): the victim can read it
    and write nothing in it."""
    root = team.base / "published"
    root.mkdir()
    os.chown(root, MEMBER, MEMBER)
    os.chmod(root, 0o755)
    return root


def publish(team: Team, published: Path, src: Path) -> dict:
    proc = team.run(MEMBER, "build", src, FAST, "--cache-dir", published, "--json")
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def victim_build(team: Team, src: Path, *args, env=None):
    """The victim's build; (proc, --json object)."""
    proc = team.run(VICTIM, "build", src, FAST, "--json", "-v", *args, env=env)
    assert proc.returncode == 0, describe(proc)
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("named_by", ["read_only_caches", "cache_dir"])
def test_a_team_cache_read_only_for_the_victim_serves_hits_and_misses_build_into_their_own(
        team, published, kernels, named_by):
    """Named as a read-only cache, or as the cache itself: the victim cannot
    write it, so it is a read-only cache over their default cache."""
    args, env = ((), {"BEKC_READ_ONLY_CACHES": str(published)})
    if named_by == "cache_dir":
        args, env = ("--cache-dir", published), None
    shared = source(team, kernels, "shared")
    theirs = publish(team, published, shared)
    before = listing(published)
    own = team.homes[VICTIM] / ".cache" / "bekc"

    proc, hit = victim_build(team, shared, *args, env=env)
    assert hit["cache_hit"] and hit["manifest"] == theirs["manifest"], describe(proc)
    assert f"bekc: cache hit in the read-only cache {published}\n" in proc.stderr, describe(proc)
    mine = source(team, kernels, "mine", value="2.0f")
    proc, miss = victim_build(team, mine, *args, env=env)
    assert not miss["cache_hit"] and Path(miss["manifest"]).is_relative_to(own), describe(proc)
    demoted = (f"bekc: the cache {published} is read-only here: serving hits from it, building "
               f"misses into {own}\n")
    assert (demoted in proc.stderr) == (named_by == "cache_dir"), describe(proc)
    proc, again = victim_build(team, mine, *args, env=env)
    assert again["cache_hit"] and again["manifest"] == miss["manifest"], describe(proc)
    assert listing(published) == before, "the victim's builds wrote into the team's cache"


def test_a_read_only_cache_the_victim_cannot_read_is_skipped_with_a_warning(
        team, published, kernels):
    shared = source(team, kernels, "shared")
    publish(team, published, shared)
    os.chmod(published, 0o700)
    proc, built = victim_build(team, shared, env={"BEKC_READ_ONLY_CACHES": str(published)})
    assert not built["cache_hit"], describe(proc)
    assert (f"bekc: warning: read-only cache {published} skipped: it cannot be read: "
            f"Permission denied\n") in proc.stderr, describe(proc)
