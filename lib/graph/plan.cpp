#include "graph/plan.hpp"

#include "graph/keys.hpp"
#include "scan/symbols.hpp"

namespace bekc {

std::expected<PlannedBuild, Error> plan(const BuildInputs& in, const BuildOptions& o) {
    PlannedBuild p;
    for (const auto& f : in.files)
        for (const auto& fn : f.functions)
            p.targets.push_back(target_name(in.target_prefix, fn.name));
    KeyBuilder portable = portable_key_builder(in, o);
    p.portable_key = portable.digest();
    if (o.explain_key) p.portable_key_record = portable.explain();
    // No toolchain: the portable key is all there is to look up.
    if (in.toolchain_missing) return p;
    p.recipe = graph_recipe(in);
    auto graph = fill_in(p.recipe, placeholder_dirs());
    if (!graph) return std::unexpected(graph.error());
    p.graph = std::move(*graph);
    KeyBuilder direct = direct_key_builder(in, p.graph);
    p.direct_key = direct.digest();
    p.direct_key_record = direct.explain();
    p.dir_name = build_dir_name(in, p.direct_key);
    return p;
}

}  // namespace bekc
