#include "prep/cudart_choice.hpp"

#include <string_view>
#include <vector>

#include "plan/compile_plan.hpp"
#include "toolchain/nvcc_search.hpp"
#include "toolchain/safe_paths.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

namespace {

struct Choice {
    std::string value;
    std::string from;  // as the user wrote it: "--cuda-flag=-cudart=static"
};

// The -cudart options of one list of flags, taken out of it when `remove`.
// `option` is how each flag was given ("--cuda-flag"), for messages.
std::expected<void, Error> take_from(std::vector<std::string>& list, const std::string& option,
                                     bool remove, std::vector<Choice>& chosen) {
    std::vector<std::string> kept;
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string& a = list[i];
        std::string from = option.empty() ? a : option + "=" + a;
        bool took = false;
        for (std::string_view opt : {"-cudart", "--cudart"}) {
            if (a == opt) {
                if (i + 1 >= list.size())
                    return fail(ErrorKind::Usage, from +
                                                      " needs a value: shared or static (the "
                                                      "CUDA runtime the library links)");
                chosen.push_back({list[i + 1], from + (option.empty() ? " " : " " + option + "=") +
                                                   list[i + 1]});
                ++i;
                took = true;
            } else if (a.size() > opt.size() && a.starts_with(opt) && a[opt.size()] == '=') {
                chosen.push_back({a.substr(opt.size() + 1), from});
                took = true;
            }
            if (took) break;
        }
        if (!took || !remove) kept.push_back(a);
    }
    list = std::move(kept);
    return {};
}

std::expected<void, Error> check_value(const Choice& c) {
    if (c.value != "shared" && c.value != "static")
        return fail(ErrorKind::Usage, c.from +
                                          ": the CUDA runtime is shared or static "
                                          "(docs/cli.md, \"--cudart\")");
    return {};
}

}  // namespace

std::expected<void, Error> take_cudart_option(CompileFlags& flags, bool cuda,
                                              const NvccEnvFlags& nvcc_env) {
    std::vector<Choice> chosen;
    if (!flags.cudart.empty()) chosen.push_back({flags.cudart, "--cudart=" + flags.cudart});
    if (cuda) {
        if (auto ok = take_from(flags.cuda_flags, "--cuda-flag", true, chosen); !ok) return ok;
        if (auto ok = take_from(flags.ldflags, "--ldflag", true, chosen); !ok) return ok;
        // The environment's stay there: nvcc reads them whatever bekc does.
        for (auto [words, name] : {std::pair{nvcc_env.prepend, "$NVCC_PREPEND_FLAGS' "},
                                   std::pair{nvcc_env.append, "$NVCC_APPEND_FLAGS' "}}) {
            size_t before = chosen.size();
            if (auto ok = take_from(words, "", false, chosen); !ok) return ok;
            for (size_t i = before; i < chosen.size(); ++i) chosen[i].from = name + chosen[i].from;
        }
    }
    for (const auto& c : chosen)
        if (auto ok = check_value(c); !ok) return ok;
    for (const auto& c : chosen)
        if (c.value != chosen.front().value)
            return fail(ErrorKind::Usage, chosen.front().from + " and " + c.from +
                                              " choose different CUDA runtimes; give one");
    flags.cudart = cuda && !chosen.empty() ? chosen.front().value : "";
    return {};
}

std::expected<void, Error> resolve_cudart(BuildInputs& in, const Reporter& report) {
    std::string& kind = in.flags.cudart;
    if (kind == "static") return {};
    std::optional<fs::path> lib = shared_cudart(*in.nvcc, in.nvcc_version);
    std::string problem;
    if (!lib) {
        problem = std::string("the toolkit of ") + in.nvcc->path.string() +
                  " has no shared CUDA runtime (libcudart.so.<major version>)";
    } else if (!fits_nvcc_compiler_option(lib->string())) {
        problem = lib->string() +
                  " has a comma, white space or shell syntax, which nvcc's linker "
                  "options cannot carry";
    } else if (!in.base.empty() && path_is_under(*lib, in.base.dir())) {
        // Keyed relative to the base, the library would serve other
        // checkouts with this one's directory as its RUNPATH.
        problem = lib->string() +
                  " is under $BEKC_BASE_DIR, and a library that checkouts "
                  "share cannot name it";
    } else if (needs_device_link(in.flags, in.link_reads_opaque_code) &&
               !fs::is_regular_file(lib->parent_path() / "libcudart.so")) {
        problem = "nvcc's device link names the runtime as -lcudart, and " +
                  lib->parent_path().string() + " has no libcudart.so";
    }
    if (problem.empty()) {
        kind = "shared";
        in.cudart_library = std::move(lib);
    } else if (kind.empty()) {
        kind = "static";
        report.info("the static CUDA runtime: " + problem);
    } else {
        return fail(ErrorKind::Toolchain, std::string("--cudart=shared: ") + problem +
                                              "; link the static runtime with --cudart=static");
    }
    return {};
}

}  // namespace bekc
