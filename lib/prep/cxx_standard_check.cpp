#include "prep/cxx_standard_check.hpp"

#include <string_view>

namespace bekc {

namespace {

// A list of flags that can ask for a standard, and how the user gave it.
struct FlagList {
    const std::vector<std::string>& flags;
    std::string_view option;  // "--cxx-flag": each flag was given as --cxx-flag=F
    std::string_view origin;  // what else gives them: "extra_cflags from Python"
};

// "--cuda-flag=-Xcompiler --cuda-flag=-std=c++14 (extra_cuda_cflags from
// Python)", or "-std=c++14 in $NVCC_APPEND_FLAGS".
std::string shown_request(const StandardRequest& r, const FlagList& list) {
    std::string shown;
    for (const auto& f : r.spelled)
        shown += (shown.empty() ? "" : " ") +
                 (list.option.empty() ? f : std::string(list.option) + "=" + f);
    if (list.option.empty()) return shown + " in " + std::string(list.origin);
    return shown + " (" + std::string(list.origin) + ")";
}

std::string too_old(int year) {
    return "asks for " + cxx_standard_title(year) + ", but bekc's runtime headers need " +
           cxx_standard_title(kMinimumCxxStandard) + " or later";
}

// bekc's own --std, which both compilers get.
std::expected<void, Error> check_std_option(const std::string& value) {
    std::optional<int> year = cxx_standard_year(value);
    if (!year)
        return fail(ErrorKind::Usage, "--std " + value +
                                          " names no C++ standard: use c++17 (the default), "
                                          "c++20 or another of c++17 and later");
    if (*year < kMinimumCxxStandard)
        return fail(ErrorKind::Usage, "--std " + value + " " + too_old(*year) +
                                          ": use --std c++17 (the default) or a later standard");
    return {};
}

}  // namespace

std::expected<void, Error> check_cxx_standards(const CompileFlags& flags,
                                               const NvccEnvFlags& nvcc_env,
                                               const ResponseFileWords& files) {
    if (auto ok = check_std_option(flags.cxx_std); !ok) return ok;
    const FlagList lists[] = {
        {flags.cxx_flags, "--cxx-flag", "extra_cflags from Python"},
        {flags.cuda_flags, "--cuda-flag", "extra_cuda_cflags from Python"},
        {nvcc_env.prepend, "", "$NVCC_PREPEND_FLAGS"},
        {nvcc_env.append, "", "$NVCC_APPEND_FLAGS"},
    };
    for (const auto& list : lists)
        for (const auto& r : standard_requests(list.flags, files)) {
            std::optional<int> year = cxx_standard_year(r.value);
            // A name that is no C++ standard is the compiler's to judge.
            if (!year || *year >= kMinimumCxxStandard) continue;
            std::string file = r.file.empty() ? "" : ", through the response file " + r.file + ",";
            return fail(ErrorKind::Usage,
                        shown_request(r, list) + file + " " + too_old(*year) +
                            ": remove it, or ask for c++17 or later (bekc compiles with --std, "
                            "c++17 by default)");
        }
    return {};
}

}  // namespace bekc
