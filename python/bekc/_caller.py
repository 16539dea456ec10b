"""The user's line that called into bekc: the first frame outside this package.

Warnings bekc raises and the errors of inline sources name it, so that they
point at the user's call however deep the loader's own calls go (a loader
reached through ``use_for_brainevent``'s stand-ins included).
"""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Optional, Tuple

__all__ = ["outside_frame", "caller_stacklevel", "caller_location"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _in_package(frame: FrameType) -> bool:
    return os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR)


def outside_frame(depth: int = 1) -> Tuple[Optional[FrameType], int]:
    """The first frame outside bekc above the caller's ``depth``-th frame
    (1: the function calling this one), and its ``warnings.warn`` stacklevel
    counted from that function; ``(None, level)`` when every frame is bekc's."""
    frame = sys._getframe(depth)
    level = 1
    while frame is not None and _in_package(frame):
        frame = frame.f_back
        level += 1
    return frame, level


def caller_stacklevel() -> int:
    """``warnings.warn``'s stacklevel, for the function calling this one, that
    names the user's line."""
    return outside_frame(2)[1]


def caller_location() -> Optional[Tuple[str, int]]:
    """(file, line) of the user's call into bekc, or None."""
    frame, _ = outside_frame(2)
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else None
