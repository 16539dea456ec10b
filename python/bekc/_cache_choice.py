"""The cache directory, as the bekc binary chooses it: ``--cache-dir``, else
``$BEKC_CACHE_DIR``, else ``cache_dir`` in bekc.conf, else the default, and
the cache a miss builds into when that one is a bekc cache this user cannot
write (lib/config/cache_choice). The package keeps no copy of that rule: it
asks the lookup library in this process (``_lookup.py``), else the binary
(``bekc config --json``), once per process for each value of the variables
the answer read (a bekc.conf edited while the process runs is not seen).
"""

from __future__ import annotations

import collections
import json
import os
import threading
from typing import Dict, Optional, Tuple

from . import _lookup
from ._errors import BekcError
from ._run import run_bekc

__all__ = ["CacheChoice", "cache_choice"]


# ``dir``: the cache the commands name (``bekc cache path``); ``own``: the one
# a miss builds into; ``demoted``: ``dir`` when it is a bekc cache this user
# cannot write (``own`` is then the default cache), else None. (A
# collections.namedtuple: cheaper to make on import than a typing.NamedTuple.)
CacheChoice = collections.namedtuple("CacheChoice", ("dir", "own", "demoted"))


_LOCK = threading.Lock()
# (binary, --cache-dir, working directory) -> (the variables the answer read,
# their values then, the answer).
_MEMO: Dict[Tuple[str, Optional[str], str], Tuple[Tuple[str, ...], Tuple, tuple]] = {}


def _values(variables: Tuple[str, ...]) -> Tuple:
    return tuple(os.environ.get(v) for v in variables)


def _checked(cache: object, whose: str, printed: object) -> dict:
    """`cache` when it names the directories a choice holds, else the
    BekcError that says whose answer it was."""
    if (isinstance(cache, dict) and isinstance(cache.get("dir"), str)
            and isinstance(cache.get("own"), str)):
        return cache
    raise BekcError(f"{whose} names no cache directory (it answered {printed!r}): is that "
                    f"bekc older than this Python package? Install the bekc binary, and "
                    f"libbekc_lookup.so, that ship with it.")


def _ask(binary: str, cache_dir_flag: Optional[str], spawn: bool) -> Optional[dict]:
    text = _lookup.cache_choice(binary, cache_dir_flag)
    if text is not None:
        whose = f"the lookup library's cache choice for {binary}"
        try:
            return _checked(json.loads(text), whose, text)
        except ValueError:
            return _checked(None, whose, text)
    if not spawn:
        return None
    flag = [f"--cache-dir={cache_dir_flag}"] if cache_dir_flag is not None else []
    answer = run_bekc([binary, "config", "--json"] + flag)
    cache = answer.get("cache") if isinstance(answer, dict) else None
    return _checked(cache, f"{binary} config --json", answer)


def _key(binary: str, cache_dir_flag: Optional[str]) -> tuple:
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    return (binary, cache_dir_flag, cwd)


def _remember(key: tuple, cache: dict) -> "CacheChoice":
    choice = CacheChoice(cache["dir"], cache["own"], cache.get("demoted"))
    variables = tuple(cache.get("variables", ()))
    _MEMO[key] = (variables, _values(variables), choice)
    return choice


def cache_choice(binary: str, cache_dir_flag: Optional[str] = None) -> "CacheChoice":
    """The caches ``binary`` uses with ``--cache-dir=cache_dir_flag`` (None:
    no flag) in this process's environment."""
    key = _key(binary, cache_dir_flag)
    kept = _MEMO.get(key)
    if kept is not None and _values(kept[0]) == kept[1]:
        return kept[2]
    with _LOCK:
        return _remember(key, _ask(binary, cache_dir_flag, spawn=True))


def prime(binary: str, cache_dir_flag: Optional[str] = None) -> None:
    """Asks the lookup library now, so that the first load need not; starts
    no process (without a library the first load asks the binary). Never
    raises."""
    try:
        key = _key(binary, cache_dir_flag)
        if key not in _MEMO:
            with _LOCK:
                cache = _ask(binary, cache_dir_flag, spawn=False)
                if cache is not None:
                    _remember(key, cache)
    except Exception:  # a bekc.conf with errors, an odd answer: the load asks again
        pass
