// Files that a flag makes the compilers or the linker read, which neither
// reports as a dependency: response files (`@FILE`, recursively, as GCC and
// GNU ld expand them), nvcc's `--options-file`/`-optf`, and the files of
// `-specs=`, `-fprofile-use=`, `-fplugin=` and their kin. Their bytes are read
// before the build and keyed (graph/keys.cpp), and each step's key holds
// those of the files its own command names (graph/step_keys.cpp); after the
// build each is read again, and one that changed makes the build uncached
// (driver/build.cpp).
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "plan/flags.hpp"
#include "toolchain/compiler_env.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

struct FlagFile {
    fs::path path;  // absolute
    std::string sha256;
    // A response file's (`@FILE`, nvcc's --options-file): the words read,
    // which the keyed bytes hold.
    std::optional<std::vector<std::string>> words = std::nullopt;
};

// The files the flags name, each once, in the order met: bekc's flags and
// the options nvcc reads from the environment. Relative paths count from
// `cwd`, as the compilers see them. A usage error for a named file that is
// not a regular file bekc can read, saying which flag.
std::expected<std::vector<FlagFile>, Error> read_flag_files(const CompileFlags& flags,
                                                            const NvccEnvFlags& nvcc_env,
                                                            const fs::path& cwd);

// The files one command line (`argv`, its program first) makes the program
// read, found as read_flag_files finds them: what a step of the build reads
// besides the files it names (graph/step_keys.hpp). A step's command
// passes on what bekc's flags said (nvcc hands -Xcompiler's values to the
// host compiler), so its files are among those read_flag_files keyed.
std::expected<std::vector<FlagFile>, Error> read_command_flag_files(
    const std::vector<std::string>& argv, const fs::path& cwd);

// The words of the response file a flag names as `name` (from `cwd`, as
// read_flag_files reads it) among `files`; nullptr when none of them is
// that response file. What the include directories in response files are
// read from (graph/search_order.hpp).
const std::vector<std::string>* response_file_words_of(const std::vector<FlagFile>& files,
                                                       std::string_view name, const fs::path& cwd);

// The first of `files` whose bytes are not the keyed ones any more, or which
// was written since `start_ns` (it may have been read in between).
std::optional<std::string> flag_file_changed(const std::vector<FlagFile>& files, int64_t start_ns);

// The words of a response file as GCC reads them: split at white space,
// with single and double quotes and backslash escapes.
std::vector<std::string> response_file_words(std::string_view text);

}  // namespace bekc
