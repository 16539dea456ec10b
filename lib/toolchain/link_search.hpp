// The linker's inputs as its flags name them: -L directories, -l names,
// files, static linking. `bekc build` keys what the link read from them
// (graph/keys.cpp) and decides from them whether nvcc's device link may be
// skipped (link_reads_opaque_code).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/flags.hpp"
#include "plan/tool.hpp"
#include "toolchain/compiler_env.hpp"
#include "util/fs.hpp"

namespace bekc {

// What the link flags say about the linker's inputs.
struct LinkerSearch {
    std::vector<fs::path> dirs;         // -L in order, then LIBRARY_PATH's
    std::vector<std::string> names;     // "m" for -lm, ":libx.a" for -l:libx.a
    std::vector<fs::path> files;        // arguments that are not options
    std::vector<fs::path> system_dirs;  // the linker's own, searched last
    // -static, -Bstatic and their kin: -l finds archives from there on.
    bool static_link = false;
    // An @FILE argument: more arguments the flags do not show.
    bool response_file = false;
};

// --ldflag values with -Wl,a,b and -Xlinker a taken apart, then every
// --linker-arg, read as ld reads them; then LIBRARY_PATH (`env`) and the
// directories of the host compiler's `multiarch` triplet.
LinkerSearch linker_search(const PlanFlags& flags, const CompilerEnv& env,
                           const std::string& multiarch);

// The linker's own library directories, searched after -L and LIBRARY_PATH,
// in the order GCC and ld give them on Debian and Ubuntu.
std::vector<fs::path> system_library_dirs(const std::string& multiarch);

// The file names -lNAME looks for in each directory, in the order tried
// (the shared library first, as ld does unless told -static).
std::vector<std::string> library_file_names(const std::string& name);

// The directories -l searches, in order: -L, LIBRARY_PATH, the system's.
std::vector<fs::path> library_order(const LinkerSearch& s);

// For a linker without --dependency-file: the files the flags name, and what
// each -l finds, as ld would look for it.
std::vector<fs::path> link_inputs_from_flags(const LinkerSearch& s);

// Whether the link may read device code that bekc cannot see, so nvcc's
// device link must run: an object, archive or other file that is not a
// shared library, a -l that finds an archive or that bekc finds nowhere
// (nvcc's own library directories included), static linking, an @FILE; or
// nvcc link options from the environment (NVCC_PREPEND_FLAGS,
// NVCC_APPEND_FLAGS, nvcc.profile's LIBRARIES and NVLINK_FLAGS) that ask for
// relocatable device code or name link inputs. Reads the file system.
bool link_reads_opaque_code(const PlanFlags& flags, const CompilerEnv& env,
                            const std::optional<Tool>& nvcc, const std::string& multiarch);

}  // namespace bekc
