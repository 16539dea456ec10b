#include "config/cache_choice.hpp"

#include <memory>
#include <set>

#include "config/settings.hpp"
#include "store/cache_layers.hpp"
#include "store/layout.hpp"

namespace bekc {

std::expected<CacheChoice, Error> choose_cache(const std::optional<std::string>& cache_dir_flag,
                                               const EnvLookup& process_env) {
    auto read = std::make_shared<std::set<std::string>>();
    EnvLookup recording = [read, process_env](std::string_view name) {
        read->emplace(name);
        return process_env(name);
    };
    auto settings = load_settings(cache_dir_flag, recording);
    if (!settings) {
        std::string lines;
        for (const auto& e : settings.error()) lines += (lines.empty() ? "" : "\n") + e;
        return fail(ErrorKind::Usage, lines);
    }
    const EnvLookup env = settings->lookup();
    auto dir = resolve_cache_root(cache_dir_flag, env);
    if (!dir) return std::unexpected(dir.error());
    auto own = resolve_own_cache(cache_dir_flag, env);
    if (!own) return std::unexpected(own.error());
    return CacheChoice{*dir, own->root, own->demoted, {read->begin(), read->end()}};
}

nlohmann::ordered_json cache_choice_json(const CacheChoice& choice) {
    return {{"dir", choice.dir.string()},
            {"own", choice.own.string()},
            {"demoted", choice.demoted ? nlohmann::ordered_json(choice.demoted->string())
                                       : nlohmann::ordered_json(nullptr)},
            {"variables", choice.variables}};
}

}  // namespace bekc
