"""Whether one function accepts every call that another accepts, from their signatures.

``bekc.use_for_brainevent()`` puts bekc's loaders where brainevent's were, so
every call brainevent's code makes must mean the same to bekc's. Here that is
decided from the parameters themselves: names, how each may be passed
(position or keyword), defaults, ``*args`` and ``**kwargs``. Annotations are
left out, since they change nothing at run time (brainevent writes
``str | Path`` where bekc writes nothing).
"""

from __future__ import annotations

import inspect
from typing import Callable, List, Optional

__all__ = ["differences"]

_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
_VARIADIC = {_P.VAR_POSITIONAL: "*", _P.VAR_KEYWORD: "**"}


def _same_default(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - a default whose == is not a truth value differs
        return False


def _default_text(default) -> str:
    return "is required" if default is _P.empty else f"defaults to {default!r}"


def _positions(sig: inspect.Signature) -> List[str]:
    return [n for n, p in sig.parameters.items() if p.kind in _POSITIONAL]


def _parameter_difference(where: str, p: _P, q: Optional[_P], their_pos: List[str],
                          our_pos: List[str]) -> Optional[str]:
    """How bekc's parameter ``q`` treats a call that passes brainevent's ``p``
    differently; None when it treats it the same."""
    if q is None or q.kind in _VARIADIC:
        return f"{where} is brainevent's, not bekc's"
    if p.kind in _POSITIONAL:
        i = their_pos.index(p.name)
        j = our_pos.index(p.name) if p.name in our_pos else None
        if i != j:
            ours = f"{j + 1} in bekc" if j is not None else "keyword-only in bekc"
            return f"{where} is positional argument {i + 1} in brainevent, {ours}"
    if p.kind is not _P.POSITIONAL_ONLY and q.kind is _P.POSITIONAL_ONLY:
        return f"{where} can be passed by keyword in brainevent, not in bekc"
    if not _same_default(p.default, q.default):
        return (f"{where} {_default_text(p.default)} in brainevent, "
                f"{_default_text(q.default)} in bekc")
    return None


def differences(name: str, theirs: Callable, ours: Callable) -> List[str]:
    """Each way in which ``ours`` (bekc's ``name``) would take a call to
    ``theirs`` (brainevent's) differently, one sentence each; empty when none.

    A parameter of brainevent's must be bekc's too, passed the same ways, at
    the same position, with the same default; ``*args`` and ``**kwargs`` must
    be on both sides. bekc may have more parameters if each has a default.
    """
    try:
        their_sig = inspect.signature(theirs)
    except (TypeError, ValueError) as e:
        return [f"{name}(): its parameters cannot be read ({e})"]
    our_sig = inspect.signature(ours)
    mine = our_sig.parameters
    their_pos, our_pos = _positions(their_sig), _positions(our_sig)
    found: List[str] = []
    for pname, p in their_sig.parameters.items():
        if p.kind in _VARIADIC:
            if not any(q.kind is p.kind for q in mine.values()):
                found.append(f"{name}(): brainevent's takes {_VARIADIC[p.kind]}{pname}, "
                             f"bekc's does not")
            continue
        diff = _parameter_difference(f"{name}(): parameter '{pname}'", p, mine.get(pname),
                                     their_pos, our_pos)
        if diff is not None:
            found.append(diff)
    for qname, q in mine.items():
        if q.kind not in _VARIADIC and q.default is _P.empty and qname not in their_sig.parameters:
            found.append(f"{name}(): parameter '{qname}' is required by bekc's, "
                         f"and brainevent's has none of that name")
    return found
