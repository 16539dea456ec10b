// A program a plan names, identified without running it: path, size and
// mtime (toolchain/tools.hpp finds and identifies it). A plain value, so
// the plan can name its tools and stay pure.
#pragma once

#include <cstdint>
#include <string>

#include "util/fs.hpp"

namespace bekc {

struct Tool {
    // Absolute, as found: symlinks are kept, because a compiler may behave by
    // the name it is called (Debian's /usr/lib/ccache/c++ -> ccache).
    fs::path path;
    fs::path canonical;  // symlinks resolved: where its files really are
    uint64_t size = 0;
    int64_t mtime_ns = 0;

    // "path|size|mtime": what the cache key hashes for this tool.
    std::string identity() const;
};

}  // namespace bekc
