"""Where bekc's CMake package is, for ``find_package(bekc)``: what
``bekc.get_cmake_dir()`` and ``python -m bekc --cmakedir`` print."""

from __future__ import annotations

import os

from ._errors import BekcError

__all__ = ["get_cmake_dir"]

CONFIG = "bekcConfig.cmake"


def _candidates():
    """The package's own ``share/cmake/bekc`` (the pip wheel:
    cmake/wheel.cmake), then ``<prefix>/lib/cmake/bekc`` of a ``cmake
    --install`` tree, whose package is ``<prefix>/lib/bekc/python/bekc``."""
    package = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(package, "share", "cmake", "bekc")
    lib = os.path.dirname(os.path.dirname(os.path.dirname(package)))
    if os.path.relpath(package, lib) == os.path.join("bekc", "python", "bekc"):
        yield os.path.join(lib, "cmake", "bekc")


def get_cmake_dir() -> str:
    """The directory that holds bekc's ``bekcConfig.cmake``, for
    ``-Dbekc_DIR=...`` or ``CMAKE_PREFIX_PATH``. The package found there uses
    the ``bekc`` binary installed with this package. Raises
    :class:`~bekc.BekcError` for a package that was neither installed from
    the wheel nor by ``cmake --install`` (a source checkout on ``PYTHONPATH``)."""
    looked = []
    for directory in _candidates():
        if os.path.isfile(os.path.join(directory, CONFIG)):
            return directory
        looked.append(directory)
    raise BekcError(
        f"this bekc package ({os.path.dirname(os.path.abspath(__file__))}) has no CMake package "
        f"(no {CONFIG} in {' or '.join(looked)}): it was not installed from bekc's wheel or by "
        f"`cmake --install`. Install the wheel (pip install bekc), or pass "
        f"-DCMAKE_PREFIX_PATH=<prefix> of a `cmake --install` of bekc "
        f"(docs/install.md, \"CMake\").")
