#include "toolchain/safe_paths.hpp"

#include <unistd.h>

#include "store/file_ops.hpp"
#include "store/hash.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

// <private>/paths/<hash> -> dir, created (atomically) when missing or
// pointing elsewhere.
std::expected<fs::path, Error> plain_link(const fs::path& dir, const PrivateDirPlaces& places) {
    auto mine = private_user_dir(places);
    if (!mine) return std::unexpected(mine.error());
    fs::path base = *mine / "paths";
    fs::path link = base / sha256_hex(dir.string()).substr(0, 20);
    std::error_code ec;
    if (fs::is_symlink(link, ec) && fs::read_symlink(link, ec) == dir) return link;
    fs::create_directories(base, ec);
    fs::path tmp = base / ("." + unique_suffix());
    fs::create_directory_symlink(dir, tmp, ec);
    if (ec || ::rename(tmp.c_str(), link.c_str()) != 0) {
        fs::remove(tmp, ec);
        return fail(ErrorKind::Cache, "cannot create " + link.string() +
                                          ", the plain-named link nvcc needs for " + dir.string());
    }
    return link;
}

}  // namespace

bool needs_safe_path(const fs::path& dir) {
    return !shell_safe_path(dir);
}

bool fits_nvcc_compiler_option(const std::string& path) {
    return !needs_safe_path(path) && path.find(',') == std::string::npos;
}

std::expected<fs::path, Error> safe_ccbin(const fs::path& compiler,
                                          const PrivateDirPlaces& places) {
    if (needs_safe_path(compiler.filename()))
        return fail(ErrorKind::Toolchain,
                    "the host compiler " + compiler.string() +
                        " has shell syntax in its file name, and nvcc runs it through a shell; "
                        "give a link to it with a plain name (--cxx)");
    if (!needs_safe_path(compiler.parent_path())) return compiler;
    auto dir = safe_path_for_nvcc(compiler.parent_path(), places);
    if (!dir) return dir;
    return *dir / compiler.filename();
}

std::expected<fs::path, Error> safe_path_for_nvcc(const fs::path& dir,
                                                  const PrivateDirPlaces& places) {
    if (!needs_safe_path(dir)) return dir;
    return plain_link(dir, places);
}

std::expected<fs::path, Error> own_path_for_nvcc(const fs::path& dir,
                                                 const PrivateDirPlaces& places) {
    if (!needs_safe_path(dir) && is_utf8(dir.native())) return dir;
    return plain_link(dir, places);
}

}  // namespace bekc
