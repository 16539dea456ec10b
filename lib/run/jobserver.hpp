// GNU make's jobserver: when bekc runs in a recipe of `make -jN`, the
// compilers it starts share make's N slots instead of adding their own. make
// hands each recipe one implicit slot; every further process needs a token
// read from the jobserver and written back when it ends.
//
// bekc takes a token as a command is about to start and none of its slots is
// free, without waiting (run/parallel.cpp polls again while its commands
// run), and gives it back once it has nothing left to start. So recipes that
// run side by side share the slots as their needs change: what one gives
// back at the end of a wave of compiles, another takes. With no token free a
// build runs one command at a time in its implicit slot; it never waits on
// make for that one and never oversubscribes.
//
// `bekc build <package>` serves a jobserver of its own to the child bekc
// processes that build its modules (a FIFO, as make 4.4 does), unless it runs
// under make's, which the children then share.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "util/env.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

namespace fs = std::filesystem;

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
    // The slots for a build of at most `wanted`: `wanted` fixed slots when no
    // jobserver is reachable through $MAKEFLAGS (`env` reads it), else the
    // implicit slot, with tokens taken one by one (try_take).
    static JobSlots take(int wanted, const EnvLookup& env);
    // A jobserver of our own for child processes: a FIFO in a new private
    // directory (util/fs.hpp, private_temp_dir, in `places`) for a build of
    // -j `jobs`, holding `tokens` (the slots its children do not start in).
    // makeflags() is what the children's MAKEFLAGS must say. The directory
    // goes when this object does.
    static std::expected<JobSlots, Error> serve(int jobs, int tokens,
                                                const PrivateDirPlaces& places);

    JobSlots(const JobSlots&) = delete;
    JobSlots& operator=(const JobSlots&) = delete;
    JobSlots(JobSlots&& other) noexcept;
    JobSlots& operator=(JobSlots&&) = delete;
    ~JobSlots();  // gives the tokens back; a served FIFO is removed

    // The slots held for good: `wanted` without a jobserver, else 1. A plan
    // sizes its commands (nvcc --threads) by it.
    int count() const { return from_jobserver() ? 1 : limit_; }
    // The most slots this build may use at once, tokens included: `wanted`,
    // or 1 where make named its jobserver but did not hand it over.
    int limit() const { return limit_; }
    bool from_jobserver() const { return write_fd_ >= 0; }
    // This, when the slots come from a jobserver, else null: what
    // ParallelOptions::tokens and ExecuteOptions::tokens take.
    JobSlots* jobserver() { return from_jobserver() ? this : nullptr; }
    // $MAKEFLAGS names a jobserver of make's, reachable or not.
    bool named_by_make() const { return named_by_make_; }
    // Why the jobserver $MAKEFLAGS names is not used ("make's jobserver is not
    // used: descriptors 0,1 are not the two ends of one pipe"), for -v; empty
    // when it is, or when none is named.
    const std::string& refusal() const { return refusal_; }
    // One more slot: a token, read without waiting. False when none is free
    // (or there is no jobserver).
    bool try_take();
    // Writes back one token that try_take read (dropped if the jobserver
    // stays full for a second: it then has more than it handed out).
    void give_back();
    int tokens_held() const { return static_cast<int>(tokens_.size()); }
    // For the children of serve(): "-jN --jobserver-auth=fifo:PATH".
    const std::string& makeflags() const { return makeflags_; }

  private:
    JobSlots(int limit, bool named_by_make) : limit_(limit), named_by_make_(named_by_make) {}
    int limit_ = 1;
    bool named_by_make_ = false;
    std::string tokens_;                // the bytes read, written back as they were
    int read_fd_ = -1, write_fd_ = -1;  // ours, closed by the destructor
    std::string makeflags_;             // serve() only
    std::string refusal_;               // take() only
    fs::path served_dir_;               // serve() only: removed by the destructor
};

}  // namespace bekc
