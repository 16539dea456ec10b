// GNU make's jobserver, as a client: when bekc runs in a recipe of
// `make -jN`, the compilers it starts share make's N slots instead of adding
// their own. make hands each recipe one implicit slot; every further process
// needs a token read from the jobserver and written back when it ends.
//
// bekc takes, at the start of a build and without waiting, as many tokens as
// it could use and make has free; it holds them until the build ends. With
// none free it builds one command at a time in its implicit slot, so it never
// waits on make and never oversubscribes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "util/env.hpp"

namespace bekc {

// Where MAKEFLAGS says the jobserver is: `--jobserver-auth=fifo:PATH`
// (make 4.4), or `--jobserver-auth=R,W` / `--jobserver-fds=R,W` (inherited
// pipe descriptors). The last one given counts, as in make.
struct JobserverAuth {
    std::string fifo;  // empty: the descriptors
    int read_fd = -1, write_fd = -1;
};
std::optional<JobserverAuth> parse_makeflags(std::string_view makeflags);

class JobSlots {
  public:
    // The slots for a build of at most `wanted`: `wanted` when no jobserver
    // is reachable through $MAKEFLAGS, else 1 + the tokens taken (at most
    // wanted - 1). `env` reads MAKEFLAGS.
    static JobSlots take(int wanted, const EnvLookup& env);

    JobSlots(const JobSlots&) = delete;
    JobSlots& operator=(const JobSlots&) = delete;
    JobSlots(JobSlots&& other) noexcept;
    ~JobSlots();  // gives the tokens back

    int count() const { return count_; }
    bool from_jobserver() const { return write_fd_ >= 0; }

  private:
    JobSlots(int count) : count_(count) {}
    int count_ = 1;
    std::string tokens_;                // the bytes read, written back as they were
    int read_fd_ = -1, write_fd_ = -1;  // ours, closed by the destructor
};

}  // namespace bekc
