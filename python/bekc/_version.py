"""The package's version: CMake's project() version, which the wheel test
(tests/integration/test_wheel.py) compares with this line."""

__version__ = "0.1.0"
