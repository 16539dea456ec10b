"""Launch configurations of Numba-CUDA kernels: ``grid`` and ``block``, or
``launch_dims``, read as brainevent reads them and checked against CUDA's
limits (:func:`resolve_launch`)."""

from __future__ import annotations

import math
from typing import Tuple

__all__ = ["resolve_launch"]

# CUDA limits on launch dimensions.
_MAX_GRID = (2**31 - 1, 65535, 65535)
_MAX_BLOCK = (1024, 1024, 64)
_MAX_THREADS_PER_BLOCK = 1024


def _dims(value, what: str, allow_zero: bool = False) -> Tuple[int, ...]:
    if getattr(value, "ndim", 0) >= 1 and hasattr(value, "tolist"):
        value = value.tolist()  # a NumPy array of sizes
    dims = (value,) if hasattr(value, "__index__") else value
    try:
        if any(isinstance(d, bool) for d in dims):
            raise TypeError
        dims = tuple(int(d.__index__()) for d in dims)
    except (AttributeError, TypeError):
        raise ValueError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}") from None
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{what} must have 1 to 3 dimensions, got {len(dims)}: {value!r}")
    if allow_zero and any(d < 0 for d in dims):
        raise ValueError(f"{what} must be non-negative in every dimension, got {value!r}")
    if not allow_zero and any(d <= 0 for d in dims):
        raise ValueError(f"{what} must be positive in every dimension, got {value!r}")
    return dims


def _pad3(dims: Tuple[int, ...]) -> Tuple[int, int, int]:
    return tuple(dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


def _check_forms(grid, block, launch_dims) -> bool:
    """Which form a launch configuration takes (True: grid and block), in the
    order brainevent checks them; ValueError for a mix or for neither."""
    explicit = grid is not None or block is not None
    if explicit and launch_dims is not None:
        raise ValueError("pass either grid and block, or launch_dims, not both")
    if explicit and (grid is None or block is None):
        missing = "block" if block is None else "grid"
        raise ValueError(f"grid and block go together: {missing} is missing")
    if not explicit and launch_dims is None:
        raise ValueError("a launch configuration is needed: pass grid and block, or launch_dims "
                         "(the number of threads to launch)")
    return explicit


def resolve_launch(grid=None, block=None, launch_dims=None,
                   threads_per_block: int = 256) -> Tuple[Tuple[int, int, int], Tuple[int, int, int]]:
    """The (grid, block) a launch configuration gives, as 3-tuples.

    Either ``grid`` and ``block`` together, or ``launch_dims``: the number of
    threads per dimension. With ``launch_dims`` the block is
    ``threads_per_block`` threads for a 1-D launch, ``(s, s)`` with
    ``s = isqrt(threads_per_block)`` for 2-D (16x16 by default) and
    ``(8, 8, threads_per_block // 64)`` for 3-D (8x8x4 by default); the grid
    is the ceiling of each dimension over the block's. A ``launch_dims`` of 0
    in some dimension gives a grid of 0 there: an empty launch, which
    :func:`numba_cuda_kernel` skips.
    """
    if _check_forms(grid, block, launch_dims):
        g, b = _dims(grid, "grid"), _dims(block, "block")
    else:
        n = _dims(launch_dims, "launch_dims", allow_zero=True)
        try:
            if isinstance(threads_per_block, bool):
                raise TypeError
            tpb = threads_per_block.__index__()
        except (AttributeError, TypeError):
            raise ValueError(f"threads_per_block must be an int, got {threads_per_block!r}") from None
        if not 1 <= tpb <= _MAX_THREADS_PER_BLOCK:
            raise ValueError(f"threads_per_block must be 1 to {_MAX_THREADS_PER_BLOCK}, got "
                             f"{threads_per_block!r}")
        if len(n) == 1:
            b = (tpb,)
        elif len(n) == 2:
            side = max(1, math.isqrt(tpb))
            b = (side, side)
        else:
            b = (8, 8, max(1, tpb // 64)) if tpb >= 64 else (tpb, 1, 1)
        g = tuple(-(-d // s) for d, s in zip(n, b))
    g3, b3 = _pad3(g), _pad3(b)
    for i, axis in enumerate("xyz"):
        if g3[i] > _MAX_GRID[i]:
            raise ValueError(f"grid {axis} is {g3[i]}, more than CUDA's {_MAX_GRID[i]}")
        if b3[i] > _MAX_BLOCK[i]:
            raise ValueError(f"block {axis} is {b3[i]}, more than CUDA's {_MAX_BLOCK[i]}")
    if b3[0] * b3[1] * b3[2] > _MAX_THREADS_PER_BLOCK:
        raise ValueError(f"block {b3} has {b3[0] * b3[1] * b3[2]} threads; CUDA allows at most "
                         f"{_MAX_THREADS_PER_BLOCK}")
    return g3, b3
