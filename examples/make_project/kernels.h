// Included by kernels.cpp: editing it rebuilds the module (see Makefile).
#pragma once

// What `add_offset` adds to every element.
#define KERNELS_OFFSET 1.0f
