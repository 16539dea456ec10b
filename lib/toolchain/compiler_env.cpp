#include "toolchain/compiler_env.hpp"

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

std::string host_compiler_env(const CompilerEnv& env) {
    std::string out;
    for (const auto& [name, value] : env.values)
        for (const auto& var : kCompilerEnv)
            if (var.name == name && var.reader == EnvReader::HostCompiler)
                out += name + "=" + value + "\n";
    return out;
}

}  // namespace bekc
