#include "driver/compile_commands.hpp"

#include <nlohmann/json.hpp>
#include <set>

#include "util/error.hpp"

namespace bekc {

namespace {

nlohmann::ordered_json entries(const CompileCommandsRequest& r) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    std::string cwd = fs::current_path().string();
    for (const auto& f : *r.files) {
        std::string file = fs::absolute(f.path).lexically_normal().string();
        std::vector<std::string> args = {"clang++"};
        if (f.cuda) {
            args.insert(args.end(), {"-x", "cuda"});
            if (r.nvcc)
                args.push_back("--cuda-path=" + r.nvcc->path.parent_path().parent_path().string());
            if (!r.archs.empty()) args.push_back("--cuda-gpu-arch=" + r.archs.back().sm());
        }
        args.push_back("-std=" + r.flags.cxx_std);
        for (auto& flag : preprocessor_flags(r.runtime_include, r.flags))
            args.push_back(std::move(flag));
        args.insert(args.end(), {"-c", file});
        out.push_back({{"directory", cwd}, {"file", file}, {"arguments", args}});
    }
    return out;
}

}  // namespace

std::string render_compile_commands(const CompileCommandsRequest& request) {
    return entries(request).dump(2) + "\n";
}

void write_compile_commands(const fs::path& file, const CompileCommandsRequest& request) {
    nlohmann::ordered_json fresh = entries(request);
    std::set<std::string> ours;
    for (const auto& e : fresh) ours.insert(e["file"].get<std::string>());
    nlohmann::ordered_json merged = nlohmann::ordered_json::array();
    if (auto text = read_file(file)) {
        auto old = nlohmann::ordered_json::parse(*text, nullptr, false);
        if (old.is_array())
            for (const auto& e : old)
                if (e.is_object() && e.contains("file") && e["file"].is_string() &&
                    !ours.count(e["file"].get<std::string>()))
                    merged.push_back(e);
    }
    for (auto& e : fresh) merged.push_back(std::move(e));
    write_file_atomic(file, merged.dump(2) + "\n");
}

}  // namespace bekc
