// The base directory ($BEKC_BASE_DIR, or base_dir in bekc.conf), as ccache's
// base_dir: paths under it are keyed and recorded relative to it, written
// "$BEKC_BASE_DIR/...", so that checkouts of one project at different places
// share hits, in one cache and through a remote one (docs/cache.md, "Sharing
// between checkouts"). Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "util/fs.hpp"

namespace bekc {

class BaseDir {
  public:
    static constexpr std::string_view kToken = "$BEKC_BASE_DIR";

    BaseDir() = default;
    // `dir` absolute; it is normalised, without a trailing slash. "/" is no base.
    explicit BaseDir(const fs::path& dir);

    bool empty() const { return dir_.empty(); }
    const std::string& dir() const { return dir_; }

    // `text` with every path under the base written relative to it: each
    // occurrence of the base directory that is a whole leading path
    // component becomes kToken. It must end at a path boundary ('/', '=',
    // '"', ':' or the end) and begin where a path may begin (the start, after
    // '=', a quote, ':', ',', ';', '(', '<' or white space, or after an option such
    // as "-I"): with base /src, /usr/src/inc stays as it is. Without a base,
    // unchanged.
    std::string hide(std::string_view text) const;

    // A recorded path back under this base: "$BEKC_BASE_DIR/x" -> "<base>/x".
    // Paths without the token are returned as they are; nullopt when the
    // path names the base but none is set here.
    std::optional<std::string> show(std::string_view path) const;

  private:
    std::string dir_;
};

}  // namespace bekc
