// Why a build missed, in terms of its direct key: each build remembers the
// direct key record (store/key.hpp) of its inputs, identified by the module
// name and the input paths, in <cache>/history/ (store/layout.hpp). The next
// build of the same inputs compares its record part by part, and the build
// log and `--json` name the parts that changed ("input.sha256", "step.argv").
// One small file per set of inputs, replaced by rename; pruned with the
// direct records, least recently used first.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/cache_dir.hpp"

namespace bekc {

struct KeyChange {
    std::string part;                  // the record's label
    std::string old_value, new_value;  // shortened around the first difference; "" when absent
};

// The id of a set of inputs: 64 hex digits of the module name and the paths.
std::string inputs_id(std::string_view module, const std::vector<std::string>& inputs);

// The parts of `now` whose value differs from `before`'s, in `now`'s order,
// then the parts only `before` had. Values longer than `width` are cut to a
// window around their first difference, with "..." where cut.
std::vector<KeyChange> changed_parts(std::string_view before, std::string_view now,
                                     size_t width = 48);

// The record remembered for `id` in `cache`, if any and readable.
std::optional<std::string> previous_record(const CacheDir& cache, std::string_view id);
// Remembers `record` for `id`: best effort (a read-only cache keeps none).
// `previous` is what previous_record() read; unchanged, the record is only
// touched, so a hit costs one small read and a utime.
void remember_record(const CacheDir& cache, std::string_view id, std::string_view record,
                     const std::optional<std::string>& previous);

// For `cache verify`: the file parses as a history record.
bool history_file_is_valid(const CacheDir& cache, const fs::path& rel);

}  // namespace bekc
