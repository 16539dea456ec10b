#include "store/manifest.hpp"

#include <nlohmann/json.hpp>

#include "scan/symbols.hpp"
#include "util/json_text.hpp"
#include "util/version.hpp"

namespace bekc {

std::string render_manifest(const ManifestInputs& in, const ManifestOutput& out, bool cuda_graph) {
    using nlohmann::ordered_json;
    ordered_json targets = ordered_json::array();
    for (const auto& file : in.sources) {
        for (const auto& fn : file.functions) {
            ordered_json attrs = ordered_json::array();
            for (const auto& t : fn.tokens)
                if (t.kind == TokenKind::Attr)
                    attrs.push_back({{"name", t.attr_name},
                                     {"type", std::string(attr_type_info(t.attr_type).name)}});
            targets.push_back({
                {"name", target_name(in.target_prefix, fn.name)},
                {"symbol", cuda_graph ? handler_symbol(fn.name) : handler_symbol_nograph(fn.name)},
                {"function", fn.name},
                {"platform", file.cuda ? "CUDA" : "cpu"},
                {"arg_spec", fn.canonical_tokens()},
                {"num_args", fn.num_args()},
                {"num_rets", fn.num_rets()},
                {"attrs", attrs},
                {"command_buffer_compatible", cuda_graph},
                {"source", fn.annotation.file + ":" + std::to_string(fn.annotation.line)},
            });
        }
    }
    ordered_json archs = ordered_json::array();
    for (const auto& a : in.archs) archs.push_back(a.sm());
    ordered_json nvcc = nullptr;
    if (in.nvcc) nvcc = {{"path", in.nvcc->path}, {"version", in.nvcc->version}};
    ordered_json m = {
        {"schema", 1},
        {"bekc_version", kVersion},
        {"name", in.name},
        {"key", out.key},
        {"library", in.library},
        {"library_sha256", out.library_sha256},
        {"toolchain",
         {{"nvcc", nvcc},
          {"cxx", {{"path", in.cxx.path}, {"version", in.cxx.version}}},
          {"archs", archs},
          {"cudart", in.nvcc ? ordered_json(in.flags.cudart) : ordered_json(nullptr)}}},
        {"flags",
         {{"opt_level", in.flags.opt_level},
          {"fast_math", in.flags.fast_math},
          {"std", in.flags.cxx_std},
          {"defines", in.flags.defines},
          {"include_dirs", in.flags.include_dirs},
          {"cuda_flags", in.flags.cuda_flags},
          {"cxx_flags", in.flags.cxx_flags},
          {"ldflags", in.flags.ldflags}}},
        {"targets", targets},
    };
    return dump_json(m, 2) + "\n";
}

}  // namespace bekc
