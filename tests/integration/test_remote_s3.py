"""--remote-cache s3://bucket/prefix: the remote cache in an S3-compatible
store, against moto's S3 server (``moto[server]`` from requirements-test.txt;
the tests are skipped without it).

One moto server runs for the whole module, with its IAM checks on: every
request must carry a SigV4 signature that moto recomputes from the secret
key, so a request signed wrong is refused here as AWS would refuse it. Each
test gets buckets of its own. moto does not check the request's date, so a
clock off by more than 15 minutes is played by a small fake server that
answers as S3 does (``RequestTimeTooSkewed``).

"Machines" are separate local caches building the same sources from the
same paths (test_remote_cache.py's ``Project``), each started as its own
process; the compiler is a wrapper that logs which machine ran it.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from test_remote_cache import (FAST, FakeRemote, Project, assert_no_leftovers,  # noqa: F401
                               assert_working_library, fake_remote, free_port, project,
                               recording_curl)

SECRET = "s3cr3t-Secret/Key+for-the-test"
MOTO_SERVER = Path(sys.executable).with_name("moto_server")


# --------------------------------------------------------------------------- moto
class Moto:
    """moto's S3 on 127.0.0.1 with IAM on, and a user allowed s3:*."""

    def __init__(self, prefix: Path):
        import boto3  # moto's own dependency
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        # The first three requests (the IAM set-up below) go unchecked.
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")
        self.log = open(prefix / "moto.log", "w")
        self.proc = subprocess.Popen([str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(self.port)],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not start: " +
                                       (prefix / "moto.log").read_text())
                time.sleep(0.1)
        iam = boto3.client("iam", endpoint_url=self.endpoint, region_name="us-east-1",
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        iam.create_user(UserName="builder")
        key = iam.create_access_key(UserName="builder")["AccessKey"]
        iam.put_user_policy(UserName="builder", PolicyName="s3", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        self.key_id, self.secret = key["AccessKeyId"], key["SecretAccessKey"]
        self.s3 = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                               aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)

    def bucket(self) -> str:
        name = "bekc-" + uuid.uuid4().hex[:12]
        self.s3.create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list:
        listed = self.s3.list_objects_v2(Bucket=bucket).get("Contents", [])
        return sorted(o["Key"] for o in listed)

    def get(self, bucket: str, key: str) -> bytes:
        return self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.s3.put_object(Bucket=bucket, Key=key, Body=body)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    if not MOTO_SERVER.exists():
        pytest.skip("moto[server] is not installed (requirements-test.txt)")
    server = Moto(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()


def s3_env(project: Project, moto: Moto, **extra) -> dict:
    env = project.env(AWS_ACCESS_KEY_ID=moto.key_id, AWS_SECRET_ACCESS_KEY=moto.secret,
                      BEKC_S3_ENDPOINT=moto.endpoint, BEKC_S3_REGION="us-east-1")
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SHARED_CREDENTIALS_FILE", "AWS_REGION",
                "AWS_DEFAULT_REGION", "BEKC_REMOTE_WAIT", "BEKC_S3_PATH_STYLE"):
        env.pop(var, None)
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


# --------------------------------------------------------------------------- hits
def test_a_second_machine_gets_an_s3_hit_without_compiling(project, moto):
    bucket = moto.bucket()
    url = f"s3://{bucket}/team/bekc"
    env = s3_env(project, moto)
    a = project.build("a", "--remote-cache", url, env=env)
    assert a.compiled and a.stderr == "", a.stderr
    keys = moto.keys(bucket)
    assert f"team/bekc/entries/{a.key}.tar" in keys, keys
    assert any(k.startswith("team/bekc/direct/") for k in keys), keys
    assert any(k.startswith("team/bekc/portable/") for k in keys), keys

    b = project.build("b", "--remote-cache", url, env=env)
    assert b.info["remote_hit"] is True and not b.compiled, b.describe()
    assert b.key == a.key and b.library.read_bytes() == a.library.read_bytes()
    assert_working_library(b)
    assert_no_leftovers(project)


def test_the_bucket_from_the_environment_and_bekc_conf(project, moto, tmp_path):
    bucket = moto.bucket()
    env = s3_env(project, moto, BEKC_REMOTE_CACHE=f"s3://{bucket}")
    project.build("a", env=env)
    assert any(k.startswith("entries/") for k in moto.keys(bucket))
    conf = tmp_path / "bekc.conf"
    conf.write_text(f"remote_cache = s3://{bucket}\ns3_endpoint = {moto.endpoint}\n"
                    "s3_region = us-east-1\n")
    env = s3_env(project, moto, BEKC_CONFIG=str(conf), BEKC_S3_ENDPOINT=None,
                 BEKC_S3_REGION=None)
    b = project.build("b", env=env)
    assert b.info["remote_hit"] is True and not b.compiled, b.describe()


def test_credentials_from_a_profile_of_the_shared_credentials_file(project, moto, tmp_path):
    bucket = moto.bucket()
    creds = tmp_path / "aws-credentials"
    creds.write_text(f"[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n"
                     f"[builders]\naws_access_key_id = {moto.key_id}\n"
                     f"aws_secret_access_key = {moto.secret}\n")
    env = s3_env(project, moto, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None,
                 AWS_SHARED_CREDENTIALS_FILE=str(creds), AWS_PROFILE="builders")
    a = project.build("a", "--remote-cache", f"s3://{bucket}", env=env)
    assert a.compiled and a.stderr == "", a.stderr
    assert any(k.startswith("entries/") for k in moto.keys(bucket))
    # ~/.aws/credentials when no file is named.
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    shutil.copy(creds, home / ".aws" / "credentials")
    env = s3_env(project, moto, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None,
                 HOME=str(home), AWS_PROFILE="builders")
    b = project.build("b", "--remote-cache", f"s3://{bucket}", env=env)
    assert b.info["remote_hit"] is True and not b.compiled, b.describe()


def test_read_only_never_writes_to_the_bucket(project, moto):
    bucket = moto.bucket()
    env = s3_env(project, moto)
    a = project.build("a", "--remote-cache", f"s3://{bucket}", "--remote-cache-read-only", env=env)
    assert a.compiled and a.stderr == "", a.stderr
    assert moto.keys(bucket) == []
    project.build("w", "--remote-cache", f"s3://{bucket}", env=env)
    written = moto.keys(bucket)
    b = project.build("b", "--remote-cache", f"s3://{bucket}", "--remote-cache-read-only", env=env)
    assert b.info["remote_hit"] is True and not b.compiled
    assert moto.keys(bucket) == written


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("wrong", ["secret", "key id"])
def test_wrong_credentials_warn_and_build_locally(project, moto, wrong):
    bucket = moto.bucket()
    env = s3_env(project, moto, **({"AWS_SECRET_ACCESS_KEY": SECRET} if wrong == "secret"
                                   else {"AWS_ACCESS_KEY_ID": "AKIANOTAKEY"}))
    start = time.monotonic()
    a = project.build("a", "--remote-cache", f"s3://{bucket}", env=env, timeout=60)
    assert a.compiled and a.info["remote_hit"] is False
    expected = "SignatureDoesNotMatch" if wrong == "secret" else "InvalidAccessKeyId"
    assert "HTTP status 403" in a.stderr and expected in a.stderr, a.stderr
    assert SECRET not in a.stderr and moto.secret not in a.stderr
    assert moto.keys(bucket) == []
    assert time.monotonic() - start < 60
    assert_no_leftovers(project)


def test_a_missing_bucket_is_a_clear_warning_not_a_miss(project, moto):
    env = s3_env(project, moto)
    a = project.build("a", "--remote-cache", "s3://no-such-bucket-here/x", env=env, timeout=60)
    assert a.compiled and a.info["remote_hit"] is False
    assert "NoSuchBucket: the bucket does not exist" in a.stderr, a.stderr


def test_no_credentials_turn_the_remote_off_with_a_warning(project, moto, tmp_path):
    env = s3_env(project, moto, AWS_ACCESS_KEY_ID=None, AWS_SECRET_ACCESS_KEY=None,
                 HOME=str(tmp_path / "nohome"))
    a = project.build("a", "--remote-cache", f"s3://{moto.bucket()}", env=env)
    assert a.compiled and "remote cache disabled: no S3 credentials" in a.stderr, a.stderr


def test_the_secret_appears_in_no_command_line_log_or_explanation(project, moto, tmp_path):
    """curl gets every header from a 0600 file; -v and --explain-key, and
    the build log, never show the secret or the session token."""
    bucket = moto.bucket()
    log, path = recording_curl(
        tmp_path, 'echo "ARGS $*" >> "$log"',
        'if [ "$prev" = "--header" ]; then stat -c "MODE %a" "${a#@}" >> "$log"; '
        'cat "${a#@}" >> "$log.headers"; fi')
    build_log = tmp_path / "build.log"
    env = s3_env(project, moto, PATH=path, BEKC_LOG=str(build_log))
    a = project.build("a", "--remote-cache", f"s3://{bucket}", "-v", "--explain-key", env=env)
    b = project.build("b", "--remote-cache", f"s3://{bucket}", "-v", "--explain-key", env=env)
    assert b.info["remote_hit"] is True, b.describe()
    text = log.read_text()
    assert "ARGS" in text and moto.secret not in text
    assert {line for line in text.splitlines() if line.startswith("MODE")} == {"MODE 600"}
    headers = Path(str(log) + ".headers").read_text()
    assert "Authorization: AWS4-HMAC-SHA256" in headers and moto.secret not in headers
    for build in (a, b):
        assert moto.secret not in build.proc.stdout + build.proc.stderr
    assert moto.secret not in build_log.read_text()
    assert_no_leftovers(project)


class S3Errors(FakeRemote):
    """FakeRemote answering every request with an S3 error document."""

    def __init__(self, status: int, code: str):
        super().__init__()
        body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                f"<Message>m</Message></Error>").encode()
        handler = self.server.RequestHandlerClass

        def answer(h):
            self.requests.append((h.command, h.path))
            length = int(h.headers.get("Content-Length") or 0)
            if length:
                h.rfile.read(length)
            h.send_response(status)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)

        handler.do_GET = answer
        handler.do_PUT = answer


