"""Hostile or mistaken command lines and input files: what the user sees and the exit code.

Every case here is refused with a message naming the option or the file (and
the line, where there is one) and a non-zero exit, instead of a crash, a hang,
a flood of memory or a silent success:

* JSON the user names (--functions, an existing --compile-commands file)
  nested deeper than bekc allows (nlohmann's recursion would overflow the stack);
* options given an empty value (`-D ''`, `--name=`), which compilers, or CLI11,
  would read as taking the next argument;
* module names and target prefixes too long for lib<name>.so to be a file name;
* inputs and option files that are not regular files (a FIFO, /dev/zero);
* standard output that cannot be written (`>/dev/full`);
* a --compile-commands file that is not a compilation database, which bekc
  must leave as it is rather than replace.

Exit codes: 1 source error, 2 usage error, 4 cache or I/O error.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
from pathlib import Path

import pytest

FAST = "-O0"
MAX_DEPTH = 64  # kMaxJsonDepth
MAX_NAME = 128  # kMaxModuleNameLength
# A bekc that reads /dev/zero or waits on a FIFO must fail the test, not the
# machine: the address space is capped and the run timed out.
LIMIT_S = 30
ADDRESS_SPACE = 4 << 30


def _cap_memory():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run(bekc, *args, stdout=subprocess.PIPE, env=None) -> subprocess.CompletedProcess:
    """bekc ARGS, argv only, with memory capped and a short timeout."""
    argv = [str(bekc.binary), *[str(a) for a in args]]
    environment = dict(env or os.environ)
    environment.pop("BEKC_CACHE_DIR", None)
    if env is None:
        environment.pop("BEKC_REMOTE_CACHE", None)
    # bekc's private temporaries under the test's own directory.
    tmp = bekc.workdir.parent / "tmp"
    tmp.mkdir(mode=0o700, exist_ok=True)
    environment["TMPDIR"] = str(tmp)
    return subprocess.run(argv, cwd=bekc.workdir, env=environment, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=LIMIT_S,
                          preexec_fn=_cap_memory)


def build(bekc, *args, **kw) -> subprocess.CompletedProcess:
    return run(bekc, "build", *args, "--cache-dir", bekc.cache_dir, **kw)


def assert_usage_error(proc, *needles, code=2):
    """Exit `code` (never a signal), nothing on stdout, and every needle on stderr."""
    assert proc.returncode == code, (f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout}"
                                     f"\n--- stderr ---\n{proc.stderr}")
    assert not (proc.stdout or "").strip(), proc.stdout
    for needle in needles:
        assert needle in proc.stderr, f"{needle!r} not in stderr:\n{proc.stderr}"


def deep_json(depth: int, inner: str = "") -> str:
    return "[" * depth + inner + "]" * depth


@pytest.fixture
def src(bekc, kernels) -> Path:
    return kernels.cpp(bekc.workdir / "k.cpp")


# --------------------------------------------------------------------------- deep JSON
@pytest.mark.parametrize("command", ["build", "inspect"])
def test_deeply_nested_functions_json_is_an_error_not_a_crash(bekc, src, command):
    deep = bekc.workdir / "deep.json"
    deep.write_text('{\n  "add_one":\n    ' + deep_json(100_000) + "\n}\n")
    args = [command, src, "--functions", deep] + (
        ["--cache-dir", bekc.cache_dir] if command == "build" else [])
    proc = run(bekc, *args)
    assert proc.returncode != -11, "bekc crashed with SIGSEGV"
    # The file and the line where the nesting goes too deep.
    assert_usage_error(proc, f"{deep}:3: error: JSON nesting deeper than {MAX_DEPTH} levels")
    assert bekc.entries() == []


def test_functions_json_nested_within_the_limit_gets_the_usual_shape_error(bekc, src):
    nested = bekc.workdir / "nested.json"
    nested.write_text('{"add_one": ["arg", ' + deep_json(MAX_DEPTH - 2, '"x"') + "]}")
    proc = run(bekc, "inspect", src, "--functions", nested)
    assert_usage_error(proc, f"{nested}: error: the spec of 'add_one' has a token that is not "
                             "a string")


def test_brackets_inside_json_strings_do_not_count_as_nesting(bekc, src):
    spec = bekc.workdir / "spec.json"
    spec.write_text('{"add_one": ["arg", "ret"], "bad' + "[" * 100 + '": []}')
    proc = run(bekc, "inspect", src, "--functions", spec)
    # Not a nesting error: the name with brackets is refused as an identifier.
    assert_usage_error(proc, f"{spec}: error: function name 'bad[[[")
    assert "nesting" not in proc.stderr


# --------------------------------------------------------------------------- empty values
# Every option of `bekc build` that takes a value: given an empty one it is a
# usage error naming the option, and it never consumes the next argument.
BUILD_VALUE_OPTIONS = {
    "-D": "-D", "-I": "-I", "--cuda-flag": "--cuda-flag", "--cxx-flag": "--cxx-flag",
    "--ldflag": "--ldflag", "--linker-arg": "--linker-arg", "--name": "--name",
    "--target-prefix": "--target-prefix", "--cache-dir": "--cache-dir",
    "-o": "-o/--output-dir", "--output-dir": "-o/--output-dir", "--depfile": "--depfile",
    "--compile-commands": "--compile-commands", "--xla-include": "--xla-include",
    "--nvcc": "--nvcc", "--cxx": "--cxx", "--launcher": "--launcher", "--arch": "--arch",
    "--std": "--std", "--function": "--function", "--functions": "--functions",
    "-j": "-j/--jobs", "--jobs": "-j/--jobs", "-O": "-O",
}


@pytest.mark.parametrize("option", list(BUILD_VALUE_OPTIONS))
def test_build_option_with_an_empty_value_is_a_usage_error(bekc, src, option):
    # `-O0` after the empty value: a bare `-D` or `-I` took it as its value.
    cache = [] if option == "--cache-dir" else ["--cache-dir", bekc.cache_dir]
    proc = run(bekc, "build", src, option, "", FAST, *cache, "--dry-run")
    assert_usage_error(proc, f"bekc: error: {BUILD_VALUE_OPTIONS[option]} needs a non-empty value")
    assert bekc.entries() == []


@pytest.mark.parametrize("option", [o for o in BUILD_VALUE_OPTIONS if o.startswith("--")])
def test_long_option_with_an_empty_equals_value_does_not_take_the_next_argument(bekc, src,
                                                                                 option):
    # CLI11 read `--name= --dry-run` as `--name --dry-run`: the module was named
    # "--dry-run" and the next argument was lost.
    cache = [] if option == "--cache-dir" else ["--cache-dir", bekc.cache_dir]
    proc = run(bekc, "build", src, f"{option}=", "--dry-run", *cache)
    assert_usage_error(proc, f"bekc: error: {BUILD_VALUE_OPTIONS[option]} needs a non-empty "
                             f"value ('{option}=' gives none)")
    assert bekc.entries() == []


@pytest.mark.parametrize("args, needle", [
    (["inspect", "{src}", "--functions", ""], "--functions needs a non-empty value"),
    (["inspect", "{src}", "--functions="], "--functions needs a non-empty value"),
    (["inspect", "{src}", "--function", ""], "--function needs a non-empty value"),
    (["inspect", "{src}", ""], "the inputs argument is an empty string"),
    (["build", "{src}", "", "--cache-dir", "{cache}"], "the inputs argument is an empty string"),
    (["cache", "--cache-dir", "", "path"], "--cache-dir needs a non-empty value"),
    (["cache", "path", "--cache-dir="], "--cache-dir needs a non-empty value"),
    (["cache", "clear", "", "--cache-dir", "{cache}"], "the name argument is an empty string"),
    (["cache", "prune", "--max-size", "", "--cache-dir", "{cache}"],
     "--max-size needs a non-empty value"),
    (["cache", "prune", "--max-size=", "--cache-dir", "{cache}"],
     "--max-size needs a non-empty value"),
    (["doctor", "--cache-dir", ""], "--cache-dir needs a non-empty value"),
])
def test_empty_values_in_other_commands(bekc, src, args, needle):
    argv = [a.format(src=src, cache=bekc.cache_dir) for a in args]
    assert_usage_error(run(bekc, *argv), f"bekc: error: {needle}")


def test_values_that_end_in_equals_are_not_empty(bekc, src):
    # `-D FOO=` defines FOO as empty; `--cxx-flag=-DBAR=` passes -DBAR=.
    proc = build(bekc, src, "-D", "FOO=", "--cxx-flag=-DBAR=", "--name=mod", FAST, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "-DFOO=" in proc.stdout and "-DBAR=" in proc.stdout and "libmod.so" in proc.stdout


def test_empty_remote_cache_still_turns_the_remote_off_without_taking_the_next_argument(
        bekc, src):
    # docs/cache.md: `--remote-cache ""` turns off one set in the environment.
    env = dict(os.environ, BEKC_REMOTE_CACHE="http://127.0.0.1:9/")
    for form in (["--remote-cache", ""], ["--remote-cache="]):
        proc = build(bekc, src, *form, "--dry-run", FAST, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "libk.so" in proc.stdout, "--dry-run was taken as the URL"
    assert bekc.entries() == []


# --------------------------------------------------------------------------- name length
def test_very_long_module_name_is_a_usage_error(bekc, src):
    proc = build(bekc, src, "--name", "a" * 5000, FAST)
    assert_usage_error(proc, "bekc: error: --name 'aaaa", "5000 characters long",
                       f"the limit is {MAX_NAME}")
    assert "File name too long" not in proc.stderr


def test_very_long_target_prefix_is_a_usage_error(bekc, src):
    proc = build(bekc, src, "--target-prefix", "p" * 5000, FAST)
    assert_usage_error(proc, "bekc: error: --target-prefix 'pppp", "5000 characters long",
                       f"the limit is {MAX_NAME}")


def test_module_name_at_the_limit_is_accepted(bekc, src):
    name = "m" * MAX_NAME
    proc = build(bekc, src, "--name", name, "--target-prefix", "t" * MAX_NAME, FAST,
                 "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert f"lib{name}.so" in proc.stdout
    assert_usage_error(build(bekc, src, "--name", name + "m", FAST, "--dry-run"),
                       f"{MAX_NAME + 1} characters long")


def test_module_name_from_a_long_file_name_is_a_usage_error(bekc, kernels):
    long_src = kernels.cpp(bekc.workdir / ("s" * 240 + ".cpp"))
    proc = build(bekc, long_src, FAST)
    assert_usage_error(proc, "first input's stem", "--name")


def test_help_states_the_name_limit(bekc):
    out = run(bekc, "build", "--help").stdout
    assert f"at most {MAX_NAME}" in " ".join(out.split())


def test_help_says_what_name_and_target_prefix_take_and_it_is_taken(bekc, src):
    """--name and --target-prefix take any name brainevent takes, as --help
    says, and the library's file name is the name with the other bytes as '_'."""
    out = " ".join(run(bekc, "build", "--help").stdout.split())
    assert "identifier" not in out
    assert ("--name TEXT Module name, any name brainevent takes (e.g. my-kernels): at most "
            f"{MAX_NAME} characters, no '/', no control character, not '.' or '..'; the "
            "library is lib<name>.so with bytes other than ASCII letters, digits and '_.+-' "
            "written as '_'") in out
    assert ("--target-prefix TEXT Prefix of the FFI target names, '<prefix>.<function>': any "
            f"text without a control character, at most {MAX_NAME} characters") in out
    proc = build(bekc, src, "--name", "my kernels+1", "--target-prefix", "my-kernels v2",
                 FAST, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "libmy_kernels+1.so" in proc.stdout


# --------------------------------------------------------------------------- not regular files
@pytest.fixture
def fifo(bekc) -> Path:
    path = bekc.workdir / "fifo.cpp"
    os.mkfifo(path)
    return path


def test_fifo_input_is_refused_without_waiting(bekc, fifo):
    for command in (["build", "--cache-dir", bekc.cache_dir], ["inspect"]):
        proc = run(bekc, command[0], fifo, *command[1:])
        assert_usage_error(proc, f"{fifo}: error: not a regular file (it is a FIFO)")


def test_device_input_is_refused(bekc):
    zero_cpp = bekc.workdir / "zero.cpp"
    zero_cpp.symlink_to("/dev/zero")  # looks like a source, is a device
    for path in ("/dev/zero", zero_cpp):
        proc = build(bekc, path, FAST)
        assert_usage_error(proc, f"{path}: error: not a regular file (it is a device)")


@pytest.mark.parametrize("what", ["fifo", "/dev/zero", "directory"])
def test_functions_file_that_is_not_a_regular_file(bekc, src, fifo, what):
    path = {"fifo": fifo, "/dev/zero": Path("/dev/zero"), "directory": bekc.workdir}[what]
    kind = {"fifo": "a FIFO", "/dev/zero": "a device", "directory": "a directory"}[what]
    for command in (["build", "--cache-dir", bekc.cache_dir], ["inspect"]):
        proc = run(bekc, command[0], src, "--functions", path, *command[1:])
        assert_usage_error(proc, f"bekc: error: --functions: cannot read {path}: it is {kind}")


def test_compile_commands_fifo_is_refused_and_left_alone(bekc, src, fifo):
    proc = build(bekc, src, FAST, "--compile-commands", fifo)
    assert_usage_error(proc, f"--compile-commands: cannot read {fifo}: it is a FIFO")
    assert fifo.is_fifo()


@pytest.fixture
def null_device(bekc):
    """A stand-in for /dev/null: the same character device (1, 3), made in the
    test's directory, so a bekc that replaced it would not break the machine."""
    path = bekc.workdir / "null"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device needs root")
    return path


@pytest.mark.parametrize("what", ["device", "link to a device", "fifo", "directory"])
def test_depfile_that_is_not_a_regular_file_is_refused_and_left_alone(bekc, src, fifo, what,
                                                                      request):
    """--depfile replaced FILE by rename, whatever it was: as root,
    `--depfile /dev/null` replaced the machine's /dev/null by a regular file."""
    if what == "device":
        path, kind = request.getfixturevalue("null_device"), "a device"
    elif what == "link to a device":
        path, kind = bekc.workdir / "null-link.d", "a device"
        path.symlink_to(request.getfixturevalue("null_device"))
    elif what == "fifo":
        path, kind = fifo, "a FIFO"
    else:
        path, kind = bekc.workdir, "a directory"
    before = os.stat(path)
    proc = build(bekc, src, FAST, "--depfile", path)
    assert_usage_error(
        proc, f"bekc: error: --depfile: {path} is not a regular file (it is {kind}), and bekc "
        "writes only regular files there; name a regular file")
    after = os.stat(path)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino,
                                                            before.st_rdev)
    if what == "link to a device":
        assert path.is_symlink()


