#include "store/step_cache.hpp"

#include "store/file_ops.hpp"
#include "util/fs.hpp"

namespace bekc {

namespace {

constexpr std::string_view kMetaFile = "meta.json";

}  // namespace

std::optional<StepResult> StepCache::find(std::string_view key, size_t count) const {
    fs::path rel = CacheLayout::step(key);
    // Full: step outputs are not libraries, with no cheap ladder of their own.
    auto sealed = check_seal(cache_.dir(), rel, CheckLevel::Full);
    if (!sealed || !sealed->contains(std::string(kMetaFile))) return std::nullopt;
    StepResult r;
    r.meta = sealed->at(std::string(kMetaFile));
    for (size_t i = 0; i < count; ++i) {
        auto file = sealed->find(std::to_string(i));
        if (file == sealed->end()) return std::nullopt;
        r.files.push_back(std::move(file->second));
    }
    // Its last use, which the size limit goes by (oldest first).
    cache_.dir().touch(rel / std::string(kLastUseFile));
    return r;
}

std::expected<void, Error> StepCache::store(std::string_view key,
                                            const std::vector<fs::path>& files,
                                            std::string_view meta, bool replace) const {
    auto write = [&](const Staging& staging) -> std::expected<void, Error> {
        for (size_t i = 0; i < files.size(); ++i) {
            auto text = read_file(files[i]);
            if (!text) return fail(ErrorKind::Cache, "cannot read " + files[i].string());
            if (auto w = staging.write(std::to_string(i), *text); !w) return w;
        }
        return staging.write(std::string(kMetaFile), meta);
    };
    auto tree = cache_.ensure_tree(CacheLayout::step(key), CacheLayout::lock(key), write, replace);
    if (!tree) return std::unexpected(tree.error());
    return {};
}

}  // namespace bekc
