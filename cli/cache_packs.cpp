#include "cache_packs.hpp"

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/fatal.hpp"
#include "store/cache.hpp"
#include "store/cache_layers.hpp"
#include "util/json_text.hpp"

namespace bekc::cli {

namespace {

namespace fs = std::filesystem;

// The pack a layer is, when its marker says so.
std::optional<PackInfo> pack_of(const fs::path& dir) {
    auto info = read_pack_info(dir);
    return info ? *info : std::nullopt;
}

std::string pack_line(const PackInfo& p) {
    std::string archs;
    for (const std::string& arch : p.archs) archs += (archs.empty() ? "" : ",") + arch;
    return fmt::format("  pack {} {}  cuda {}  archs {}  {} {}", p.name, p.version,
                       p.cuda.empty() ? "none" : p.cuda, archs.empty() ? "none" : archs,
                       p.modules.size(), p.modules.size() == 1 ? "module" : "modules");
}

nlohmann::json pack_json(const PackInfo& p) {
    return {{"name", p.name}, {"version", p.version}, {"bekc_version", p.bekc_version},
            {"cuda", p.cuda}, {"archs", p.archs},     {"modules", p.modules}};
}

bool installed(const CacheLayers& layers, const fs::path& dir) {
    for (const auto& pack : layers.packs)
        if (pack.dir == dir) return true;
    return false;
}

int list_layers(const CacheLayers& layers, bool json) {
    nlohmann::json out = nlohmann::json::array();
    for (const fs::path& dir : layers.read_only) {
        auto pack = pack_of(dir);
        if (json) {
            out.push_back({{"path", dir.string()},
                           {"installed", installed(layers, dir)},
                           {"pack", pack ? pack_json(*pack) : nlohmann::json(nullptr)}});
            continue;
        }
        std::printf("%s%s\n", dir.c_str(), pack ? pack_line(*pack).c_str() : "");
    }
    if (json) std::printf("%s\n", dump_json(out, 2).c_str());
    if (!json && layers.read_only.empty())
        std::printf("(no read-only caches or installed packs)\n");
    return kExitOk;
}

int verify_layers(const CacheLayers& layers) {
    size_t damaged = 0;
    for (const fs::path& dir : layers.read_only) {
        auto report = Cache(dir, {}, CacheAccess::ReadOnly).inspect();
        if (!report) {
            std::printf("%s: cannot be checked: %s\n", dir.c_str(), report.error().message.c_str());
            ++damaged;
            continue;
        }
        for (const auto& [what, why] : report->damaged)
            std::printf("damaged in %s: %s: %s\n", dir.c_str(), what.c_str(), why.c_str());
        damaged += report->damaged.size();
        std::printf("%s: %zu entries checked, %zu damaged (left as they are)\n", dir.c_str(),
                    report->checked, report->damaged.size());
    }
    return damaged ? kExitSourceError : kExitOk;
}

int remove_pack(const std::vector<fs::path>& sites, const std::string& name) {
    InstalledPackDir found = or_fatal(find_installed_pack(sites, name));
    if (!found.pip_distribution.empty()) {
        std::fprintf(stderr,
                     "bekc: error: %s is installed by pip: run pip uninstall bekc_pack_%s\n",
                     found.dir.c_str(), name.c_str());
        return kExitUsage;
    }
    or_fatal(remove_installed_pack(found));
    std::printf("removed %s\n", found.dir.c_str());
    return kExitOk;
}

}  // namespace

int cache_packs(const std::optional<std::string>& cache_dir, const PacksOptions& o,
                const Settings& settings) {
    fs::path cwd = fs::current_path();
    CacheLayers layers = or_fatal(resolve_cache_layers(cache_dir, o.read_only_caches,
                                                       settings.lookup(), cwd, o.python_sites));
    for (const auto& skipped : layers.skipped)
        std::fprintf(stderr, "bekc: warning: %s\n", skipped.message().c_str());
    if (o.remove) return remove_pack(pack_sites(o.python_sites, settings.lookup(), cwd), *o.remove);
    if (o.verify) return verify_layers(layers);
    return list_layers(layers, o.json);
}

}  // namespace bekc::cli
