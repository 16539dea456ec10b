// store/cache_layers.hpp's installed packs: the read-only layers a Python
// environment brings with no set-up (docs/cache.md, "Installed packs").
#include <algorithm>

#include <fmt/format.h>

#include "store/cache_dir.hpp"
#include "store/cache_layers.hpp"
#include "store/layout.hpp"

namespace bekc {

namespace {

constexpr std::string_view kPacksDir = "bekc_packs";

// The names in `dir` sorted, "" for each that cannot be listed; the error is
// why `dir` cannot be listed at all (nothing when it is missing).
std::expected<std::vector<std::string>, std::string> sorted_names(const fs::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
        if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory)
            return names;
        return std::unexpected(ec.message());
    }
    for (; !ec && it != fs::directory_iterator(); it.increment(ec))
        names.push_back(it->path().filename().string());
    if (ec) return std::unexpected(ec.message());
    std::sort(names.begin(), names.end());
    return names;
}

// Why the cache at `dir` cannot serve as an installed pack, or "".
std::string pack_problem(const fs::path& dir, const std::string& bekc_version,
                         std::optional<PackInfo>& info) {
    std::string problem = layer_problem(dir);
    std::error_code ec;
    bool has_marker = fs::is_regular_file(fs::symlink_status(dir / kMarkerFile, ec));
    // A marker that is there but does not parse: say so, not "it has none".
    if (!problem.empty() && !(has_marker && problem.starts_with("it is not a bekc cache")))
        return problem;
    auto read = read_pack_info(dir);
    if (!read) return read.error().message;
    if (!problem.empty()) return problem;
    if (!*read) return fmt::format("its {} has no \"pack\" object", kMarkerFile);
    if ((*read)->bekc_version != bekc_version)
        return fmt::format(
            "it was made by bekc {} and this is bekc {}, whose keys none of its entries can "
            "match; install the pack's release for bekc {}",
            (*read)->bekc_version, bekc_version, bekc_version);
    info = std::move(*read);
    return {};
}

// The .dist-info directory of `site` whose RECORD lists a file under
// bekc_packs/<name>/, or "".
std::string pip_owner(const fs::path& site, const std::string& name) {
    std::string prefix = fmt::format("{}/{}/", kPacksDir, name);
    for (const std::string& info : sorted_names(site).value_or(std::vector<std::string>{})) {
        if (!info.ends_with(".dist-info")) continue;
        auto record = read_file(site / info / "RECORD", ReadOptions{kDefaultReadLimit, false});
        if (!record) continue;
        for (std::string_view rest = *record; !rest.empty();) {
            size_t end = rest.find('\n');
            std::string_view line = rest.substr(0, end);
            if (line.starts_with(prefix)) return info;
            rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        }
    }
    return {};
}

bool already_layer(const CacheLayers& layers, const fs::path& dir) {
    auto same = [&](const fs::path& other) {
        return other.lexically_normal() == dir.lexically_normal();
    };
    return same(layers.own) || std::any_of(layers.read_only.begin(), layers.read_only.end(), same);
}

}  // namespace

std::vector<fs::path> pack_sites(const std::vector<std::string>& python_sites, const EnvLookup& env,
                                 const fs::path& cwd) {
    std::vector<fs::path> sites;
    for (const std::string& site : python_sites)
        if (!site.empty()) sites.push_back((cwd / site).lexically_normal());
    auto venv = env("VIRTUAL_ENV");
    if (!venv || venv->empty() || !fs::path(*venv).is_absolute()) return sites;
    fs::path lib = fs::path(*venv) / "lib";
    for (const std::string& name : sorted_names(lib).value_or(std::vector<std::string>{}))
        if (name.rfind("python3", 0) == 0) sites.push_back(lib / name / "site-packages");
    return sites;
}

void add_installed_packs(CacheLayers& layers, const std::vector<fs::path>& sites,
                         const std::string& bekc_version) {
    for (const fs::path& site : sites) {
        fs::path packs = site / kPacksDir;
        auto names = sorted_names(packs);
        if (!names) {
            layers.skipped.push_back(
                {packs, "it cannot be read: " + names.error(), "directory of installed packs"});
            continue;
        }
        for (const std::string& name : *names) {
            // pip's leftovers of an uninstall (~name) and hidden names.
            if (name.empty() || name.front() == '.' || name.front() == '~') continue;
            fs::path dir = packs / name;
            if (already_layer(layers, dir)) continue;
            std::optional<PackInfo> info;
            if (std::string why = pack_problem(dir, bekc_version, info); !why.empty()) {
                layers.skipped.push_back({dir, std::move(why), "installed pack"});
                continue;
            }
            layers.read_only.push_back(dir);
            layers.packs.push_back({dir, std::move(*info)});
        }
    }
}

std::expected<InstalledPackDir, Error> find_installed_pack(const std::vector<fs::path>& sites,
                                                           const std::string& name) {
    if (std::string why = pack_name_problem(name); !why.empty())
        return fail(ErrorKind::Usage, fmt::format("pack name \"{}\" {}", name, why));
    for (const fs::path& site : sites) {
        fs::path dir = site / kPacksDir / name;
        std::error_code ec;
        if (!fs::exists(fs::symlink_status(dir, ec))) continue;
        return InstalledPackDir{dir, pip_owner(site, name)};
    }
    std::string searched;
    for (const fs::path& site : sites) searched += "\n  " + (site / kPacksDir).string();
    return fail(
        ErrorKind::Usage,
        fmt::format("no installed pack \"{}\"; looked in:{}", name,
                    searched.empty() ? " (no Python site: give --python-site DIR)" : searched));
}

std::expected<void, Error> remove_installed_pack(const InstalledPackDir& found) {
    if (!found.pip_distribution.empty())
        return fail(ErrorKind::Usage, fmt::format("{} is installed by pip ({})", found.dir.string(),
                                                  found.pip_distribution));
    if (std::string problem = layer_problem(found.dir); !problem.empty())
        return fail(ErrorKind::Cache,
                    fmt::format("{} is not removed: {}", found.dir.string(), problem));
    auto info = read_pack_info(found.dir);
    if (!info) return std::unexpected(info.error());
    if (!*info)
        return fail(ErrorKind::Cache,
                    fmt::format("{} is not removed: it is not a pack (its {} has no \"pack\" "
                                "object)",
                                found.dir.string(), kMarkerFile));
    return CacheDir(found.dir.parent_path()).remove_tree(found.dir.filename());
}

}  // namespace bekc
