// The remote's direct-mode records: URL/direct/<direct_key>.json.
//
//   {"format": 1, "records": [{"key": "<full key>",
//     "files": [{"path": "/abs/inc/a.h", "sha256": "…"}, …],
//     "absent": ["/abs/inc/first/a.h", …]}, …]}
//
// The local record (store/direct_record.hpp) proves a file unchanged by its
// stat, which means nothing on another machine, so the remote one keeps only
// what the full key was computed from: each dependency's SHA-256. A reader
// hashes its own copy of every listed file; all must match, and every
// "absent" path must be absent, before the record's key is believed. Paths
// are absolute, or relative to the base directory ("$BEKC_BASE_DIR/inc/a.h",
// store/base_dir.hpp); without a base, machines sharing a remote must build
// from the same paths (a CI image, a fixed checkout directory), as with
// ccache's remote storage without base_dir.
//
// Up to kMaxDirectRecords records per direct key, newest first, one per
// distinct set of header contents; writers read, merge and rewrite the file,
// and two writers racing lose one record: a later miss, never a wrong hit.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/base_dir.hpp"
#include "store/direct.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

// Rejects the whole document when anything in it is malformed: a key that is
// not a cache key, a relative path, a SHA-256 that is not 64 hex digits.
std::expected<std::vector<DirectInputs>, Error> parse_remote_records(std::string_view text);

// The record file's text; paths that are not UTF-8 with util/json_text.hpp's
// escapes, which parse_remote_records reads back.
std::string render_remote_records(const std::vector<DirectInputs>& records);

// `latest` first, then the others without any for the same key, at most
// kMaxDirectRecords in all.
std::vector<DirectInputs> merge_remote_records(std::vector<DirectInputs> existing,
                                               const DirectInputs& latest);

// The paths come from another machine, so hashing "this machine's copy" of
// them must not be a way to hang or flood a build: only regular files up to
// max_file_bytes are hashed, opened and read without blocking (a FIFO, a
// device such as /dev/zero, a directory, an unreadable or larger file simply
// does not match), and the deadline is checked between reads.
struct LocalCheck {
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    // Headers are kilobytes; this is the most bekc reads of any file (1 GiB).
    uint64_t max_file_bytes = kDefaultReadLimit;
};

struct LocalMatch {
    std::optional<DirectInputs> record;  // the first record that holds here
    // Paths the records name that exist here but cannot be what a build
    // hashed (a FIFO, a device, a directory, a file over the size limit), one
    // line each ("cannot read /dev/zero: it is a device"): worth a warning.
    std::vector<std::string> refused;
};

// The first record that holds on this machine, checked as above. The error:
// the deadline passed first; it says what was being done then ("hashing
// /inc/a.h").
// Paths recorded under a base directory ("$BEKC_BASE_DIR/...") are this
// checkout's files under `base`; without one, such a record does not hold.
std::expected<LocalMatch, Error> match_local_files(const std::vector<DirectInputs>& records,
                                                   const LocalCheck& check = {},
                                                   const BaseDir& base = {});

}  // namespace bekc
