// A pack (store/pack_marker.hpp) as one file to hand out: a `.tar.gz` whose
// top-level directory is the pack's name, or a Python wheel that installs it
// as `bekc_packs/<name>/` in site-packages, where every build finds it
// (store/installed_packs.hpp; docs/cache.md, "Packs").
//
// Both take the pack's regular files only, skip what is local to a machine
// (tmp/, locks/, the counters stats*), refuse a pack holding a symbolic link
// or anything else that is not a directory or a regular file, and write their
// output atomically: to a temporary beside it, then rename(2).
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace bekc {

namespace fs = std::filesystem;

class Runner;

// The files a pack's archive holds, relative to `pack_dir`, sorted. An error
// names the first link or special file, or a directory that cannot be read.
std::expected<std::vector<fs::path>, Error> pack_files(const fs::path& pack_dir);

// `out_file` (a .tar.gz) written by `tar` (GNU tar: `--transform`), run
// through `runner` with an argument vector; `tar` is the program's path, which
// the caller finds (ToolLookup). The pack must have a "pack" object in its
// marker, whose name becomes the archive's top-level directory.
std::expected<fs::path, Error> write_pack_tarball(const fs::path& pack_dir,
                                                  const fs::path& out_file, Runner& runner,
                                                  const fs::path& tar);

struct PackWheel {
    std::string name;          // the pack's name: [A-Za-z0-9._]
    std::string version;       // PEP 440: 1.2, 1.2.3rc1, 2.0.post1, 1.0.dev3
    std::string platform_tag;  // manylinux_2_28_x86_64, linux_x86_64, any
};

// Why `version` is not a version a wheel can carry ("" when it is).
std::string wheel_version_problem(const std::string& version);

// The wheel's file name: bekc_pack_<name>-<version>-py3-none-<platform_tag>.whl,
// the name's '.' escaped to '_' as the wheel specification asks.
std::string pack_wheel_file_name(const PackWheel& w);

// out_dir/pack_wheel_file_name(w): a ZIP (stored entries) holding every file
// of pack_files() under bekc_packs/<name>/, and the .dist-info's METADATA,
// WHEEL and RECORD. The pack must have a "pack" object in its marker. A bad
// name, version or tag is a Usage error that says what is allowed.
std::expected<fs::path, Error> write_pack_wheel(const fs::path& pack_dir, const PackWheel& w,
                                                const fs::path& out_dir);

}  // namespace bekc
