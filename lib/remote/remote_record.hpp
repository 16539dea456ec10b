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
// are absolute, so machines sharing a remote must build from the same paths
// (a CI image, a fixed checkout directory), as with ccache's remote storage
// without base_dir.
//
// Up to kMaxDirectRecords records per direct key, newest first, one per
// distinct set of header contents; writers read, merge and rewrite the file,
// and two writers racing lose one record: a later miss, never a wrong hit.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/direct.hpp"

namespace bekc {

// Rejects the whole document when anything in it is malformed: a key that is
// not a cache key, a relative path, a SHA-256 that is not 64 hex digits.
std::expected<std::vector<DirectInputs>, std::string> parse_remote_records(std::string_view text);

// The error says which path cannot be written (JSON strings are UTF-8).
std::expected<std::string, std::string> render_remote_records(
    const std::vector<DirectInputs>& records);

// `latest` first, then the others without any for the same key, at most
// kMaxDirectRecords in all.
std::vector<DirectInputs> merge_remote_records(std::vector<DirectInputs> existing,
                                               const DirectInputs& latest);

// The first record that holds on this machine, checked as above.
std::optional<DirectInputs> match_local_files(const std::vector<DirectInputs>& records);

}  // namespace bekc
