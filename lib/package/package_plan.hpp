// What `bekc build <package dir>` builds, and why (package/package_build.hpp
// runs it).
//
// Each kernel file below the package is built once per module name the
// package's Python code loads it by: every `load_cuda_file(PATH, name=NAME)`
// / `load_cpp_file(...)` call whose PATH bekc can evaluate
// (scan/python_path.hpp) and whose other arguments leave the library and its
// cache key unchanged. Without `name=` the name is the file's stem, as in
// brainevent. Those builds give the package's first use of each op a cache
// hit.
//
// Flag arguments given as literal lists of strings are reproduced, as bekc's
// loaders pass them (python/bekc/_argv.py): `load_cuda_file`'s
// `extra_cuda_cflags` and `extra_ldflags` (--cuda-flag, --linker-arg),
// `load_cpp_file`'s `extra_cflags` and `extra_ldflags` (--cxx-flag,
// --ldflag). A file the package loads only in a way bekc cannot reproduce (a
// computed name, path or flags, include paths, a `functions` argument), or
// not at all, is compiled only to check it, under a name made from its path
// in the package (`_tcsr/csr_to_csc.cu` -> `tcsr_csr_to_csc`), and the plan
// says why; its first use compiles. Two files never share a module name:
// files the package loads under one name are both built only to check them,
// and a file whose check name is taken is not built, with the reason.
//
// What below the package cannot be read (a directory or file the user may
// not read, a path longer than PATH_MAX) is skipped and named; the rest is
// still read. Symbolic links are never followed.
#pragma once

#include <functional>

#include <string>
#include <vector>

#include "plan/flags.hpp"
#include "util/fs.hpp"

namespace bekc {

struct PackageModule {
    fs::path source;        // canonical path of the kernel file
    std::string name;       // the module name it is built under
    std::string load_site;  // "_csr/binary.py:610" when the package loads it by that name
    std::string why_check;  // otherwise: why this build only checks the file
    // The load's flag arguments (cuda_flags, cxx_flags, ldflags, linker_args
    // only); none for a file only checked.
    CompileFlags flags;
};

struct PackageSkip {
    fs::path source;
    std::string reason;
};

// A path below the package that could not be read, and why ("cannot open
// directory /p/_b: Permission denied"); `effect` says what the build misses
// ("what is below it is neither built nor checked").
struct UnreadPath {
    fs::path path;
    std::string reason;
    std::string effect;
};

struct PackagePlan {
    fs::path root;                       // canonical
    size_t files = 0;                    // kernel files below the package
    std::vector<PackageModule> modules;  // sorted by source path, then name
    std::vector<PackageSkip> skipped;    // files built under no name
    std::vector<UnreadPath> unread;      // sorted by path

    size_t as_loaded() const;
    // "bekc: package DIR: 61 kernel files, 47 modules as the package loads
    // them, 14 only checked (their first use compiles)[, 1 not built][, 1
    // path bekc cannot read]": the first line of the real run and of
    // --dry-run alike.
    std::string summary() const;
    // One "note:" line per file that is only checked or not built, and per
    // path that could not be read, saying why.
    std::vector<std::string> notes() const;
};

PackagePlan plan_package(const fs::path& package);

// The name a file that is only checked is built under: its path below the
// package without the extension, each directory's leading underscores
// dropped, other characters that a C++ identifier cannot hold made '_', the
// parts joined by '_'.
std::string check_module_name(const fs::path& relative);

// The regular files below `dir` that `want` keeps, sorted, and the
// directories that could not be listed. Symbolic links are not followed: a
// package is what its directory holds. One directory is open at a time, so
// the depth of the tree is bounded by PATH_MAX, not by the descriptors the
// process may hold, and a directory that cannot be read ends nothing but
// its own listing.
struct FilesBelow {
    std::vector<fs::path> files;
    std::vector<UnreadPath> unread;
};
FilesBelow files_below(const fs::path& dir, const std::function<bool(const fs::path&)>& want);

}  // namespace bekc
