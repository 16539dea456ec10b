// Catch2 v2's implementation and main(), compiled once and linked into every
// Catch2 test binary (the unit tests and both harnesses). It is the largest
// part of a test build's compile time: one copy instead of three.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
