#include "toolchain/tools.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <cctype>

#include <cstdlib>
#include <regex>
#include <sstream>
#include <vector>

#include "run/runner.hpp"
#include "util/error.hpp"

namespace bekc {

ToolLookup ToolLookup::system() {
    ToolLookup l;
    l.env = system_env();
    l.executable = [](const fs::path& p) {
        struct stat st;
        return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
    };
    l.find = [env = l.env, exe = l.executable](const std::string& name) -> std::optional<fs::path> {
        auto path = env("PATH");
        if (!path) return std::nullopt;
        std::stringstream ss(*path);
        std::string dir;
        while (std::getline(ss, dir, ':')) {
            if (dir.empty()) continue;
            fs::path candidate = fs::path(dir) / name;
            if (exe(candidate)) return candidate;
        }
        return std::nullopt;
    };
    return l;
}

std::expected<Tool, Error> identify_tool(const fs::path& path) {
    std::error_code ec;
    fs::path abs = physical_normal(path);
    fs::path real = fs::canonical(abs, ec);
    if (ec) real = abs;
    struct stat st;
    if (::stat(real.c_str(), &st) != 0)
        return fail(ErrorKind::Toolchain, "cannot stat " + real.string());
    Tool t;
    t.path = abs;
    t.canonical = real;
    t.size = static_cast<uint64_t>(st.st_size);
    t.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    return t;
}

std::optional<fs::path> resolve_named(const std::string& value, const ToolLookup& lookup) {
    if (value.find('/') != std::string::npos)
        return lookup.executable(value) ? std::optional<fs::path>(fs::absolute(value))
                                        : std::nullopt;
    return lookup.find(value);
}

namespace {

// A tool the user named: the flag's value, else the variable's, with where
// it came from ("--cxx", "$CXX") for messages.
struct NamedTool {
    std::string value, origin;
};

std::optional<NamedTool> named_tool(const std::optional<std::string>& flag, std::string flag_name,
                                    std::string_view variable, const ToolLookup& lookup) {
    if (flag) return NamedTool{*flag, std::move(flag_name)};
    // Appended, not "$" + name: GCC 12 warns falsely about the insert.
    if (auto v = lookup.env(variable)) return NamedTool{*v, std::string("$").append(variable)};
    return std::nullopt;
}

}  // namespace

std::expected<Tool, Error> find_cxx(const std::optional<std::string>& flag,
                                    const ToolLookup& lookup) {
    if (auto named = named_tool(flag, "--cxx", "CXX", lookup)) {
        if (auto p = resolve_named(named->value, lookup)) return identify_tool(*p);
        return fail(ErrorKind::Toolchain, named->origin + " names '" + named->value +
                                              "', which is not an executable. Give a compiler "
                                              "path or a name on PATH.");
    }
    for (const char* name : {"c++", "g++", "clang++"})
        if (auto p = lookup.find(name)) return identify_tool(*p);
    return fail(ErrorKind::Toolchain,
                "no host C++ compiler found. Searched: $CXX, then c++, g++ and clang++ on PATH. "
                "Install g++ (apt-get install g++) or name one with --cxx PATH or CXX=PATH.");
}

std::expected<std::optional<fs::path>, Error> find_launcher(const std::optional<std::string>& flag,
                                                            const ToolLookup& lookup) {
    auto named = named_tool(flag, "--launcher", "BEKC_LAUNCHER", lookup);
    if (!named) return std::nullopt;
    if (auto p = resolve_named(named->value, lookup)) return *p;
    return fail(ErrorKind::Toolchain, named->origin + " names '" + named->value +
                                          "', which is not an executable. Install it (e.g. "
                                          "apt-get install ccache) or give its path.");
}

std::string tool_version(const Tool& tool, Runner& runner) {
    Command c;
    c.argv = {tool.path.string(), "--version"};
    c.description = "version of " + tool.path.filename().string();
    ProcessResult r = runner.run_one(c);
    return r.ok() ? parse_tool_version(r.output) : "unknown";
}

std::string parse_tool_version(const std::string& output) {
    // nvcc: "Cuda compilation tools, release 13.0, V13.0.48"; gcc: "g++ (Debian 12.2.0-14) 12.2.0";
    // clang: "clang version 14.0.6".
    static const std::regex nvcc_re(R"(release [0-9.]+, V([0-9.]+))");
    static const std::regex generic_re(R"(([0-9]+\.[0-9]+(\.[0-9]+)?))");
    std::smatch m;
    if (std::regex_search(output, m, nvcc_re)) return m[1];
    std::string first_line = output.substr(0, output.find('\n'));
    // The last version-looking number of the first line is the compiler's own.
    std::string found = "unknown";
    for (auto it = std::sregex_iterator(first_line.begin(), first_line.end(), generic_re);
         it != std::sregex_iterator(); ++it)
        found = (*it)[1];
    return found;
}

std::string tool_multiarch(const Tool& cxx, Runner& runner) {
    Command c;
    c.argv = {cxx.path.string(), "-print-multiarch"};
    c.description = "multiarch of " + cxx.path.filename().string();
    ProcessResult r = runner.run_one(c);
    if (!r.ok()) return {};
    std::string out = r.output.substr(0, r.output.find('\n'));
    // A triplet ("x86_64-linux-gnu") is one path component of plain characters.
    for (char ch : out)
        if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.'))
            return {};
    return out == "." || out == ".." ? std::string() : out;
}

}  // namespace bekc
