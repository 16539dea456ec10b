"""The manifest a ``bekc build`` writes, as the loader reads it: found, read
(only a regular file of bounded size), parsed and checked field by field, so
that nothing later trusts a value it has not checked (docs/manifest.md,
"What the loader checks"). Failures are :class:`~bekc.ManifestError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from typing import Dict, List, Tuple

from ._attrs import ATTR_TYPES
from ._errors import ManifestError
from ._version import __version__

SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"
# A manifest is a few KiB per target; a file larger than this is not one, and
# is refused before it is read (see docs/manifest.md, "What the loader checks").
MAX_MANIFEST_BYTES = 16 << 20
# The handler symbols bekc generates for function F (lib/codegen/wrapper.cpp:
# handler_symbol, handler_symbol_nograph); a manifest may name no others.
SYMBOL_PREFIX = "bekc_ffi_"
NOGRAPH_SUFFIX = "_nograph"
PLATFORMS = ("CUDA", "cpu")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# `bekc build --target-prefix`'s rule: any text without a control character
# (brainevent takes any module name, "my-kernels" included).
_TARGET_PREFIX = re.compile(r"[^\x00-\x1f\x7f]+")
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
_ATTR_TOKEN = re.compile(r"attr\.([A-Za-z_][A-Za-z0-9_]*):([a-z0-9]+)")
_SPEC_WORDS = frozenset(("arg", "ret", "stream"))
# Files are opened without blocking (a FIFO), without becoming a controlling
# terminal, and closed on exec.
OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
              | getattr(os, "O_CLOEXEC", 0))


def stat_sig(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def resolve_manifest_path(manifest_or_dir) -> str:
    path = os.path.abspath(os.fspath(manifest_or_dir))
    if os.path.isdir(path):
        path = os.path.join(path, MANIFEST_NAME)
    return path


def file_kind(st: os.stat_result) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(st.st_mode):
            return kind
    return "not a regular file"


def _require_regular(st: os.stat_result, what: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise ManifestError(f"{what} is {file_kind(st)}, not a regular file")


def _read_manifest_bytes(path: str) -> Tuple[bytes, os.stat_result]:
    """The manifest's bytes and the fstat of the file they were read from.

    Only a regular file of at most MAX_MANIFEST_BYTES is read: a FIFO,
    /dev/zero or a directory passed as the manifest neither blocks nor fills
    memory. It is checked with stat before it is opened (so no device is
    opened) and with fstat after (in case it was swapped in between).
    """
    what = f"bekc manifest {path}"
    try:
        before = os.stat(path)
    except FileNotFoundError:
        raise ManifestError(f"bekc manifest not found: {path}") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise ManifestError(f"cannot read bekc manifest {path}: {e}") from None
    _require_regular(before, what)
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError as e:
        raise ManifestError(f"cannot read bekc manifest {path}: {e}") from None
    try:
        st = os.fstat(fd)
        _require_regular(st, what)
        limit = f"a bekc manifest is at most {MAX_MANIFEST_BYTES >> 20} MiB"
        if st.st_size > MAX_MANIFEST_BYTES:
            raise ManifestError(f"{what} is {st.st_size} bytes: {limit}")
        # Sized from fstat (a 1 MiB buffer per read costs an mmap), at least a
        # page for files that report no size (procfs).
        step = max(st.st_size + 1, 4096)
        chunks, left = [], MAX_MANIFEST_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, step))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:  # the file grew past the limit while being read
            raise ManifestError(f"{what} is over {MAX_MANIFEST_BYTES} bytes: {limit}")
    except OSError as e:
        raise ManifestError(f"cannot read bekc manifest {path}: {e}") from None
    finally:
        os.close(fd)
    return b"".join(chunks), st


def read_manifest(path: str) -> Tuple[dict, os.stat_result]:
    data, st = _read_manifest_bytes(path)
    try:
        manifest = json.loads(data)
    except RecursionError:
        raise ManifestError(f"{path} is not a bekc manifest: its JSON is nested too deeply "
                            f"to be read") from None
    except ValueError as e:  # also UnicodeDecodeError
        raise ManifestError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(manifest, dict):
        raise ManifestError(f"{path}: a bekc manifest is a JSON object, got {_json_type(manifest)}")
    schema = manifest.get("schema")
    # type() is int, not isinstance: JSON true is a Python int too.
    if type(schema) is not int or schema != SCHEMA_VERSION:
        raise ManifestError(
            f"{path}: unsupported manifest schema {schema!r}; this loader (bekc "
            f"{__version__}) reads schema {SCHEMA_VERSION}. Rebuild with a matching "
            f"`bekc build`, or install the bekc Python package that ships with that binary.")
    _validate(manifest, path)
    return manifest, st


_JSON_TYPES = {bool: "true/false", int: "an integer", float: "a number", str: "a string",
               list: "an array", dict: "an object", type(None): "null"}


def _json_type(value) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _got(value) -> str:
    """``value`` for an error message: its JSON type and a short repr."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{_json_type(value)} ({text})"


