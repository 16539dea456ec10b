// The keyword arguments of bekc's Python loaders (load_cuda_inline,
// load_cuda_file, load_cpp_file, ...) and the `bekc build` option each one
// becomes: the one table of them. The Python package writes a load's command
// from it (python/bekc/_interface.py, generated from `bekc config --json`;
// python/bekc/_options.py holds one field per keyword), and the package
// prebuild (package/package_plan) reads from it which loads it reproduces.
#pragma once

#include <string_view>

namespace bekc {

// How a keyword's value is written, as prep/build_args' to_argv writes
// options (`--option=VALUE`, or `-XVALUE` for a short option): each element
// of a list as one option, one value, the option alone when the value is
// true or when it is false, or nothing (the keyword is the loader's own).
enum class KeywordForm { Each, Value, WhenTrue, WhenFalse, None };

// What the package prebuild does with a load that passes the keyword:
// nothing (the library and its key do not depend on it), take its literal
// list of strings as the load's flags, or leave the load to the package.
enum class PrebuildUse { Ignore, Flags, GiveUp };

struct LoaderKeyword {
    std::string_view keyword;
    // "cuda" (load_cuda_*) or "cxx" (load_cpp_*) when only those loaders
    // take it this way; "" when every loader does.
    std::string_view kind;
    std::string_view option;  // "" for KeywordForm::None
    KeywordForm form;
    PrebuildUse prebuild;
};

// `name` is Ignore: the prebuild reads the literal itself (KernelLoad::name).
inline constexpr LoaderKeyword kLoaderKeywords[] = {
    {"name", "", "--name", KeywordForm::Value, PrebuildUse::Ignore},
    {"functions", "", "--function", KeywordForm::Each, PrebuildUse::GiveUp},
    {"target_prefix", "", "--target-prefix", KeywordForm::Value, PrebuildUse::GiveUp},
    {"optimization_level", "", "-O", KeywordForm::Value, PrebuildUse::GiveUp},
    {"use_fast_math", "", "--fast-math", KeywordForm::WhenTrue, PrebuildUse::GiveUp},
    {"compute_capability", "cuda", "--arch", KeywordForm::Value, PrebuildUse::GiveUp},
    {"extra_include_paths", "", "-I", KeywordForm::Each, PrebuildUse::GiveUp},
    {"extra_cuda_cflags", "cuda", "--cuda-flag", KeywordForm::Each, PrebuildUse::Flags},
    {"extra_cflags", "cxx", "--cxx-flag", KeywordForm::Each, PrebuildUse::Flags},
    {"extra_ldflags", "cuda", "--linker-arg", KeywordForm::Each, PrebuildUse::Flags},
    {"extra_ldflags", "cxx", "--ldflag", KeywordForm::Each, PrebuildUse::Flags},
    {"allow_cuda_graph", "", "--no-cuda-graph", KeywordForm::WhenFalse, PrebuildUse::Ignore},
    {"force_rebuild", "", "--force", KeywordForm::WhenTrue, PrebuildUse::Ignore},
    {"build_directory", "", "--output-dir", KeywordForm::Value, PrebuildUse::GiveUp},
    {"ninja_workers", "", "-j", KeywordForm::Value, PrebuildUse::GiveUp},
    {"verbose", "", "-v", KeywordForm::WhenTrue, PrebuildUse::Ignore},
    {"replace", "", "", KeywordForm::None, PrebuildUse::Ignore},
    {"auto_register", "", "", KeywordForm::None, PrebuildUse::Ignore},
};

}  // namespace bekc