def test_a_skewed_clock_is_named_in_the_warning(project):
    """S3 refuses a request dated more than 15 minutes away from its clock
    (moto does not check the date: this server answers as S3 would)."""
    fake = S3Errors(403, "RequestTimeTooSkewed")
    try:
        env = project.env(AWS_ACCESS_KEY_ID="AKIDTEST", AWS_SECRET_ACCESS_KEY=SECRET,
                          BEKC_S3_ENDPOINT=f"http://127.0.0.1:{fake.server.server_address[1]}")
        a = project.build("a", "--remote-cache", "s3://bkt/p", env=env, timeout=60)
    finally:
        fake.stop()
    assert a.compiled and a.info["remote_hit"] is False
    assert "RequestTimeTooSkewed" in a.stderr and "clock" in a.stderr, a.stderr
    assert SECRET not in a.stderr


def test_a_garbage_or_silent_endpoint_is_only_a_miss(project, fake_remote):
    """An endpoint that answers with garbage (a record that is not one), and
    one that accepts connections and never answers: warnings, a local build,
    within the time limits."""
    fake_remote.record = b"<html>this is not a record</html>"
    env = project.env(AWS_ACCESS_KEY_ID="AKIDTEST", AWS_SECRET_ACCESS_KEY=SECRET,
                      BEKC_S3_ENDPOINT=fake_remote.url.rsplit("/", 1)[0], BEKC_REMOTE_TIMEOUT="1")
    a = project.build("a", "--remote-cache", "s3://bekc", env=env, timeout=60)
    assert a.compiled and "remote cache: ignoring" in a.stderr, a.stderr

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        env["BEKC_S3_ENDPOINT"] = f"http://127.0.0.1:{server.getsockname()[1]}"
        start = time.monotonic()
        b = project.build("b", "--remote-cache", "s3://bekc", env=env, timeout=60)
        assert time.monotonic() - start < 30
    finally:
        server.close()
    assert b.compiled and "is unreachable" in b.stderr, b.stderr


