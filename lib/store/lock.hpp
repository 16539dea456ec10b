// An exclusive lock on a file, held with flock(2).
//
// The lock is the kernel's, not the file's existence: when the holder exits
// or is killed, even with SIGKILL, the kernel drops it, so a crashed build
// never leaves a lock that blocks anyone. The descriptor is close-on-exec, so
// compilers started while the lock is held do not keep it alive after bekc
// dies. On NFS, Linux implements flock with the server's byte-range locks
// (NLM for v3, native for v4), so it excludes across machines; a lock held
// by a machine that crashed is released when the server's lease runs out.
// On a mount without working locks (`nolock`) it only excludes within one
// machine: the cache stays correct, because publishing is a rename, but two
// machines may build the same entry at once.
#pragma once

#include <chrono>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>

#include "store/cache_dir.hpp"
#include "util/error.hpp"

namespace bekc {

class FileLock {
  public:
    // Waits up to `timeout` for the lock on `rel` in `dir`, creating the file
    // (and its parent directories) when missing; a link there is an error,
    // never followed. The error, of kind Cache, names the lock file, and when
    // the wait timed out the holder (pid and host, which the holder writes
    // into the file) and the timeout, with a note on what to do; of kind
    // Interrupted when a signal ended the wait (run/interrupt.hpp).
    static std::expected<FileLock, Error> acquire(const CacheDir& dir,
                                                  const std::filesystem::path& rel,
                                                  std::chrono::milliseconds timeout);
    // Takes the lock only if it is free right now.
    static std::optional<FileLock> try_acquire(const CacheDir& dir,
                                               const std::filesystem::path& rel);

    FileLock(FileLock&& other) noexcept;
    FileLock& operator=(FileLock&& other) noexcept;
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;
    ~FileLock();

    std::filesystem::path path() const { return dir_.path(rel_); }
    // Deletes the lock file while still holding the lock, then releases it.
    // Safe against waiters: acquire() checks that the file it locked is still
    // the one at the path, and starts over when it is not.
    void remove_and_release();
    void release();

  private:
    FileLock(CacheDir dir, std::filesystem::path rel, int fd)
        : dir_(std::move(dir)), rel_(std::move(rel)), fd_(fd) {}

    CacheDir dir_{""};
    std::filesystem::path rel_;
    int fd_ = -1;
};

}  // namespace bekc