def bad_field(path: str, field: str, problem: str) -> ManifestError:
    return ManifestError(f"{path}: '{field}' {problem}")


def _is_count(value) -> bool:
    return type(value) is int and value >= 0  # not bool: JSON true is no count


def _check_library_name(library, path: str) -> None:
    """``library`` must name a file in the manifest's own directory: a plain name."""
    if not isinstance(library, str) or not library:
        raise bad_field(path, "library", f"must be a non-empty string, got {_got(library)}")
    if "/" in library or "\0" in library or library in (".", ".."):
        raise bad_field(path, "library",
                   f"must be a plain file name in the manifest's own directory (no '/', not "
                   f"'.' or '..', no NUL), got {library!r}: bekc writes the library next to "
                   f"its manifest, and the loader opens nothing else")


def _validate(manifest: dict, path: str) -> None:
    """Check the type and range of every field the loader reads (ManifestError)."""
    for field in ("name", "library", "library_sha256", "targets"):
        if field not in manifest:
            raise ManifestError(f"{path}: manifest has no '{field}' field")
    name = manifest["name"]
    if not isinstance(name, str) or not name:
        raise bad_field(path, "name", f"must be a non-empty string, got {_got(name)}")
    key = manifest.get("key")
    if key is not None and not isinstance(key, str):
        raise bad_field(path, "key", f"must be a string (the cache key), got {_got(key)}")
    _check_library_name(manifest["library"], path)
    sha = manifest["library_sha256"]
    if not (isinstance(sha, str) and _SHA256_HEX.fullmatch(sha)):
        raise bad_field(path, "library_sha256", f"must be 64 hex digits, got {_got(sha)}")
    targets = manifest["targets"]
    if not isinstance(targets, list):
        raise bad_field(path, "targets", f"must be an array, got {_got(targets)}")
    seen: Dict[str, set] = {"name": set(), "function": set(), "symbol": set()}
    for i, t in enumerate(targets):
        _validate_target(t, i, path)
        for field, names in seen.items():
            if t[field] in names:
                raise bad_field(path, f"targets[{i}].{field}", f"{t[field]!r} appears twice")
            names.add(t[field])


_TARGET_FIELDS = ("name", "symbol", "function", "platform", "num_args", "num_rets")
_TARGET_FIELD_SET = frozenset(_TARGET_FIELDS)