# --------------------------------------------------------------------------- standard output
@pytest.mark.parametrize("args", [
    ["build", "{src}", FAST, "--cache-dir", "{cache}"],
    ["build", "{src}", FAST, "--cache-dir", "{cache}", "--json"],
    ["build", "{src}", FAST, "--cache-dir", "{cache}", "--dry-run"],
    ["inspect", "{src}"],
    ["inspect", "{src}", "--json"],
    ["cache", "path", "--cache-dir", "{cache}"],
    ["--version"],
    ["build", "--help"],
])
def test_unwritable_standard_output_exits_4(bekc, src, args):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    argv = [a.format(src=src, cache=bekc.cache_dir) for a in args]
    with open("/dev/full", "w") as full:
        proc = run(bekc, *argv, stdout=full)
    assert proc.returncode == 4, proc.stderr
    assert "bekc: error: cannot write standard output: No space left on device" in proc.stderr


# --------------------------------------------------------------------------- compile_commands
MALFORMED_DATABASES = {
    "object": ('{"file": "/other.cpp"}', "not a compilation database: a JSON array of entries "
                                         "was expected, the file holds an object"),
    "entry not an object": ('[{"file": "/other.cpp", "arguments": ["cc"]}, "x"]',
                            "not a compilation database: entry 2 is a string, not an object"),
    "not JSON": ('[{"file": "/other.cpp",]', "not valid JSON: parse error at line 1"),
    "deep": ("[\n" + deep_json(100_000) + "\n]", ":2: error: JSON nesting deeper than 64 levels"),
}


@pytest.mark.parametrize("case", list(MALFORMED_DATABASES))
def test_malformed_compile_commands_is_refused_and_left_unchanged(bekc, src, case):
    text, why = MALFORMED_DATABASES[case]
    cc = bekc.workdir / "compile_commands.json"
    cc.write_text(text)
    before = cc.stat()
    proc = build(bekc, src, FAST, "--compile-commands", cc)
    assert proc.returncode != -11, "bekc crashed with SIGSEGV"
    assert_usage_error(proc, str(cc), why, "--compile-commands leaves it unchanged")
    assert cc.read_text() == text
    assert cc.stat().st_ino == before.st_ino, "the file was replaced"
    assert bekc.entries() == []


def test_empty_compile_commands_file_is_filled(bekc, src):
    cc = bekc.workdir / "compile_commands.json"
    cc.write_text("")
    proc = build(bekc, src, FAST, "--compile-commands", cc)
    assert proc.returncode == 0, proc.stderr
    assert [e["file"] for e in json.loads(cc.read_text())] == [str(src)]
