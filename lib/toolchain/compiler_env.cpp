#include "toolchain/compiler_env.hpp"

#include <algorithm>
#include <cstdlib>

#include "util/text.hpp"

namespace bekc {

RawEnvLookup process_environment() {
    return [](std::string_view name) -> std::optional<std::string> {
        const char* v = std::getenv(std::string(name).c_str());
        if (!v) return std::nullopt;
        return std::string(v);
    };
}

std::vector<fs::path> split_search_path(std::string_view value, const fs::path& cwd) {
    std::vector<fs::path> out;
    if (value.empty()) return out;
    size_t start = 0;
    while (true) {
        size_t colon = value.find(':', start);
        std::string_view element = value.substr(
            start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
        fs::path dir = element.empty() ? cwd : fs::path(element);
        if (dir.is_relative()) dir = cwd / dir;
        out.push_back(physical_normal(dir));  // as the compilers open it
        if (colon == std::string_view::npos) break;
        start = colon + 1;
    }
    return out;
}

CompilerEnv read_compiler_env(const RawEnvLookup& env, bool uses_nvcc, const fs::path& cwd) {
    CompilerEnv out;
    for (const auto& var : kCompilerEnv) {
        if (var.reader == EnvReader::Nvcc && !uses_nvcc) continue;
        std::optional<std::string> value = env(var.name);
        if (!value) continue;
        switch (var.role) {
            case EnvRole::IncludePath:
                out.include_dirs = split_search_path(*value, cwd);
                break;
            case EnvRole::SystemIncludePath:
                out.system_include_dirs = split_search_path(*value, cwd);
                break;
            case EnvRole::LibraryPath:
                out.library_dirs = split_search_path(*value, cwd);
                break;
            case EnvRole::Value:
                break;
        }
        out.values.emplace_back(std::string(var.name), std::move(*value));
    }
    if (auto tmpdir = env("TMPDIR"); tmpdir && !tmpdir->empty()) out.tmpdir = *tmpdir;
    return out;
}

std::vector<std::string> NvccEnvFlags::around(const std::vector<std::string>& flags) const {
    std::vector<std::string> out = prepend;
    out.insert(out.end(), flags.begin(), flags.end());
    out.insert(out.end(), append.begin(), append.end());
    return out;
}

NvccEnvFlags nvcc_env_flags(const CompilerEnv& env) {
    NvccEnvFlags out;
    for (const auto& [name, value] : env.values) {
        if (name == "NVCC_PREPEND_FLAGS") out.prepend = split_words(value);
        if (name == "NVCC_APPEND_FLAGS") out.append = split_words(value);
    }
    return out;
}

namespace {

// nvcc's options that choose compiling each input to an object.
bool compiles_only(std::string_view word) {
    for (std::string_view o : {"-c", "--compile", "-dc", "--device-c", "-dw", "--device-w"})
        if (word == o) return true;
    return false;
}

// nvcc's options that choose a phase whose output is no object to link, or
// no library (nvcc --help, "Options for specifying the compilation phase").
bool chooses_other_phase(std::string_view word) {
    for (std::string_view o : {"-cuda",     "--cuda",
                               "-cubin",    "--cubin",
                               "-fatbin",   "--fatbin",
                               "-ptx",      "--ptx",
                               "-optix-ir", "--optix-ir",
                               "-ltoir",    "--ltoir",
                               "-E",        "--preprocess",
                               "-M",        "--generate-dependencies",
                               "-MM",       "--generate-nonsystem-dependencies",
                               "-dlink",    "--device-link",
                               "-lib",      "--lib",
                               "-run",      "--run"})
        if (word == o) return true;
    return false;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> nvcc_link_env(const CompilerEnv& env) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [name, value] : env.values) {
        if (name != "NVCC_PREPEND_FLAGS" && name != "NVCC_APPEND_FLAGS") continue;
        std::vector<std::string> words = split_words(value);
        if (std::none_of(words.begin(), words.end(), compiles_only)) continue;
        std::string kept;
        for (const auto& w : words)
            if (!compiles_only(w)) kept += (kept.empty() ? "" : " ") + w;
        out.emplace_back(name, std::move(kept));
    }
    return out;
}

std::expected<void, Error> check_nvcc_env_phases(const NvccEnvFlags& nvcc_env) {
    for (auto [words, name] : {std::pair{&nvcc_env.prepend, "$NVCC_PREPEND_FLAGS"},
                               std::pair{&nvcc_env.append, "$NVCC_APPEND_FLAGS"}})
        for (const auto& w : *words)
            if (chooses_other_phase(w))
                return std::unexpected(Error::make(
                    ErrorKind::Usage,
                    std::string(name) + " has '" + w +
                        "', which makes nvcc stop before the object or the library bekc "
                        "builds; take it out of " +
                        name +
                        " (bekc compiles each source to an object and links them itself; "
                        "relocatable device code: --cuda-flag=-rdc=true)"));
    return {};
}

std::string host_compiler_env(const CompilerEnv& env) {
    std::string out;
    for (const auto& [name, value] : env.values)
        for (const auto& var : kCompilerEnv)
            if (var.name == name && var.reader == EnvReader::HostCompiler)
                out += name + "=" + value + "\n";
    return out;
}

}  // namespace bekc