# Field paths in messages are formatted only when a check fails: this runs for
# every target of every manifest read (hundreds in one library).
def _validate_target(t, i: int, path: str) -> None:
    if not isinstance(t, dict):
        raise bad_field(path, f"targets[{i}]", f"must be an object, got {_got(t)}")
    if not t.keys() >= _TARGET_FIELD_SET:
        field = next(f for f in _TARGET_FIELDS if f not in t)
        raise ManifestError(f"{path}: targets[{i}] has no '{field}' field")
    fn = t["function"]
    if not (isinstance(fn, str) and _IDENTIFIER.fullmatch(fn)):
        raise bad_field(path, f"targets[{i}].function",
                   f"must be an ASCII C++ identifier, got {_got(fn)}")
    name = t["name"]
    if not (isinstance(name, str) and name.endswith("." + fn)
            and _TARGET_PREFIX.fullmatch(name, 0, len(name) - len(fn) - 1)):
        raise bad_field(path, f"targets[{i}].name",
                   f"must be '<target_prefix>.{fn}' (a prefix without control characters), "
                   f"got {_got(name)}")
    symbol = t["symbol"]
    handler = SYMBOL_PREFIX + fn
    if not (isinstance(symbol, str) and (symbol == handler or symbol == handler + NOGRAPH_SUFFIX)):
        raise bad_field(path, f"targets[{i}].symbol",
                   f"must be '{handler}' or '{handler}{NOGRAPH_SUFFIX}', the handlers bekc "
                   f"generates for function '{fn}'; got {_got(symbol)}")
    platform = t["platform"]
    if not (isinstance(platform, str) and platform in PLATFORMS):
        raise bad_field(path, f"targets[{i}].platform",
                   f"must be one of {', '.join(map(repr, PLATFORMS))}, got {_got(platform)}")
    for field in ("num_args", "num_rets"):
        if not _is_count(t[field]):
            raise bad_field(path, f"targets[{i}].{field}",
                       f"must be a non-negative integer, got {_got(t[field])}")
    spec_attrs = _validate_arg_spec(t, i, path) if "arg_spec" in t else []
    attrs = t.setdefault("attrs", spec_attrs)
    if attrs is spec_attrs:
        return  # taken from arg_spec, which was checked
    if not isinstance(attrs, list):
        raise bad_field(path, f"targets[{i}].attrs", f"must be an array of objects, got {_got(attrs)}")
    names = set()
    for j, a in enumerate(attrs):
        if not (isinstance(a, dict) and "name" in a and "type" in a):
            raise bad_field(path, f"targets[{i}].attrs[{j}]",
                       f"is a malformed attr entry {_got(a)}: it must be "
                       f"{{\"name\": ..., \"type\": ...}}")
        if not (isinstance(a["name"], str) and _IDENTIFIER.fullmatch(a["name"])):
            raise bad_field(path, f"targets[{i}].attrs[{j}].name",
                       f"must be an identifier, got {_got(a['name'])}")
        if not (isinstance(a["type"], str) and a["type"] in ATTR_TYPES):
            raise bad_field(path, f"targets[{i}].attrs[{j}].type",
                       f"of target {name!r} attribute {a['name']!r} has unknown type "
                       f"{a['type']!r} (known: {', '.join(sorted(ATTR_TYPES))})")
        if a["name"] in names:
            raise bad_field(path, f"targets[{i}].attrs[{j}].name", f"{a['name']!r} appears twice")
        names.add(a["name"])
    if "arg_spec" in t and attrs != spec_attrs and [(a["name"], a["type"]) for a in attrs] != [
            (a["name"], a["type"]) for a in spec_attrs]:
        raise bad_field(path, f"targets[{i}].attrs",
                   "does not match the attr.<name>:<type> tokens of its arg_spec")


def _validate_arg_spec(t: dict, i: int, path: str) -> List[dict]:
    """Check ``arg_spec`` against ``num_args``/``num_rets``; returns its attributes."""
    spec = t["arg_spec"]
    if not isinstance(spec, list):
        raise bad_field(path, f"targets[{i}].arg_spec", f"must be an array of strings, got {_got(spec)}")
    attrs = []
    for j, tok in enumerate(spec):
        if isinstance(tok, str) and tok in _SPEC_WORDS:
            continue
        m = _ATTR_TOKEN.fullmatch(tok) if isinstance(tok, str) else None
        if m is None:
            raise bad_field(path, f"targets[{i}].arg_spec[{j}]",
                       f"must be 'arg', 'ret', 'stream' or 'attr.<name>:<type>', got {_got(tok)}")
        if m.group(2) not in ATTR_TYPES:
            raise bad_field(path, f"targets[{i}].arg_spec[{j}]",
                       f"has unknown attribute type {m.group(2)!r} (known: "
                       f"{', '.join(sorted(ATTR_TYPES))})")
        attrs.append({"name": m.group(1), "type": m.group(2)})
    for field, word in (("num_args", "arg"), ("num_rets", "ret")):
        n = spec.count(word)
        if n != t[field]:
            raise bad_field(path, f"targets[{i}].{field}",
                       f"is {t[field]}, but arg_spec has {n} '{word}' tokens")
    if len({a["name"] for a in attrs}) != len(attrs):
        raise bad_field(path, f"targets[{i}].arg_spec", "names an attribute twice")
    return attrs


def target_signature(manifest: dict) -> tuple:
    """What a module registers: its (target, symbol, platform) triples."""
    return tuple(sorted((t["name"], t["symbol"], t["platform"]) for t in manifest["targets"]))


def sha256_fd(fd: int, size: int = 1 << 18) -> str:
    """SHA-256 of what is left to read from the open file ``fd``: read into one
    buffer, used again for every chunk (a library is hashed at each load, so
    no chunk is copied into a new bytes object). ``size``, the file's size
    where known, sizes that buffer: a buffer larger than the file costs a
    page fault per untouched page, more than hashing a small library."""
    h = hashlib.sha256()
    buf = bytearray(min(max(size + 1, 4096), 1 << 18))
    view = memoryview(buf)
    while True:
        n = os.readv(fd, [buf])
        if not n:
            break
        h.update(view[:n])
    return h.hexdigest()
