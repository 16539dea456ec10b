// The environment variables that the compilers and the linker read and that
// change what they build: one table, read by graph/keys.cpp, which puts
// their values into the direct key and their search directories into the
// shadowing checks (docs/cache.md, "What is in the key").
//
// Sources: GCC's manuals ("Environment Variables Affecting GCC", and the CPP
// manual's "Environment Variables"), clang's command-line reference and its
// driver, the CUDA toolkit's bin/nvcc.profile with `nvcc --dryrun`, GNU ld's
// manual. Each entry says what it changes; kNotKeyedEnv says why the others
// that these tools read are left out.
#pragma once

#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

// Which program reads a variable. A variable is keyed for builds that run
// that program: the host compiler and the linker run in every build, nvcc in
// builds with a .cu input.
enum class EnvReader { HostCompiler, Linker, Nvcc };

// What else its value is, besides a keyed string.
enum class EnvRole {
    Value,
    // Colon-separated directories searched like -I, after every -I of the
    // command line (CPATH).
    IncludePath,
    // Colon-separated directories searched like -isystem: after the -I and
    // -isystem directories, before the system directories (CPLUS_INCLUDE_PATH).
    SystemIncludePath,
    // Colon-separated directories searched for -l libraries after the
    // command line's -L directories (LIBRARY_PATH).
    LibraryPath,
};

struct CompilerEnvVar {
    std::string_view name;
    EnvReader reader;
    EnvRole role;
    std::string_view effect;  // what changes, for --explain-key readers and the docs
};

// Every variable that is keyed.
inline constexpr CompilerEnvVar kCompilerEnv[] = {
    // GCC (CPP manual, "Environment Variables"); clang reads the same two.
    {"CPATH", EnvReader::HostCompiler, EnvRole::IncludePath,
     "header directories, searched after every -I"},
    {"CPLUS_INCLUDE_PATH", EnvReader::HostCompiler, EnvRole::SystemIncludePath,
     "header directories for C++, searched like -isystem before the system ones"},
    // GCC ("Environment Variables Affecting GCC"); clang reads COMPILER_PATH
    // and LIBRARY_PATH too.
    {"GCC_EXEC_PREFIX", EnvReader::HostCompiler, EnvRole::Value,
     "prefix of the compiler's subprograms (cc1plus, as, collect2) and startup files"},
    {"COMPILER_PATH", EnvReader::HostCompiler, EnvRole::Value,
     "directories searched for the compiler's subprograms"},
    {"LIBRARY_PATH", EnvReader::HostCompiler, EnvRole::LibraryPath,
     "directories searched for -l libraries and startup files when linking"},
    {"SOURCE_DATE_EPOCH", EnvReader::HostCompiler, EnvRole::Value,
     "the date and time of __DATE__ and __TIME__ (GCC 7+, clang 16+)"},
    {"GCC_COMPARE_DEBUG", EnvReader::HostCompiler, EnvRole::Value,
     "turns on -fcompare-debug, which runs the compiler twice and may fail the build"},
    // clang's driver.
    {"CCC_OVERRIDE_OPTIONS", EnvReader::HostCompiler, EnvRole::Value,
     "clang edits its own command line with it (adds, removes, replaces options)"},
    {"CLANG_NO_DEFAULT_CONFIG", EnvReader::HostCompiler, EnvRole::Value,
     "clang 16+ skips its default configuration files, which may hold options"},
    // GNU ld's manual (-rpath): also used for shared libraries (checked with
    // ld 2.40: the library gets that DT_RUNPATH).
    {"LD_RUN_PATH", EnvReader::Linker, EnvRole::Value,
     "the library's run-time search path when no -rpath is given"},
    // nvcc's manual, "NVCC Environment Variables".
    {"NVCC_PREPEND_FLAGS", EnvReader::Nvcc, EnvRole::Value,
     "options nvcc puts before its command line"},
    {"NVCC_APPEND_FLAGS", EnvReader::Nvcc, EnvRole::Value,
     "options nvcc puts after its command line"},
    {"NVCC_CCBIN", EnvReader::Nvcc, EnvRole::Value,
     "nvcc's host compiler when no -ccbin is given (bekc gives one, so this is inert today)"},
    // The toolkit's bin/nvcc.profile extends these with `+=` / `=+`, so nvcc
    // takes their values from the environment: `nvcc --dryrun` (CUDA 13.0)
    // shows INCLUDES..OCG_FLAGS in the commands it runs; LLVMC_FLAGS and
    // NVASM_FLAGS are read the same way by other compilation trajectories.
    {"INCLUDES", EnvReader::Nvcc, EnvRole::Value,
     "nvcc.profile: include options for every nvcc preprocessing step"},
    {"SYSTEM_INCLUDES", EnvReader::Nvcc, EnvRole::Value,
     "nvcc.profile: system include options for every nvcc preprocessing step"},
    {"LIBRARIES", EnvReader::Nvcc, EnvRole::Value, "nvcc.profile: options for nvcc's link"},
    {"CUDAFE_FLAGS", EnvReader::Nvcc, EnvRole::Value, "nvcc.profile: options for cudafe++"},
    {"PTXAS_FLAGS", EnvReader::Nvcc, EnvRole::Value, "nvcc.profile: options for ptxas"},
    {"NVLINK_FLAGS", EnvReader::Nvcc, EnvRole::Value, "nvcc.profile: options for nvlink"},
    {"NVVM_FLAGS", EnvReader::Nvcc, EnvRole::Value, "nvcc.profile: options for cicc (NVVM)"},
    {"OCG_FLAGS", EnvReader::Nvcc, EnvRole::Value,
     "nvcc.profile: options for the optimising code generator"},
    {"LLVMC_FLAGS", EnvReader::Nvcc, EnvRole::Value, "nvcc.profile: options for llvmc"},
    {"NVASM_FLAGS", EnvReader::Nvcc, EnvRole::Value, "nvcc.profile: options for nvasm"},
};

