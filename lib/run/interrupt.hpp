// SIGINT, SIGTERM and SIGHUP while bekc runs. Every process bekc starts leads
// its own process group and is registered here; the handler stops each of
// those groups and marks the run interrupted. bekc then unwinds as after any
// failure (the build directory is removed, make's jobserver tokens go back)
// and finally dies of the same signal, so its parent sees what happened.
// A bekc killed outright (SIGKILL) cannot do this: its children get a
// parent-death signal instead (run/spawn.cpp).
#pragma once

#include <sys/types.h>
#include <expected>

#include "util/error.hpp"

namespace bekc {

// Installs the handlers once; later calls do nothing.
void install_interrupt_handlers();

// The signal that interrupted this run, or 0.
int interrupted_by();

// An Interrupted error ("bekc: interrupted by SIGINT") when a signal has
// arrived: checked before work that would start or wait for something new.
std::expected<void, Error> check_interrupted();

// After everything has unwound: dies of the signal that interrupted the run,
// with its default action. Returns when there was none.
void die_if_interrupted();

// A child's process group, stopped by the handler while registered. Returns
// false when the run was interrupted already (the caller stops the child).
bool register_child_group(pid_t pgid);
void unregister_child_group(pid_t pgid);

}  // namespace bekc
