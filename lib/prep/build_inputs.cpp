#include "prep/build_inputs.hpp"

namespace bekc {

ManifestInputs manifest_inputs(const BuildInputs& in) {
    ManifestInputs m;
    m.name = in.name;
    m.target_prefix = in.target_prefix;
    m.library = in.library_file();
    for (const auto& file : in.files) m.sources.push_back({file.cuda, file.functions});
    if (in.nvcc) m.nvcc = ManifestTool{in.nvcc->path.string(), in.nvcc_version};
    m.cxx = {in.cxx.path.string(), in.cxx_version};
    m.archs = in.archs;
    m.flags = in.flags;
    return m;
}

RuntimeObjectId runtime_object_id(const BuildInputs& in) {
    return {in.cache_root, in.cxx.identity(), in.flags.cxx_std, host_compiler_env(in.env)};
}

}  // namespace bekc
