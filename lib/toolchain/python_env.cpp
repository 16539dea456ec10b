#include "toolchain/python_env.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "util/text.hpp"

namespace bekc {

std::vector<fs::path> python_prefixes(const EnvLookup& env) {
    std::vector<fs::path> prefixes;
    auto add = [&](const fs::path& p) {
        fs::path n = p.lexically_normal();
        if (std::find(prefixes.begin(), prefixes.end(), n) == prefixes.end())
            prefixes.push_back(std::move(n));
    };
    for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
        if (auto dir = env(var)) add(*dir);
    if (auto path = env("PATH"))
        for (const auto& dir : split_path_list(*path))
            if (::access((fs::path(dir) / "python3").c_str(), X_OK) == 0)
                add(fs::path(dir).parent_path());
    for (const char* system : {"/usr/local", "/usr"}) add(system);
    if (auto home = env("HOME")) add(fs::path(*home) / ".local");
    return prefixes;
}

std::vector<fs::path> site_packages_dirs(const fs::path& prefix) {
    std::vector<fs::path> pythons;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(prefix / "lib", ec)) {
        std::string n = e.path().filename().string();
        if (n.rfind("python3", 0) == 0) pythons.push_back(e.path());
    }
    // python3.12 before python3.9: by the minor version, as a number.
    auto minor = [](const fs::path& p) {
        std::string n = p.filename().string();
        return n.size() > 8 ? std::atoi(n.c_str() + 8) : -1;
    };
    std::sort(pythons.begin(), pythons.end(),
              [&](const fs::path& a, const fs::path& b) { return minor(a) > minor(b); });
    std::vector<fs::path> out;
    for (const auto& py : pythons)
        for (const char* packages : {"site-packages", "dist-packages"})
            if (fs::is_directory(py / packages, ec)) out.push_back(py / packages);
    return out;
}

}  // namespace bekc
