// Plan: from scanned inputs, a toolchain and options to the commands that
// build the library. Pure: nothing here runs or writes anything, so
// `bekc build --dry-run` and the plan tests see exactly what a build runs.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/arch.hpp"
#include "plan/command.hpp"
#include "plan/flags.hpp"
#include "plan/tool.hpp"
#include "util/fs.hpp"

namespace bekc {

// The include and define flags every compile gets, in search order: the
// user's -I directories first, so a user's own brainevent/ headers (for
// instance brainevent's real ones) are never shadowed by bekc's copies; then
// bekc's runtime headers, which fill in whatever the user's directories lack;
// then XLA's FFI headers when a source needs them.
std::vector<std::string> preprocessor_flags(const fs::path& runtime_include,
                                            const PlanFlags& flags);

struct PlanUnit {
    fs::path wrapper;  // generated translation unit (.cu or .cpp) in the staging dir
    bool cuda = false;
    std::string display;  // the user's source as named on the command line, for progress
    // What nvcc's front ends (cudafe++, cicc) name a CUDA unit by instead of
    // the wrapper's path (-Xcudafe --orig_src_path_name=): they derive the
    // module id from it, which names the unit's internal device symbols
    // (an anonymous namespace's kernels), and the wrapper's directory is new
    // for each build. A plain path nvcc's shell takes as it is; empty: none.
    std::string source_path;
};

struct PlanRequest {
    std::vector<PlanUnit> units;
    // The library's entry points (codegen: render_handlers), a C++ file in
    // the staging dir compiled beside the units.
    fs::path handlers;
    std::optional<Tool> nvcc;  // required when any unit is CUDA
    Tool cxx;
    std::vector<Arch> archs;
    PlanFlags flags;
    fs::path runtime_include;  // where brainevent/common.h and bekc/handler.h are
    fs::path library;          // output .so
    // bekc_rt.o (ensure_runtime_object): linked into the library with the
    // wrappers' objects, which only declare the handler support functions.
    std::optional<fs::path> runtime_object;
    // A compiler launcher (ccache, sccache, distcc...) put in front of every
    // compile, not the link (they cache compiles, not links): `launcher nvcc ...`. It never changes
    // the output, so it is not part of the cache key.
    std::optional<fs::path> launcher;
    // Where the linker lists the files it read (`--dependency-file`, GNU ld
    // and gold since binutils 2.35, lld, mold), given to whichever command
    // links. Unset: not asked for (a linker without the option).
    std::optional<fs::path> link_depfile;
    // nvcc compiles this many architectures of one input side by side
    // (`--threads N`, when it has more than one to compile); the compile
    // takes that many -j slots.
    int device_threads = 1;
    // nvcc names its intermediate files after the object (-objtemp, nvcc
    // 12.4 and later) instead of after its process id, a name that reaches
    // the object: the same inputs then give the same library.
    bool nvcc_objtemp = false;
    // nvcc's link may skip its device link (-nodlink, nvcc 12.0 and later)
    // when no link input can hold relocatable device code.
    bool nvcc_nodlink = false;
    // The link may read device code bekc cannot see (an archive, an object,
    // static linking, nvcc link options from the environment): nvcc's device
    // link runs (toolchain/link_search.hpp).
    bool link_reads_opaque_code = false;
    // What nvcc's link gets in place of $NVCC_PREPEND_FLAGS and
    // $NVCC_APPEND_FLAGS (toolchain/compiler_env.hpp, nvcc_link_env).
    std::vector<std::pair<std::string, std::string>> link_env;
    // A pip toolkit's own directories (toolchain/nvcc_search.hpp,
    // pip_toolkit_dirs), named on nvcc's command lines after the user's:
    // include and system include directories on every CUDA compile, library
    // directories on nvcc's link.
    std::vector<fs::path> toolkit_includes, toolkit_system_includes, toolkit_libs;
    // flags.cudart "shared": the libcudart.so.N nvcc's link names, and its
    // directory as the library's RUNPATH.
    std::optional<fs::path> cudart_library;
    // $BEKC_BASE_DIR: what the compilers write (debug information, __FILE__)
    // names files under it relative to it (-ffile-prefix-map=DIR=.).
    std::string base_dir;
    // Whether nvcc gets the map too: it hands -Xcompiler values to a shell
    // unquoted and splits them at commas, so a base with a comma or shell
    // syntax ($(...) in a checkout's name) is not mapped for nvcc
    // (toolchain/safe_paths.hpp decides).
    bool nvcc_maps_base_dir = false;
    // The private build directory, new for each build, which holds the
    // wrappers: what the host compilers write (debug information) names it
    // kBuildDirShown instead (-ffile-prefix-map), so a debug build gives the
    // same library each time. For nvcc only where it fits -Xcompiler, as the
    // base does.
    std::string build_dir;
    bool nvcc_maps_build_dir = false;
};

// What the host compilers' output names the private build directory.
inline constexpr const char* kBuildDirShown = "/bekc-build";

// Whether an nvcc of this version ("13.0.88") takes -objtemp (12.4 and later).
bool nvcc_takes_objtemp(const std::string& version);

// Whether an nvcc of this version takes -nodlink (--no-device-link; 12.0
// and later are known to).
bool nvcc_takes_nodlink(const std::string& version);

// Whether nvcc flags ask for what only nvcc's device link (nvlink) does:
// relocatable device code (-rdc with any value but false, -dc), device LTO
// (-dlto, -lto, an lto_ code), extensible whole-program code (-ewp), nvlink
// options (-Xnvlink); or may (an options file).
bool flags_ask_device_link(const std::vector<std::string>& flags);

// Whether a CUDA build's link runs nvcc's device link: the user's nvcc or
// link flags ask for it (flags_ask_device_link), or the link reads files bekc
// cannot see into (`link_reads_opaque_code`, toolchain/link_search.hpp).
// Whole-program device code registers itself, so without either the device
// link adds only an empty image.
bool needs_device_link(const PlanRequest& request);
bool needs_device_link(const PlanFlags& flags, bool link_reads_opaque_code);

// How many device compilations nvcc runs for one input: one per arch, and
// one more for the PTX of the newest.
int device_compilations(const std::vector<Arch>& archs);

struct CompileStep {
    Command command;
    fs::path depfile;  // Make-syntax dependencies the compiler writes
};

struct BuildPlan {
    std::vector<CompileStep> compiles;     // one per unit; independent, may run in parallel
    CompileStep handlers;                  // the entry points, beside the compiles
    Command link;                          // the objects, bekc_rt.o and the user's flags
    std::optional<fs::path> link_depfile;  // the request's, written by the link
};

// What nvcc's link adds for flags.cudart: "-cudart static"; for "shared",
// the toolkit's library itself and its directory as the RUNPATH; nothing
// when unset (nvcc's default, static).
std::vector<std::string> cudart_link_flags(const PlanRequest& request);

BuildPlan make_build_plan(const PlanRequest& request);

// Parses a compiler-written Make depfile into its prerequisite paths.
std::vector<std::string> parse_depfile(const std::string& text);

// One prerequisite of a linker's --dependency-file. Both linkers write one
// path per line, but GNU ld writes it as it is while lld escapes it as
// compilers do (`\ `, `\#`, `$$`), so a line is ambiguous: the caller takes
// whichever of the two names a file.
struct LinkerDependency {
    std::string as_written;  // the line, less indentation and the continuation
    std::string unescaped;   // the same with Make escapes undone
};

// Parses the first rule of a linker-written dependency file: the output and a
// colon, then one indented file per line, every line but the last ending in a
// backslash. The empty rules after it (one per file) add nothing.
std::vector<LinkerDependency> parse_linker_depfile(const std::string& text);

}  // namespace bekc
