"""What the test suites share: the programs they run (binaries.py) and the
kernel sources they build (kernels.py). tests/conftest.py puts tests/ on
``sys.path``, so every suite imports them as ``support.binaries`` and
``support.kernels``."""
