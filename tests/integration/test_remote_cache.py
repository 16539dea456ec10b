"""--remote-cache: whole entries over HTTP GET/PUT, against a real nginx.

Each test starts its own nginx (Debian package ``nginx``; the tests are
skipped without it) with WebDAV PUT on 127.0.0.1 and a free port: its own
config, prefix, logs and document root under ``tmp_path``, ``daemon off;``
and ``master_process off;`` in a child process that is killed at the end.
"Machines" are separate empty local caches building the same sources from
the same paths, as CI runners sharing a remote do.

The host compiler is a wrapper that logs its calls, so "a remote hit ran no
compiler" is checked, not assumed.

What nginx will not do (an endless chunked body, a direct record the test
wrote by hand) comes from ``FakeRemote``, a small HTTP server in a thread.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Optional

import pytest

FAST = "-O0"
TOKEN = "s3cret-token-for-the-test"


# --------------------------------------------------------------------------- nginx
def find_nginx() -> Optional[str]:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 64; }}
http {{
    log_format bekc '$request_method $uri $status';
    access_log {prefix}/access.log bekc;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location /bekc/ {{
            {auth}
            {conditional}
            dav_methods PUT;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }}
    }}
}}
"""


# docs/cache.md's lines that make nginx refuse a conditional PUT (If-None-Match:
# *) of a file that exists, which its WebDAV module ignores.
NGINX_CONDITIONAL = """
            set $exists "";
            if ($http_if_none_match = "*") { set $exists "ask"; }
            if (-f $request_filename) { set $exists "${exists}-there"; }
            if ($exists = "ask-there") { return 412; }"""


