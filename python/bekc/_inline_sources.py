"""The files inline sources are compiled from: ``<cache>/src/<sha256 of the
source>/<name>.cu`` (``.cpp`` for C++), written once and atomically, never
through a link (the cache may be shared), and removed by ``clear_cache``
with nothing else of the cache directory.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from typing import List, Optional

# bekc's inline sources: <cache>/src/<sha256 of the text>/<stem>.cu|.cpp, and
# the temporaries ensure_source_file writes beside them.
_INLINE_DIR_NAME = re.compile(r"[0-9a-f]{64}")
_INLINE_FILE_NAME = re.compile(r"(?:[A-Za-z0-9_+][A-Za-z0-9_.+-]*|\.tmp-\d+-[0-9a-f]{16})"
                               r"\.(?:cu|cpp)")


def remove_inline_sources(cache: str, name: Optional[str]) -> None:
    """Removes the inline sources under <cache>/src: only names bekc writes
    there (a project's own src/ in a directory used as the cache stays), never
    following a link. With `name`, only that module's files."""
    try:
        root = open_dir_nofollow(cache, ["src"], create=False)
    except OSError:
        return  # missing, or a link: not ours to walk
    safe = safe_file_stem(name) if name is not None else None
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
            cache = open_dir_nofollow(cache, [], create=False)
        except OSError:
            return
        try:
            os.rmdir("src", dir_fd=cache)
        except OSError:
            pass
        finally:
            os.close(cache)



# The characters a file stem keeps; every other one becomes '_'. A set, not
# a regular expression: compiling one cost a warm load 0.1 ms.
_STEM_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-")


def safe_file_stem(name: str) -> str:
    stem = "".join(c if c in _STEM_CHARS else "_" for c in name).lstrip(".-")
    return stem or "module"


def join_sources(sources) -> str:
    if isinstance(sources, (list, tuple)):
        return "\n\n".join(sources)
    if not isinstance(sources, str):
        raise TypeError(f"sources must be a string or a list of strings, got {type(sources).__name__}")
    return sources


def inline_source_path(cache: str, text: str, name: str, ext: str) -> str:
    """<cache>/src/<sha256 of the text>/<name, made a safe file stem><ext>."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return os.path.join(cache, "src", sha, safe_file_stem(name) + ext)


def cache_of(path: str) -> str:
    """The cache an inline_source_path() is in."""
    return os.path.dirname(os.path.dirname(os.path.dirname(path)))


def holds(cache: str, path: str, text: str) -> bool:
    """Whether the inline source ``path`` below ``cache`` holds ``text``
    (read without following a link)."""
    data = text.encode("utf-8")
    rel = os.path.relpath(path, cache).split(os.sep)
    try:
        d = open_dir_nofollow(cache, rel[:-1], create=False)
    except OSError:
        return False
    try:
        return _read_regular_at(d, rel[-1], len(data)) == data
    finally:
        os.close(d)


def open_dir_nofollow(root: str, parts: List[str], create: bool) -> int:
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


def ensure_source_file(root: str, path: str, text: str) -> None:
    """Writes ``text`` at ``path`` below the cache ``root`` (atomically, no
    component a link) unless the file already holds exactly it."""
    if holds(root, path, text):
        return
    data = text.encode("utf-8")
    rel = os.path.relpath(path, root).split(os.sep)
    d = open_dir_nofollow(root, rel[:-1], create=True)
    try:
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
