#include "graph/nvcc_split.hpp"

#include "graph/recipe.hpp"
#include "store/hash.hpp"
#include "toolchain/compiler_env.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

// A tool nvcc names without a directory (cudafe++, ptxas, fatbinary), found
// in the PATH nvcc sets for its tools.
bool resolve_programs(NvccPipeline& p, const ToolLookup& tools) {
    std::string path;
    for (const auto& [name, value] : p.env)
        if (name == "PATH") path = value;
    for (auto& phase : p.phases) {
        std::string& program = phase.argv.front();
        if (program.find('/') != std::string::npos) continue;
        std::optional<fs::path> found;
        for (const auto& element : split_path_list(path)) {
            fs::path dir = element;
            if (dir.is_absolute() && tools.executable(dir / program)) {
                found = dir / program;
                break;
            }
        }
        if (!found) return false;
        program = found->string();
    }
    return true;
}

// Whether step `s` compiles one of `in`'s CUDA inputs.
bool compiles_cuda_input(const Step& s, const BuildInputs& in) {
    return s.kind == StepKind::Compile && s.unit && *s.unit < in.files.size() &&
           in.files[*s.unit].cuda;
}

}  // namespace

NvccPhasePlan ask_nvcc_phases(const BuildGraph& graph, const BuildInputs& in, Runner& runner,
                              const ToolLookup& tools) {
    NvccPhasePlan plan;
    if (!in.nvcc || (tools.env && tools.env("BEKC_SPLIT_NVCC") == "0")) return plan;
    // The flags nvcc sees, its environment's too, decide on a device link.
    const std::vector<std::string> nvcc_flags = nvcc_env_flags(in.env).around(in.flags.cuda_flags);
    for (size_t i = graph.steps.size(); i-- > 0;) {
        const Step& s = graph.steps[i];
        if (!compiles_cuda_input(s, in)) continue;
        Command dry;
        dry.argv = nvcc_dryrun_argv(s.command, nvcc_flags);
        if (dry.argv.empty()) continue;
        dry.cwd = s.command.cwd;
        dry.description = "nvcc --dryrun";
        ProcessResult r = runner.run_one(dry);
        if (!r.ok()) continue;
        auto pipeline = parse_nvcc_dryrun(r.output);
        if (!pipeline || !resolve_programs(*pipeline, tools)) continue;
        plan.by_unit.emplace(*s.unit, std::move(*pipeline));
    }
    return plan;
}

std::string nvcc_module_id(const std::string& module, const std::string& orig_src_path,
                           const fs::path& input) {
    std::string name = input.filename().string().substr(0, 64);
    for (char& c : name)
        if (!is_c_identifier_char(c)) c = '_';
    const std::string digest = sha256_hex("bekc module id 1\n" + module + "\n" + orig_src_path);
    return "_" + digest.substr(0, 16) + "_" + name;
}

void split_nvcc_compiles(BuildGraph& graph, const NvccPhasePlan& phases, const BuildInputs& in) {
    // From the last step back: a split moves only the steps after it.
    for (size_t i = graph.steps.size(); i-- > 0;) {
        const Step& s = graph.steps[i];
        if (!compiles_cuda_input(s, in)) continue;
        auto pipeline = phases.by_unit.find(*s.unit);
        if (pipeline == phases.by_unit.end()) continue;
        std::string orig = nvcc_source_path(in, *s.unit, s.command.inputs.front());
        std::string id = nvcc_module_id(in.name, orig, in.files[*s.unit].path);
        (void)split_nvcc_compile(graph, pipeline->second, {i, in.cxx.path, orig, id});
    }
}

}  // namespace bekc
