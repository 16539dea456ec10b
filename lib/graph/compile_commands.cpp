#include "graph/compile_commands.hpp"

#include <nlohmann/json.hpp>
#include <set>

#include "plan/compile_plan.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

nlohmann::ordered_json entries(const BuildInputs& r, const fs::path& runtime_include) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    std::string cwd = fs::current_path().string();
    for (const auto& f : r.files) {
        std::string file = physical_normal(f.path).string();
        std::vector<std::string> args = {"clang++"};
        if (f.cuda) {
            args.insert(args.end(), {"-x", "cuda"});
            if (r.nvcc)
                args.push_back("--cuda-path=" + r.nvcc->path.parent_path().parent_path().string());
            if (!r.archs.empty()) args.push_back("--cuda-gpu-arch=" + r.archs.back().sm());
        }
        args.push_back("-std=" + r.flags.cxx_std);
        for (auto& flag : preprocessor_flags(runtime_include, r.flags))
            args.push_back(std::move(flag));
        args.insert(args.end(), {"-c", file});
        out.push_back({{"directory", cwd}, {"file", file}, {"arguments", args}});
    }
    return out;
}

// One word for the type of a JSON value, for messages.
std::string type_of(const nlohmann::ordered_json& j) {
    if (j.is_object()) return "an object";
    if (j.is_array()) return "an array";
    if (j.is_string()) return "a string";
    if (j.is_boolean()) return "a boolean";
    if (j.is_number()) return "a number";
    return "null";
}

}  // namespace

std::expected<nlohmann::ordered_json, Error> read_compile_commands(const fs::path& file) {
    std::error_code ec;
    if (fs::status(file, ec).type() == fs::file_type::not_found)
        return nlohmann::ordered_json::array();
    const std::string keep =
        "; --compile-commands leaves it unchanged: fix it, remove it or name another file";
    auto text = read_file(file, ReadOptions{.max_bytes = kMaxCompileCommandsBytes});
    if (!text) return fail(ErrorKind::Usage, "--compile-commands: " + text.error().message);
    // An empty file (touch compile_commands.json) holds no entry to lose.
    if (text->find_first_not_of(" \t\r\n") == std::string::npos)
        return nlohmann::ordered_json::array();
    auto old = parse_user_json(*text, file);
    if (!old) {
        old.error().message += keep;
        return old;
    }
    auto refused = [&](const std::string& why) {
        return std::unexpected(Error::at(ErrorKind::Usage, file.string(), 0,
                                         "not a compilation database: " + why + keep));
    };
    if (!old->is_array())
        return refused("a JSON array of entries was expected, the file holds " + type_of(*old));
    for (size_t i = 0; i < old->size(); ++i)
        if (!(*old)[i].is_object())
            return refused("entry " + std::to_string(i + 1) + " is " + type_of((*old)[i]) +
                           ", not an object");
    return old;
}

std::expected<void, Error> write_compile_commands(const fs::path& file, const BuildInputs& in,
                                                  const fs::path& runtime_include) {
    nlohmann::ordered_json fresh = entries(in, runtime_include);
    std::set<std::string> ours;
    for (const auto& e : fresh) ours.insert(e["file"].get<std::string>());
    auto old = read_compile_commands(file);
    if (!old) return std::unexpected(old.error());
    nlohmann::ordered_json merged = nlohmann::ordered_json::array();
    for (auto& e : *old)
        if (!e.contains("file") || !e["file"].is_string() ||
            !ours.count(e["file"].get<std::string>()))
            merged.push_back(std::move(e));
    for (auto& e : fresh) merged.push_back(std::move(e));
    if (auto w = write_atomic(file, dump_json(merged, 2) + "\n"); !w)
        return fail(ErrorKind::Cache, "--compile-commands: " + w.error().message);
    return {};
}

}  // namespace bekc