struct NotKeyedEnvVar {
    std::string_view name;
    std::string_view why;
};

// Variables these tools read that cannot change the library, and why.
inline constexpr NotKeyedEnvVar kNotKeyedEnv[] = {
    {"C_INCLUDE_PATH", "read for C only (checked: g++ 12 and clang++ 14 ignore it for C++)"},
    {"OBJC_INCLUDE_PATH", "read for Objective-C only"},
    {"OBJCPLUS_INCLUDE_PATH", "read for Objective-C++ only"},
    {"DEPENDENCIES_OUTPUT",
     "ignored when -M options are given, and bekc gives -MD -MF (checked: g++ 12 and nvcc "
     "13.0 write the same depfile with it set)"},
    {"SUNPRO_DEPENDENCIES", "as DEPENDENCIES_OUTPUT"},
    {"LANG", "diagnostics' language; GCC's manual: does not change how sources are read"},
    {"LC_ALL", "as LANG"},
    {"LC_CTYPE", "as LANG"},
    {"LC_MESSAGES", "as LANG"},
    {"TMPDIR", "where temporary files go"},
    {"GCC_COLORS", "diagnostics only"},
    {"GCC_URLS", "diagnostics only"},
    {"TERM_URLS", "diagnostics only"},
    {"GCC_EXTRA_DIAGNOSTIC_OUTPUT", "diagnostics only"},
    {"LD_LIBRARY_PATH",
     "ld looks there only for libraries that linked shared libraries need; the files it reads "
     "are in its dependency list"},
    {"CUDA_HOME", "bekc's own: picks nvcc, whose identity is keyed; nvcc does not read it"},
    {"CUDA_PATH", "as CUDA_HOME"},
    {"CXX", "bekc's own: picks the host compiler, whose identity is keyed"},
    {"PATH", "bekc finds the compilers with it; their identities are keyed"},
};

// The environment as it is: nullopt for an unset variable, "" for one set to
// nothing. (util/env's lookup treats both as unset; the key must not.)
using RawEnvLookup = std::function<std::optional<std::string>(std::string_view)>;
RawEnvLookup process_environment();

struct CompilerEnv {
    // The set variables of kCompilerEnv that this build's programs read, in
    // the table's order. Unset ones are absent; set-but-empty ones are "".
    std::vector<std::pair<std::string, std::string>> values;
    // The search directories of the path variables, absolute, in the order
    // the compilers search them (an empty element is the working directory).
    std::vector<fs::path> include_dirs;         // CPATH
    std::vector<fs::path> system_include_dirs;  // CPLUS_INCLUDE_PATH
    std::vector<fs::path> library_dirs;         // LIBRARY_PATH
    // $TMPDIR when set and not empty: where the compiler drivers put the
    // objects they link and delete (not keyed: kNotKeyedEnv).
    std::optional<fs::path> tmpdir;
};

// Pure: reads the variables through `env`. `uses_nvcc`: the build runs nvcc.
// `cwd` resolves relative and empty elements of the path variables.
CompilerEnv read_compiler_env(const RawEnvLookup& env, bool uses_nvcc, const fs::path& cwd);

// The options nvcc reads from the environment, as words (nvcc splits the
// variables at white space): with `CompileFlags::cuda_flags`, every option a
// CUDA compile and nvcc's link see. Whatever decides from nvcc's options
// (relocatable device code and the device link, the CUDA runtime, the files
// options name) reads these too. Empty in a build that runs no nvcc:
// read_compiler_env keeps the variables only then.
struct NvccEnvFlags {
    std::vector<std::string> prepend;  // $NVCC_PREPEND_FLAGS: before the command line
    std::vector<std::string> append;   // $NVCC_APPEND_FLAGS: after it
    // `flags` between the two, in the order nvcc reads them.
    std::vector<std::string> around(const std::vector<std::string>& flags) const;
};
NvccEnvFlags nvcc_env_flags(const CompilerEnv& env);

// nvcc reads $NVCC_PREPEND_FLAGS and $NVCC_APPEND_FLAGS on bekc's link as on
// its compiles. An option there that chooses compiling only (-c, -dc, -dw and
// their long names) is what each compile does anyway (-dc: relocatable device
// code, so the device link runs, link_search.hpp), and nvcc's link runs with
// the variables that hold one set to their other words: the overrides for
// that command, none when neither holds one.
std::vector<std::pair<std::string, std::string>> nvcc_link_env(const CompilerEnv& env);

// A usage error for an option in those variables that chooses any other phase
// than compiling to an object or linking (-E, -M, -ptx, -cubin, -fatbin,
// -dlink, -lib, -run, ...): bekc's commands would make something that is not
// the library. It names the variable, the option and what to do instead.
std::expected<void, Error> check_nvcc_env_phases(const NvccEnvFlags& nvcc_env);

// The variables of `env` the host compiler reads, "NAME=value\n" each: what
// can change the handler support object bekc_rt.o (store/runtime_headers.hpp).
std::string host_compiler_env(const CompilerEnv& env);

// Pure: a colon-separated directory list as GCC reads it. Every empty element
// (leading, trailing, or between two colons) is `cwd`; an empty value is no
// directory at all. Relative elements are made absolute against `cwd`.
std::vector<fs::path> split_search_path(std::string_view value, const fs::path& cwd);

}  // namespace bekc