# --------------------------------------------------------------------------- one compile per miss
def slow_compiler(project: Project, slow_machine: str = "*", seconds: float = 3) -> None:
    """The project's compiler logs "$MACHINE args" and, on machine
    `slow_machine` ("*": every machine), takes `seconds` longer to compile."""
    gxx = shutil.which("g++") or shutil.which("c++")
    project.cxx.write_text(
        f'#!/bin/sh\necho "$MACHINE $@" >> "{project.log}"\n'
        f'case "$MACHINE" in {slow_machine}) case "$*" in *.bekc.cpp*) sleep {seconds};; esac;; '
        f'esac\nexec "{gxx}" "$@"\n')


def compiling_machines(project: Project) -> set:
    if not project.log.exists():
        return set()
    return {line.split(" ", 1)[0] for line in project.log.read_text().splitlines()
            if ".bekc.cpp" in line or "-shared" in line}


def start(project: Project, machine: str, url: str, env: dict, *args) -> subprocess.Popen:
    argv = project.bekc.build_argv(project.src, FAST, "--cxx", project.cxx, "--remote-cache", url,
                                   *args, cache_dir=project.tmp / f"cache-{machine}")
    return subprocess.Popen(argv, cwd=project.bekc.workdir, env=dict(env, MACHINE=machine),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finish(proc: subprocess.Popen, timeout=120) -> tuple:
    out, err = proc.communicate(timeout=timeout)
    info = json.loads(out.strip().splitlines()[-1]) if proc.returncode == 0 else None
    return proc.returncode, info, err


def counters(project: Project, machine: str) -> dict:
    r = project.bekc.cache("stats", "--json", cache_dir=project.tmp / f"cache-{machine}")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["counters"]


def test_machines_missing_the_same_key_at_once_compile_it_once(project, moto):
    """Four machines start at once with empty caches: one compiles, the
    others wait for its entry, fetch it, and count the wait."""
    slow_compiler(project, seconds=3)
    url = f"s3://{moto.bucket()}/bekc"
    env = s3_env(project, moto)
    procs = {m: start(project, m, url, env) for m in ("a", "b", "c", "d")}
    results = {m: finish(p) for m, p in procs.items()}
    for m, (rc, info, err) in results.items():
        assert rc == 0, err
        assert "warning" not in err, err
    assert len(compiling_machines(project)) == 1, project.log.read_text()
    (builder,) = compiling_machines(project)
    waiters = [m for m in results if m != builder]
    for m in waiters:
        assert results[m][1]["remote_hit"] is True, results[m]
        c = counters(project, m)
        assert c["remote_waits"] == 1 and c["remote_waits_served"] == 1, c
        assert c["saved_seconds"] >= 2.5 and c["wait_seconds"] > 0, c
    assert counters(project, builder)["remote_waits"] == 0
    text = project.bekc.run("cache", "stats", "--cache-dir", project.tmp / f"cache-{waiters[0]}")
    assert "waited for others" in text.stdout, text.stdout


def test_a_builder_killed_mid_build_holds_the_others_no_longer_than_the_bound(project, moto):
    """The machine that took the lease is killed (SIGKILL) while it
    compiles: the lease expires at the bound ($BEKC_REMOTE_WAIT), one
    waiter takes over and compiles, and the other waiters get its entry."""
    slow_compiler(project, slow_machine="dying", seconds=120)
    url = f"s3://{moto.bucket()}/bekc"
    env = s3_env(project, moto, BEKC_REMOTE_WAIT="6")
    dying = start(project, "dying", url, env)
    deadline = time.monotonic() + 60
    while "dying" not in compiling_machines(project):
        assert time.monotonic() < deadline and dying.poll() is None, "the builder never compiled"
        time.sleep(0.05)
    waiters = {m: start(project, m, url, env) for m in ("w1", "w2", "w3")}
    time.sleep(1)
    killed_at = time.monotonic()
    os.killpg(dying.pid, signal.SIGKILL)
    dying.communicate()
    results = {m: finish(p) for m, p in waiters.items()}
    elapsed = time.monotonic() - killed_at
    for rc, info, err in results.values():
        assert rc == 0, err
    assert elapsed < 6 + 20, f"the waiters took {elapsed:.1f} s after the kill"
    (taker,) = compiling_machines(project) - {"dying"}
    assert results[taker][1]["remote_hit"] is False
    for m in set(waiters) - {taker}:
        assert results[m][1]["remote_hit"] is True, results[m]


def _lease_name(project: Project, moto: Moto) -> str:
    """The lease object's key for the project's build (leases/<direct key>.0.json)."""
    bucket = moto.bucket()
    project.build("probe", "--remote-cache", f"s3://{bucket}", env=s3_env(project, moto))
    (lease,) = [k for k in moto.keys(bucket) if k.startswith("leases/")]
    assert lease.endswith(".0.json") and json.loads(moto.get(bucket, lease))["state"] == "done"
    return lease


@pytest.mark.parametrize("left", ["expires soon", "expires in an hour", "garbage"])
def test_a_lease_left_by_a_dead_node(project, moto, left):
    """A lease nobody will finish: one that expires in 3 s is waited for and
    then taken over; one that expires in an hour holds a build only for
    $BEKC_REMOTE_WAIT, with a warning; a malformed one is ignored at once."""
    lease = _lease_name(project, moto)
    bucket = moto.bucket()
    expires = int(time.time()) + (3 if left == "expires soon" else 3600)
    body = (b"<html>garbage</html>" if left == "garbage" else json.dumps({
        "format": 1, "state": "building", "owner": "dead-node pid 1 #0", "expires": expires,
        "build_ms": 0}).encode())
    moto.put(bucket, lease, body)
    env = s3_env(project, moto, BEKC_REMOTE_WAIT="4")
    start_at = time.monotonic()
    b = project.build("b", "--remote-cache", f"s3://{bucket}", env=env, timeout=60)
    elapsed = time.monotonic() - start_at
    assert b.compiled and b.info["remote_hit"] is False
    if left == "expires soon":
        assert 2 <= elapsed < 4 + 20, elapsed
        assert b.stderr == "", b.stderr
        assert lease.replace(".0.json", ".1.json") in moto.keys(bucket), "no takeover lease"
    elif left == "expires in an hour":
        assert 4 <= elapsed < 4 + 20, elapsed
        assert "waited 4 s ($BEKC_REMOTE_WAIT) for dead-node pid 1 #0" in b.stderr, b.stderr
        assert counters(project, "b")["remote_waits"] == 1
    else:
        assert elapsed < 20 and "ignoring" in b.stderr and "not a lease" in b.stderr, b.stderr


def test_a_failed_build_releases_its_lease(project, moto, kernels):
    """The builder's compile fails: it releases the lease, and a waiter
    takes over at once and reports the same error, long before the bound."""
    slow_compiler(project, seconds=3)
    project.src.write_text(project.src.read_text() + "\nthis is not C++;\n")
    url = f"s3://{moto.bucket()}/bekc"
    env = s3_env(project, moto, BEKC_REMOTE_WAIT="120")
    began = time.monotonic()
    procs = [start(project, m, url, env) for m in ("a", "b")]
    results = [finish(p) for p in procs]
    assert time.monotonic() - began < 60
    for rc, info, err in results:
        assert rc == 1 and "this is not C++" in err, err
    bucket = url[len("s3://"):].split("/")[0]
    leases = [k for k in moto.keys(bucket) if k.startswith("bekc/leases/")]
    states = sorted(json.loads(moto.get(bucket, k))["state"] for k in leases)
    assert states and set(states) == {"released"}, states


def test_waiting_off_every_machine_compiles(project, moto):
    """$BEKC_REMOTE_WAIT=0: no lease, and machines that miss at once each
    compile, as without leases."""
    slow_compiler(project, seconds=2)
    bucket = moto.bucket()
    env = s3_env(project, moto, BEKC_REMOTE_WAIT="0")
    procs = [start(project, m, f"s3://{bucket}", env) for m in ("a", "b", "c")]
    for p in procs:
        assert finish(p)[0] == 0
    assert compiling_machines(project) == {"a", "b", "c"}
    assert any(k.startswith("entries/") for k in moto.keys(bucket))
    assert not [k for k in moto.keys(bucket) if k.startswith("leases/")]