class Nginx:
    """A private nginx serving (and accepting PUTs into) ``root``/bekc; with
    ``conditional``, honouring If-None-Match: * as docs/cache.md shows."""

    def __init__(self, binary: str, prefix: Path, token: Optional[str] = None,
                 conditional: bool = True):
        self.prefix = prefix
        self.root = prefix / "root"
        self.tree = self.root / "bekc"
        self.tree.mkdir(parents=True)
        self.port = free_port()
        auth = (f'if ($http_authorization != "Bearer {token}") {{ return 403; }}' if token else "")
        conf = prefix / "nginx.conf"
        conf.write_text(NGINX_CONF.format(prefix=prefix, port=self.port, root=self.root, auth=auth,
                                          conditional=NGINX_CONDITIONAL if conditional else ""))
        self.proc = subprocess.Popen([binary, "-p", str(prefix), "-c", str(conf),
                                      "-e", str(prefix / "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.proc.stderr.read().decode()}\n"
                                   f"{self.log('error.log')}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start listening")
                time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bekc"

    def log(self, name: str) -> str:
        path = self.prefix / name
        return path.read_text() if path.exists() else ""

    def requests(self) -> list:
        """[(method, uri, status)] from the access log."""
        return [tuple(line.split()) for line in self.log("access.log").splitlines()]

    def files(self) -> list:
        return sorted(str(p.relative_to(self.tree)) for p in self.tree.rglob("*") if p.is_file())

    def entry_tars(self) -> list:
        return sorted((self.tree / "entries").glob("*.tar"))

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stderr.close()


@pytest.fixture
def nginx_factory(tmp_path):
    binary = find_nginx()
    if binary is None:
        pytest.skip("nginx is not installed (Debian: apt-get install nginx)")
    started = []

    def start(token: Optional[str] = None, conditional: bool = True) -> Nginx:
        server = Nginx(binary, tmp_path / f"nginx{len(started)}", token, conditional)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def nginx(nginx_factory) -> Nginx:
    return nginx_factory()


# --------------------------------------------------------------------------- fake remote
class FakeRemote:
    """An HTTP/1.1 server on 127.0.0.1 that answers GET
    ``/bekc/direct/<any>.json`` with ``record`` (404 while it is None) and GET
    ``/bekc/entries/<any>.tar`` with ``entry``: bytes, or ``ENDLESS``, a
    chunked body without Content-Length that never ends (it stops at
    ``guard_bytes``, far past any limit a test sets, only so that a broken
    bekc cannot fill the test machine's disk). PUTs are refused (403)."""

    ENDLESS = object()

    def __init__(self):
        self.record: Optional[bytes] = None
        self.entry = None
        self.guard_bytes = 1 << 30
        self.requests = []  # (method, path)
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_PUT(self):
                fake.requests.append(("PUT", self.path))
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()

            def do_GET(self):
                fake.requests.append(("GET", self.path))
                body = None
                if self.path.startswith("/bekc/direct/"):
                    body = fake.record
                elif self.path.startswith("/bekc/entries/"):
                    body = fake.entry
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif body is FakeRemote.ENDLESS:
                    self.send_endless()
                else:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            def send_endless(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/x-tar")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                chunk = b"\0" * (256 << 10)
                framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
                sent = 0
                try:
                    while sent < fake.guard_bytes:
                        self.wfile.write(framed)
                        sent += len(chunk)
                except OSError:  # the client hung up: what bekc should do
                    pass
                self.close_connection = True

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/bekc"

    def set_record(self, key: str, files, absent=()) -> None:
        """One record for every direct key: ``files`` is [(path, sha256)]."""
        self.record = json.dumps({"format": 1, "records": [{
            "key": key, "files": [{"path": str(p), "sha256": h} for p, h in files],
            "absent": [str(a) for a in absent]}]}).encode()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_remote():
    server = FakeRemote()
    yield server
    server.stop()


class DiskWatch:
    """Samples, while a build runs, the largest regular file under some
    directories: what a download staged there grew to, even if it is removed
    before the build ends."""

    def __init__(self, *roots: Path):
        self.roots = roots
        self.largest = 0
        self.where = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        for root in self.roots:
            for dirpath, _, names in os.walk(root):
                for name in names:
                    try:
                        st = os.lstat(os.path.join(dirpath, name))
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode) and st.st_size > self.largest:
                        self.largest, self.where = st.st_size, os.path.join(dirpath, name)

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            time.sleep(0.01)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


_LOAD = """\
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)
getattr(lib, sys.argv[2])
"""


def assert_working_library(build) -> None:
    """The library is the one the manifest names, and it loads and exports
    its handlers (in a fresh Python)."""
    library_sha = hashlib.sha256(build.library.read_bytes()).hexdigest()
    assert library_sha == build.manifest["library_sha256"]
    for target in build.manifest["targets"]:
        proc = subprocess.run([sys.executable, "-c", _LOAD, str(build.library), target["symbol"]],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- project
class Project:
    """One source with a header, built by "machines" (local caches) that share
    paths, a logging compiler wrapper and an environment."""

    def __init__(self, bekc, kernels, tmp_path: Path):
        self.bekc = bekc
        self.tmp = tmp_path
        gxx = shutil.which("g++") or shutil.which("c++")
        if gxx is None:
            pytest.skip("no host compiler")
        self.log = tmp_path / "compiler.log"
        self.cxx = tmp_path / "bin" / "logging-g++"
        self.cxx.parent.mkdir()
        self.cxx.write_text(f'#!/bin/sh\necho "$@" >> "{self.log}"\nexec "{gxx}" "$@"\n')
        self.cxx.chmod(self.cxx.stat().st_mode | stat.S_IXUSR)
        d = bekc.workdir
        self.header = d / "val.h"
        self.header.write_text("#define VAL 3.0f\n")
        self.src = kernels.cpp(d / "k.cpp", includes=["val.h"], value="VAL")
        # A private TMPDIR shows that no token file or download is left behind.
        self.tmpdir = tmp_path / "tmpdir"
        self.tmpdir.mkdir()

    def env(self, **extra):
        env = dict(os.environ, TMPDIR=str(self.tmpdir))
        for var in ("BEKC_CACHE_DIR", "BEKC_REMOTE_CACHE", "BEKC_REMOTE_CACHE_READONLY",
                    "BEKC_REMOTE_TOKEN", "BEKC_REMOTE_TIMEOUT"):
            env.pop(var, None)
        env.update(extra)
        return env

    def compiles(self) -> int:
        """Compiler runs that compiled or linked (not version queries)."""
        if not self.log.exists():
            return 0
        return sum(1 for c in self.log.read_text().splitlines()
                   if ".bekc.cpp" in c or "-shared" in c)

    def build(self, machine: str, *args, env=None, **kw):
        before = self.compiles()
        r = self.bekc.build(self.src, FAST, "--cxx", self.cxx, *args,
                            cache_dir=self.tmp / f"cache-{machine}", env=env or self.env(), **kw)
        r.compiled = self.compiles() > before
        return r


@pytest.fixture
def project(bekc, kernels, tmp_path) -> Project:
    return Project(bekc, kernels, tmp_path)


def assert_no_leftovers(project: Project) -> None:
    # Directories may stay (the driver's private bekc-<uid>/), files may not.
    left = [p for p in project.tmpdir.rglob("*") if not p.is_dir()]
    assert left == [], "temporary files (a token?) left behind"
    for cache in project.tmp.glob("cache-*"):
        assert list((cache / "tmp").glob("scratch.*")) == [], "a remote scratch directory stayed"


def rewrite_tar(path: Path, change) -> None:
    """Rewrites a remote entry archive; ``change(name, data)`` returns new bytes,
    or None to drop the member. USTAR, as bekc writes and reads."""
    with tarfile.open(path) as t:
        members = [(m, t.extractfile(m).read()) for m in t.getmembers()]
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
        for m, data in members:
            data = change(m.name, data)
            if data is not None:
                m.size = len(data)
                t.addfile(m, io.BytesIO(data))


# --------------------------------------------------------------------------- hits
def test_second_machine_gets_a_remote_hit_without_compiling(project, nginx):
    a = project.build("a", "--remote-cache", nginx.url)
    assert a.compiled and a.hit is False and a.info["remote_hit"] is False
    assert a.stderr == "", a.stderr
    key = a.key
    assert f"entries/{key}.tar" in nginx.files()
    records = [f for f in nginx.files() if f.startswith("direct/")]
    assert len(records) == 1
    record = json.loads((nginx.tree / records[0]).read_text())
    assert record["records"][0]["key"] == key
    assert str(project.header) in [f["path"] for f in record["records"][0]["files"]]
    with tarfile.open(nginx.entry_tars()[0]) as t:
        assert sorted(t.getnames()) == sorted(["libk.so", "dependencies.json", "manifest.json",
                                               "manifest.no-cuda-graph.json", "target.json"])

    b = project.build("b", "--remote-cache", nginx.url)
    assert b.info["remote_hit"] is True and b.hit is True, b.describe()
    assert not b.compiled, "a remote hit ran the compiler"
    assert b.key == key
    assert b.library.read_bytes() == a.library.read_bytes()
    assert str(project.tmp / "cache-b") in str(b.library), "the hit was copied into the local cache"

    # Now local: the remote is not asked again.
    asked = len(nginx.requests())
    again = project.build("b", "--remote-cache", nginx.url)
    assert again.hit is True and again.info["remote_hit"] is False and not again.compiled
    assert len(nginx.requests()) == asked
    assert_no_leftovers(project)


def test_a_machine_with_no_compiler_gets_a_remote_hit_by_the_portable_key(project, nginx):
    """docs/cache.md, "Hits without a compiler": the remote holds each build's
    portable record too, and a machine where no compiler is found asks it."""
    from test_portable_hits import HIDE  # the mount-namespace helper
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                            str(HIDE), "--compilers", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot hide the compilers here (unshare -m as root)")
    a = project.build("a", "--remote-cache", nginx.url)
    assert a.compiled and a.stderr == "", a.stderr
    assert [f for f in nginx.files() if f.startswith("portable/")], nginx.files()

    def hidden_build(machine, *args):
        return subprocess.run(
            ["unshare", "-m", "--propagation", "private", sys.executable, str(HIDE),
             "--compilers", str(project.bekc.binary), "build", str(project.src), FAST,
             "--cache-dir", str(project.tmp / f"cache-{machine}"), "--remote-cache", nginx.url,
             "--json", "-v", *args], env=project.env(), capture_output=True, text=True)
    r = hidden_build("c")
    assert r.returncode == 0, r.stderr
    hit = json.loads(r.stdout.strip().splitlines()[-1])
    assert hit["key"] == a.key and "(from the remote cache)" in hit["checked"], hit
    assert str(project.tmp / "cache-c") in hit["library"]
    # Then a local hit, with no remote request.
    asked = len(nginx.requests())
    r = hidden_build("c")
    assert r.returncode == 0 and len(nginx.requests()) == asked, r.stderr
    # A changed header: no record holds, and the build says no compiler was found.
    project.header.write_text("#define VAL 4.0f\n")
    r = hidden_build("d")
    assert r.returncode == 3 and "no host C++ compiler found" in r.stderr, r.stderr
    assert_no_leftovers(project)


def test_remote_from_the_environment_and_depfile(project, nginx, tmp_path):
    env = project.env(BEKC_REMOTE_CACHE=nginx.url + "/")
    project.build("a", env=env)
    dep = tmp_path / "k.d"
    b = project.build("b", "--depfile", dep, env=env)
    assert b.info["remote_hit"] is True and not b.compiled
    assert str(project.header) in dep.read_text(), "dependencies.json travels with the entry"


def test_a_record_for_other_header_contents_is_not_used(project, nginx):
    a = project.build("a", "--remote-cache", nginx.url)
    project.header.write_text("#define VAL 4.0f\n")
    b = project.build("b", "--remote-cache", nginx.url)
    assert b.info["remote_hit"] is False and b.compiled and b.key != a.key
    # Both records are kept: a third machine with the first header gets its entry.
    record = json.loads(next((nginx.tree / "direct").iterdir()).read_text())
    assert [r["key"] for r in record["records"]] == [b.key, a.key]
    project.header.write_text("#define VAL 3.0f\n")
    c = project.build("c", "--remote-cache", nginx.url)
    assert c.info["remote_hit"] is True and not c.compiled and c.key == a.key


# --------------------------------------------------------------------------- corruption
def _truncate_library(name, data):
    return data[: len(data) // 2] if name == "libk.so" else data


def _flip_library_byte(name, data):
    if name != "libk.so":
        return data
    mid = len(data) // 2
    return data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1:]


def _bad_manifest(name, data):
    return b"{not json" if name == "manifest.json" else data


def _manifest_for_another_key(name, data):
    if name not in ("manifest.json", "manifest.no-cuda-graph.json"):
        return data
    m = json.loads(data)
    m["key"] = "0" * 64
    return json.dumps(m).encode()


def _no_library(name, data):
    return None if name == "libk.so" else data


CORRUPTIONS = {
    "truncated library": (lambda p: rewrite_tar(p, _truncate_library), "does not match library_sha256"),
    "altered library": (lambda p: rewrite_tar(p, _flip_library_byte), "does not match library_sha256"),
    "bad manifest": (lambda p: rewrite_tar(p, _bad_manifest), "manifest.json is not a JSON object"),
    "manifest of another key": (lambda p: rewrite_tar(p, _manifest_for_another_key), "another key"),
    "missing library": (lambda p: rewrite_tar(p, _no_library), "library libk.so is missing"),
    "truncated archive": (lambda p: p.write_bytes(p.read_bytes()[:3000]), "archive is truncated"),
    "entry deleted": (lambda p: p.unlink(), "is missing although a direct record names it"),
    "not an archive": (lambda p: p.write_bytes(b"<html>502 Bad Gateway</html>\n" * 40),
                       "not a ustar archive"),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_remote_entry_is_rejected_and_built_locally(project, nginx, corruption):
    corrupt, reason = CORRUPTIONS[corruption]
    a = project.build("a", "--remote-cache", nginx.url)
    (tar,) = nginx.entry_tars()
    corrupt(tar)
    b = project.build("b", "--remote-cache", nginx.url)
    assert b.info["remote_hit"] is False and b.hit is False and b.compiled, b.describe()
    assert "warning: remote cache entry" in b.stderr and reason in b.stderr, b.stderr
    assert b.key == a.key
    assert hashlib.sha256(b.library.read_bytes()).hexdigest() == b.manifest["library_sha256"]
    # Nothing half-unpacked stays in the local cache.
    assert list((project.tmp / "cache-b" / "tmp").glob(f"{a.key}.*")) == []
    # The local build put a good entry back: the next machine gets a hit.
    c = project.build("c", "--remote-cache", nginx.url)
    assert c.info["remote_hit"] is True and not c.compiled
    assert_no_leftovers(project)


def _hostile_member(kind):
    def corrupt(path: Path):
        with tarfile.open(path) as t:
            members = [(m, t.extractfile(m).read()) for m in t.getmembers()]
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
            for m, data in members:
                t.addfile(m, io.BytesIO(data))
            evil = tarfile.TarInfo({"dotdot": "../../../escaped", "absolute": str(path.parent / "abs-escaped"),
                                    "symlink": "link", "subdir": "sub/file"}[kind])
            if kind == "symlink":
                evil.type = tarfile.SYMTYPE
                evil.linkname = "/etc/passwd"
                t.addfile(evil)
            else:
                evil.size = 4
                t.addfile(evil, io.BytesIO(b"evil"))
    return corrupt


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink", "subdir"])
def test_hostile_archive_members_are_rejected(project, nginx, kind):
    project.build("a", "--remote-cache", nginx.url)
    (tar,) = nginx.entry_tars()
    _hostile_member(kind)(tar)
    b = project.build("b", "--remote-cache", nginx.url)
    assert b.info["remote_hit"] is False and b.compiled
    assert "warning: remote cache entry" in b.stderr, b.stderr
    assert "not a plain file name" in b.stderr or "not a regular file" in b.stderr, b.stderr
    escaped = [p for p in project.tmp.rglob("*escaped*")] + list(tar.parent.glob("abs-escaped"))
    assert escaped == []


def test_a_malformed_direct_record_only_warns(project, nginx):
    project.build("a", "--remote-cache", nginx.url)
    (record,) = (nginx.tree / "direct").iterdir()
    record.write_text('{"format": 1, "records": [{"key": "../../etc", "files": [], "absent": []}]}')
    b = project.build("b", "--remote-cache", nginx.url)
    assert b.info["remote_hit"] is False and b.compiled
    assert "remote cache: ignoring" in b.stderr and "no valid key" in b.stderr, b.stderr
    # b replaced the record with a good one.
    c = project.build("c", "--remote-cache", nginx.url)
    assert c.info["remote_hit"] is True and not c.compiled


# --------------------------------------------------------------------------- failures
def test_a_down_remote_only_warns(project):
    url = f"http://127.0.0.1:{free_port()}/bekc"  # nothing listens there
    start = time.monotonic()
    b = project.build("a", "--remote-cache", url)
    assert b.compiled and b.hit is False and b.info["remote_hit"] is False
    assert b.stderr.count("warning:") == 1, "one warning, then the remote is left alone"
    assert "is unreachable" in b.stderr, b.stderr
    assert time.monotonic() - start < 30
    assert_no_leftovers(project)


def test_a_remote_that_never_answers_times_out(project):
    """A server that accepts connections and then says nothing."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}/bekc"
        start = time.monotonic()
        b = project.build("a", "--remote-cache", url, env=project.env(BEKC_REMOTE_TIMEOUT="1"))
        elapsed = time.monotonic() - start
    finally:
        stop.set()
        thread.join()
        for c in held:
            c.close()
        server.close()
    assert b.compiled and b.info["remote_hit"] is False
    assert "is unreachable" in b.stderr and b.stderr.count("warning:") == 1, b.stderr
    assert elapsed < 20


def test_a_bad_url_disables_the_remote_with_a_warning(project):
    b = project.build("a", "--remote-cache", "ftp://example.invalid/cache")
    assert b.compiled and "remote cache disabled" in b.stderr and "not an http" in b.stderr


def test_an_empty_flag_turns_off_the_remote_from_the_environment(project):
    env = project.env(BEKC_REMOTE_CACHE=f"http://127.0.0.1:{free_port()}/bekc")
    b = project.build("a", "--remote-cache", "", env=env)
    assert b.compiled and b.stderr == "", b.stderr


def test_missing_curl_disables_the_remote_with_a_warning(project, nginx, tmp_path):
    # PATH: everything in /usr/bin (the compiler needs as and ld) but curl.
    bindir = tmp_path / "nocurl"
    bindir.mkdir()
    for tool in Path("/usr/bin").iterdir():
        if tool.name != "curl":
            (bindir / tool.name).symlink_to(tool)
    b = project.build("a", "--remote-cache", nginx.url, env=project.env(PATH=str(bindir)))
    assert b.compiled and "curl was not found" in b.stderr, b.stderr
    assert nginx.requests() == []


# --------------------------------------------------------------------------- read-only
@pytest.mark.parametrize("how", ["flag", "env"])
def test_read_only_never_puts(project, nginx, how):
    if how == "flag":
        args, env = ["--remote-cache", nginx.url, "--remote-cache-read-only"], project.env()
    else:
        args, env = [], project.env(BEKC_REMOTE_CACHE=nginx.url, BEKC_REMOTE_CACHE_READONLY="1")
    a = project.build("a", *args, env=env)
    assert a.compiled and a.stderr == ""
    assert nginx.files() == []
    assert [m for m, _, _ in nginx.requests() if m != "GET"] == []
    # The direct record, and whether another machine is building it (a lease).
    asked = sorted(uri.split("/")[2] for _, uri, _ in nginx.requests())
    assert asked == ["direct", "leases"], nginx.requests()
    # Reading still works: once a writer published, a read-only machine hits.
    project.build("w", "--remote-cache", nginx.url)
    puts = [r for r in nginx.requests() if r[0] == "PUT"]
    b = project.build("b", *args, env=env)
    assert b.info["remote_hit"] is True and not b.compiled
    assert [r for r in nginx.requests() if r[0] == "PUT"] == puts


# --------------------------------------------------------------------------- leases
def test_a_store_that_ignores_conditional_puts_is_found_out(project, nginx_factory):
    """nginx's WebDAV PUT ignores If-None-Match: the builder finds that out
    from its second conditional PUT of the lease, warns once, and builds as
    without leases; the next machine still gets a remote hit."""
    server = nginx_factory(conditional=False)
    a = project.build("a", "--remote-cache", server.url, timeout=60)
    assert a.compiled and a.info["remote_hit"] is False
    assert a.stderr.count("warning:") == 1, a.stderr
    assert "ignores conditional PUTs (If-None-Match)" in a.stderr, a.stderr
    b = project.build("b", "--remote-cache", server.url)
    assert b.info["remote_hit"] is True and not b.compiled


def test_nginx_with_the_documented_lines_holds_leases(project, nginx):
    """With docs/cache.md's lines nginx refuses a second conditional PUT:
    no warning, and the builder's lease ends "done" with its build time."""
    a = project.build("a", "--remote-cache", nginx.url)
    assert a.compiled and a.stderr == "", a.stderr
    (lease,) = [f for f in nginx.files() if f.startswith("leases/")]
    assert lease.endswith(".0.json")
    state = json.loads((nginx.tree / lease).read_text())
    assert state["state"] == "done" and state["build_ms"] > 0, state
    assert [r for r in nginx.requests() if r[1].endswith(lease) and r[0] == "PUT"][1][2] == "412"


# --------------------------------------------------------------------------- token
def test_the_bearer_token_reaches_the_server(project, nginx_factory):
    server = nginx_factory(token=TOKEN)
    # Without the token: 403, a warning, a local build; nothing uploaded.
    a = project.build("a", "--remote-cache", server.url)
    assert a.compiled and "HTTP status 403" in a.stderr, a.stderr
    assert server.files() == []
    # A wrong token is refused the same way.
    w = project.build("w", "--remote-cache", server.url, env=project.env(BEKC_REMOTE_TOKEN="wrong"))
    assert "HTTP status 403" in w.stderr and server.files() == []

    env = project.env(BEKC_REMOTE_TOKEN=TOKEN)
    b = project.build("b", "--remote-cache", server.url, env=env)
    assert b.compiled and b.stderr == "", b.stderr
    assert any(f.startswith("entries/") for f in server.files())
    c = project.build("c", "--remote-cache", server.url, env=env)
    assert c.info["remote_hit"] is True and not c.compiled
    assert_no_leftovers(project)


def test_a_token_with_a_line_break_is_refused(project, nginx):
    env = project.env(BEKC_REMOTE_TOKEN=TOKEN + "\r\nX-Injected: 1")
    b = project.build("a", "--remote-cache", nginx.url, env=env)
    assert b.compiled and "control characters" in b.stderr
    assert nginx.requests() == []


def recording_curl(tmp_path: Path, first: str, per_argument: str) -> tuple:
    """A `curl` in a directory of its own that runs the shell lines `first`
    once, then `per_argument` for each argument (`$a`, after `$prev`), with
    `$log` naming the returned log file, and then runs the real curl.
    Returns (log, a PATH that finds the wrapper first)."""
    real = shutil.which("curl")
    if real is None:
        pytest.skip("curl is not installed")
    bindir = tmp_path / "curlbin"
    bindir.mkdir()
    log = tmp_path / "curl.log"
    wrapper = bindir / "curl"
    wrapper.write_text(f'#!/bin/sh\nlog="{log}"\n{first}\nprev=""\nfor a in "$@"; do\n'
                       f'{per_argument}\nprev="$a"\ndone\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return log, f"{bindir}:{os.environ.get('PATH', '')}"


def test_the_token_is_not_on_curls_command_line(project, nginx, tmp_path):
    """curl is replaced by a wrapper that records its arguments and the header
    file it was given, then runs the real curl."""
    log, path = recording_curl(
        tmp_path, 'echo "ARGS $*" >> "$log"',
        'if [ "$prev" = "--header" ]; then stat -c "MODE %a" "${a#@}" >> "$log"; fi')
    env = project.env(BEKC_REMOTE_TOKEN=TOKEN, PATH=path)
    project.build("a", "--remote-cache", nginx.url, env=env)
    text = log.read_text()
    assert "ARGS" in text and TOKEN not in text
    modes = {line for line in text.splitlines() if line.startswith("MODE")}
    assert modes == {"MODE 600"}, text
    assert_no_leftovers(project)


# --------------------------------------------------------------------------- bounds
# A remote, or whoever can write to it, must not be able to hang a build or
# fill a disk: every test here runs bekc under a 60 s subprocess timeout and
# expects a warning, exit 0 and a good local build.
BOUND_S = 60


def _key_of_a_local_build(project: Project) -> str:
    """The full key the project builds to, from a machine without a remote."""
    return project.build("a").key


def test_an_endless_entry_body_is_cut_at_the_limit(project, fake_remote):
    """An entry response without Content-Length that never ends: bekc stops
    reading at $BEKC_REMOTE_MAX_ENTRY_SIZE, stages nothing bigger (in the
    cache's tmp/, never in $TMPDIR) and builds locally."""
    key = _key_of_a_local_build(project)
    fake_remote.set_record(key, [(project.header, sha256_of(project.header))])
    fake_remote.entry = FakeRemote.ENDLESS
    cap = 1 << 20
    env = project.env(BEKC_REMOTE_MAX_ENTRY_SIZE="1MiB", BEKC_REMOTE_TIMEOUT="2")
    cache_b = project.tmp / "cache-b"
    start = time.monotonic()
    with DiskWatch(project.tmpdir, project.tmp / "cache-b") as watch:
        b = project.build("b", "--remote-cache", fake_remote.url, "--remote-cache-read-only",
                          env=env, timeout=BOUND_S)
    elapsed = time.monotonic() - start
    assert ("GET", f"/bekc/entries/{key}.tar") in fake_remote.requests, "the entry was asked for"
    assert watch.largest <= cap, f"{watch.where} grew to {watch.largest} bytes"
    assert b.compiled and b.info["remote_hit"] is False and b.key == key
    assert "warning: remote cache entry" in b.stderr, b.stderr
    assert "larger than the limit of 1048576 bytes" in b.stderr, b.stderr
    assert elapsed < BOUND_S
    assert_working_library(b)
    assert tree_bytes(cache_b) < cap, "the cache holds more than the entry it built"
    assert_no_leftovers(project)


def test_the_default_entry_limit_is_proportionate_to_a_library(project, fake_remote):
    """Without $BEKC_REMOTE_MAX_ENTRY_SIZE, an endless entry body is cut at
    the default of 256 MiB (a kernel library's archive is a few MB), not at
    2 GiB: what a broken or hostile server can make one build write stays
    proportionate."""
    key = _key_of_a_local_build(project)
    fake_remote.set_record(key, [(project.header, sha256_of(project.header))])
    fake_remote.entry = FakeRemote.ENDLESS
    default = 256 << 20
    fake_remote.guard_bytes = default + (64 << 20)  # past the limit, far below 2 GiB
    with DiskWatch(project.tmpdir, project.tmp / "cache-b") as watch:
        b = project.build("b", "--remote-cache", fake_remote.url, "--remote-cache-read-only",
                          timeout=BOUND_S)
    assert ("GET", f"/bekc/entries/{key}.tar") in fake_remote.requests, "the entry was asked for"
    assert watch.largest <= default, f"{watch.where} grew to {watch.largest} bytes"
    assert b.compiled and b.info["remote_hit"] is False and b.key == key
    assert f"larger than the limit of {default} bytes" in b.stderr, b.stderr
    assert_working_library(b)
    assert_no_leftovers(project)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_a_record_naming_a_device_or_fifo_does_not_hang_the_build(project, fake_remote, tmp_path,
                                                                 kind):
    """A direct record whose dependency is /dev/zero (endless to read) or a
    FIFO (opening it waits for a writer): it does not match, with a warning,
    even for a read-only machine."""
    key = _key_of_a_local_build(project)
    if kind == "fifo":
        target = tmp_path / "a-fifo.h"
        os.mkfifo(target)
    else:
        target = Path("/dev/zero")
    fake_remote.set_record(key, [(project.header, sha256_of(project.header)), (target, "0" * 64)])
    start = time.monotonic()
    b = project.build("b", "--remote-cache", fake_remote.url, "--remote-cache-read-only",
                      timeout=BOUND_S)
    assert time.monotonic() - start < BOUND_S
    assert b.compiled and b.info["remote_hit"] is False and b.key == key
    assert "warning: remote cache: a record of" in b.stderr and str(target) in b.stderr, b.stderr
    assert ("GET", f"/bekc/entries/{key}.tar") not in fake_remote.requests
    assert_working_library(b)
    assert_no_leftovers(project)


def test_the_whole_lookup_has_one_time_limit(project, fake_remote, tmp_path):
    """A record naming many large (sparse) files that all match: hashing them
    would take minutes; the lookup stops at 4 x $BEKC_REMOTE_TIMEOUT with a
    warning and the build compiles locally."""
    key = _key_of_a_local_build(project)
    big = tmp_path / "big.h"
    with open(big, "wb") as f:
        f.truncate(1 << 30)  # 1 GiB of holes: the largest file a record may name
    sha = hashlib.sha256()
    with open(big, "rb") as f:
        while chunk := f.read(16 << 20):
            sha.update(chunk)
    links = tmp_path / "links"
    links.mkdir()
    files = []
    for i in range(64):
        (links / f"h{i}.h").symlink_to(big)
        files.append((links / f"h{i}.h", sha.hexdigest()))
    fake_remote.set_record(key, files)
    start = time.monotonic()
    b = project.build("b", "--remote-cache", fake_remote.url, "--remote-cache-read-only",
                      env=project.env(BEKC_REMOTE_TIMEOUT="1"), timeout=BOUND_S)
    elapsed = time.monotonic() - start
    assert b.compiled and b.info["remote_hit"] is False and b.key == key
    assert "gave up the lookup" in b.stderr and "4 s" in b.stderr, b.stderr
    assert "while hashing" in b.stderr, b.stderr
    assert elapsed < BOUND_S
    assert_working_library(b)


def test_the_remotes_files_are_staged_in_the_cache(project, nginx, tmp_path):
    """curl's side files (the token's header file, its messages) and the
    downloads live in a scratch directory of the local cache's tmp/, which is
    gone afterwards; $TMPDIR gets none of them."""
    log, path = recording_curl(
        tmp_path, "",
        'if [ "$prev" = "--header" ]; then echo "HEADER ${a#@}" >> "$log"; fi\n'
        'if [ "$prev" = "--stderr" ]; then echo "MESSAGES $a" >> "$log"; fi\n'
        'if [ "$prev" = "--upload-file" ]; then echo "UPLOAD $a" >> "$log"; fi')
    env = project.env(BEKC_REMOTE_TOKEN=TOKEN, PATH=path)
    project.build("a", "--remote-cache", nginx.url, env=env)
    b = project.build("b", "--remote-cache", nginx.url, env=env)
    assert b.info["remote_hit"] is True and not b.compiled, b.describe()
    lines = log.read_text().splitlines()
    assert any(line.startswith("HEADER") for line in lines), lines
    assert any(line.startswith("UPLOAD") for line in lines), lines
    caches = (project.tmp / "cache-a", project.tmp / "cache-b")
    for line in lines:
        path = Path(line.split(" ", 1)[1])
        scratch = path.parent
        assert scratch.name.startswith("scratch.") and scratch.parent.name == "tmp", line
        assert scratch.parent.parent in caches, line
        assert not scratch.exists(), f"{scratch} stayed"
    assert_no_leftovers(project)


# --------------------------------------------------------------------------- base_dir
# Two checkouts of one project at different places share hits when each sets
# $BEKC_BASE_DIR to its own root (docs/cache.md, "Sharing between
# checkouts"): the keys, the direct records (local and remote) and the
# dependency lists name files under it relative to it.
class Checkout:
    def __init__(self, bekc, kernels, root: Path, value="3.0f"):
        self.bekc, self.root = bekc, root
        root.mkdir(parents=True)
        (root / "val.h").write_text(f"#define VAL {value}\n")
        extra = 'const char* where_built() { return __FILE__; }\n'
        self.src = kernels.cpp(root / "k.cpp", includes=["val.h"], value="VAL", extra=extra)

    def env(self, base=True):
        env = clean_env_for_base()
        if base:
            env["BEKC_BASE_DIR"] = str(self.root)
        return env

    def build(self, cache: Path, *args, base=True, **kw):
        return self.bekc.build(self.src, FAST, "--depfile", self.root / "k.d", *args,
                               cache_dir=cache, env=self.env(base), **kw)


def clean_env_for_base():
    env = dict(os.environ)
    for var in ("BEKC_CACHE_DIR", "BEKC_REMOTE_CACHE", "BEKC_BASE_DIR", "BEKC_CONFIG"):
        env.pop(var, None)
    return env


def test_checkouts_at_two_places_share_one_cache_through_base_dir(bekc, kernels, tmp_path):
    a = Checkout(bekc, kernels, tmp_path / "alice" / "proj")
    b = Checkout(bekc, kernels, tmp_path / "bob" / "work" / "proj")
    cache = tmp_path / "cache"
    first = a.build(cache)
    assert first.hit is False
    second = b.build(cache)
    assert second.hit is True and second.key == first.key
    # Each checkout's depfile names its own header, not the other's.
    assert str(b.root / "val.h") in (b.root / "k.d").read_text()
    assert str(a.root) not in (b.root / "k.d").read_text()
    # __FILE__ and debug information name the file relative to the base.
    library = Path(first.info["library"]).read_bytes()
    assert str(a.root).encode() not in library
    assert b"./k.cpp" in library
    # Without a base, the same files at another place are another build.
    assert b.build(cache, base=False).hit is False


def test_base_dir_still_keys_what_the_files_hold(bekc, kernels, tmp_path):
    """A header with other bytes under the same relative path is a miss."""
    cache = tmp_path / "cache"
    a = Checkout(bekc, kernels, tmp_path / "a" / "proj")
    c = Checkout(bekc, kernels, tmp_path / "c" / "proj", value="4.0f")
    assert a.build(cache).hit is False
    other = c.build(cache)
    assert other.hit is False and other.key != a.build(cache).key
    # And the direct record of a checks a's own files, not c's.
    (a.root / "val.h").write_text("#define VAL 5.0f\n")
    assert a.build(cache).hit is False


def test_checkouts_share_a_remote_cache_through_base_dir(bekc, kernels, tmp_path, nginx):
    a = Checkout(bekc, kernels, tmp_path / "ci-runner" / "build" / "proj")
    b = Checkout(bekc, kernels, tmp_path / "laptop" / "proj")
    c = Checkout(bekc, kernels, tmp_path / "other" / "proj", value="4.0f")
    remote = ("--remote-cache", nginx.url)
    first = a.build(tmp_path / "cache-a", *remote)
    assert first.hit is False
    records = list((nginx.tree / "direct").rglob("*.json"))
    assert records and "$BEKC_BASE_DIR/val.h" in records[0].read_text()
    assert str(a.root) not in records[0].read_text()
    second = b.build(tmp_path / "cache-b", *remote)
    assert second.hit is True and second.info.get("remote_hit") is True
    assert second.key == first.key
    # Different bytes under the same relative path: the remote record does
    # not hold, and c builds for itself.
    third = c.build(tmp_path / "cache-c", *remote)
    assert third.hit is False and third.key != first.key


# With base_dir set, a checkout never gets another checkout's library: not
# through a header outside the base, not through a checkout path the library
# keeps, and not through a path that only contains the base's.
@pytest.mark.parametrize("reach", ["#include \"../common/v.h\"", "-I ../common"])
def test_a_header_beside_the_base_reached_relatively_is_each_checkouts_own(bekc, kernels,
                                                                          tmp_path, reach):
    """A header outside the base, reached by a relative path (an #include or
    -I), is each checkout's own: a second checkout whose header differs
    misses and builds from its own header."""
    cache = tmp_path / "cache"
    builds = []
    for who, value in (("a", "1.0f"), ("b", "2.0f")):
        top = tmp_path / who
        root = top / "proj"
        (top / "common").mkdir(parents=True)
        (top / "common" / "v.h").write_text(f"#define VAL {value}\n")
        include = "../common/v.h" if reach.startswith("#") else "v.h"
        src = kernels.cpp(root / "k.cpp", includes=[include], value="VAL")
        args = [] if reach.startswith("#") else ["-I", "../common"]
        env = clean_env_for_base()
        env["BEKC_BASE_DIR"] = str(root)
        builds.append(bekc.build(src, FAST, *args, "--depfile", root / "k.d", cache_dir=cache,
                                 env=env, cwd=root))
        # Each depfile names the checkout's own header.
        named = {os.path.normpath(w) for w in (root / "k.d").read_text().split()}
        assert str(top / "common" / "v.h") in named, (root / "k.d").read_text()
    a, b = builds
    assert a.hit is False
    assert b.hit is False and b.key != a.key, "b was served a's library, built from a's v.h"
    # The same bytes beside b as beside a: the checkouts share again.
    (tmp_path / "b" / "common" / "v.h").write_text("#define VAL 1.0f\n")
    env = clean_env_for_base()
    env["BEKC_BASE_DIR"] = str(tmp_path / "b" / "proj")
    args = [] if reach.startswith("#") else ["-I", "../common"]
    again = bekc.build(tmp_path / "b" / "proj" / "k.cpp", FAST, *args, cache_dir=cache, env=env,
                       cwd=tmp_path / "b" / "proj")
    assert again.hit is True and again.key == a.key


@pytest.mark.parametrize("copied", ["-D", "rpath", "LD_RUN_PATH"])
def test_a_checkout_path_the_library_keeps_is_not_hidden(bekc, kernels, tmp_path, copied):
    """Values the compiler or the linker copies into the library (a -D
    string, the RUNPATH from -Wl,-rpath or $LD_RUN_PATH) stay in the key as
    written: each checkout gets a library that points into itself."""
    cache = tmp_path / "cache"
    builds = []
    for who in ("alice", "bob"):
        c = Checkout(bekc, kernels, tmp_path / who / "proj")
        env = c.env()
        args = []
        if copied == "-D":
            args = ["-D", f'DATADIR="{c.root}/data"']
            c.src.write_text(c.src.read_text() + "const char* data_dir() { return DATADIR; }\n")
        elif copied == "rpath":
            args = [f"--ldflag=-Wl,-rpath,{c.root}/lib"]
        else:
            env["LD_RUN_PATH"] = f"{c.root}/lib"
        r = bekc.build(c.src, FAST, *args, cache_dir=cache, env=env)
        library = Path(r.info["library"]).read_bytes()
        assert str(c.root).encode() in library, "the library does not hold the checkout's path"
        other = tmp_path / ("bob" if who == "alice" else "alice")
        assert str(other).encode() not in library, f"{who} got a library of the other checkout"
        builds.append(r)
    assert builds[1].hit is False and builds[1].key != builds[0].key


def test_the_base_is_hidden_only_as_a_leading_path_component(bekc, kernels, tmp_path):
    """With base /x/src, /x/usr/x/src/... (an include directory outside the
    base whose path contains it) is keyed by its own path, not rewritten to
    /x/usr$BEKC_BASE_DIR/...: a header that appears there later misses."""
    base = tmp_path / "src"
    outer = tmp_path / "usr" / str(base).lstrip("/")  # <tmp>/usr<tmp>/src: holds the base
    (outer / "inc").mkdir(parents=True)
    (base / "inc").mkdir(parents=True)
    (base / "inc" / "v.h").write_text("#define VAL 1.0f\n")
    src = kernels.cpp(base / "k.cpp", includes=["v.h"], value="VAL")
    env = clean_env_for_base()
    env["BEKC_BASE_DIR"] = str(base)
    cache = tmp_path / "cache"
    args = [src, FAST, "-I", outer / "inc", "-I", base / "inc", "--depfile", tmp_path / "k.d"]
    first = bekc.build(*args, cache_dir=cache, env=env)
    assert bekc.build(*args, cache_dir=cache, env=env).hit is True
    # A v.h that appears in the first -I directory shadows the one used.
    (outer / "inc" / "v.h").write_text("#define VAL 2.0f\n")
    shadowed = bekc.build(*args, cache_dir=cache, env=env)
    assert shadowed.hit is False and shadowed.key != first.key
    assert str(outer / "inc" / "v.h") in (tmp_path / "k.d").read_text()
