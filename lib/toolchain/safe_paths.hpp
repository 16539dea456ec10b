// nvcc runs its host-compiler steps through a shell and loses -I paths that
// hold a quote or other shell syntax (bekc never uses a shell, nvcc does). Such
// a directory reaches the compilers through a symlink with a plain name.
#pragma once

#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

bool needs_safe_path(const fs::path& dir);

// Whether a path may reach nvcc's shell as it is, unquoted, in a -Xcompiler
// value: no shell syntax and no comma (nvcc splits those values at commas).
bool fits_nvcc_compiler_option(const std::string& path);

// The host compiler as nvcc's -ccbin: nvcc runs it through a shell, quoting
// only its directory. A directory with shell syntax is reached through a
// plain-named link; a file name with it is refused (a Toolchain error).
std::expected<fs::path, Error> safe_ccbin(const fs::path& compiler, const PrivateDirPlaces& places);

// `dir` itself when it is plain; else <private>/paths/<hash> -> dir, created
// (atomically) when missing or pointing elsewhere, in this user's private
// directory (util/fs.hpp, private_user_dir: /tmp/bekc-<uid> or one of `places`).
std::expected<fs::path, Error> safe_path_for_nvcc(const fs::path& dir,
                                                  const PrivateDirPlaces& places);

// The same for a directory of bekc's own in the cache (the runtime headers,
// bekc_rt.o), which also gets the link when it is not UTF-8 (a cache below
// b"caf\xe9"): nvcc's front end (cudafe++) refuses a string that is not, as
// the __FILE__ the runtime headers expand is. Nothing bekc records names
// these directories, so the link's name is never seen.
std::expected<fs::path, Error> own_path_for_nvcc(const fs::path& dir,
                                                 const PrivateDirPlaces& places);

}  // namespace bekc
