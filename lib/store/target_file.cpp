#include "store/target_file.hpp"

#include <nlohmann/json.hpp>

#include "store/layout.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

constexpr int kTargetFormat = 1;

nlohmann::json arch_names(const std::vector<Arch>& archs) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& a : archs) out.push_back(a.sm());
    return out;
}

std::optional<std::vector<Arch>> archs_of(const nlohmann::json& j) {
    if (!j.is_array()) return std::nullopt;
    std::string list;
    for (const auto& a : j) {
        if (!a.is_string()) return std::nullopt;
        list += (list.empty() ? "" : ",") + a.get<std::string>();
    }
    if (list.empty()) return std::vector<Arch>{};
    auto archs = parse_arch_list(list);
    if (!archs) return std::nullopt;
    return std::move(*archs);
}

std::string string_of(const nlohmann::json& j, const char* name, bool& ok) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string()) {
        ok = false;
        return {};
    }
    return it->get<std::string>();
}

}  // namespace

std::string render_target(const LibraryTarget& t) {
    nlohmann::json j = {{"format", kTargetFormat},
                        {"machine", t.machine},
                        {"glibc", t.glibc},
                        {"cuda", t.cuda},
                        {"cudart", t.cudart},
                        {"cudart_dir", t.cudart_dir},
                        {"sass", arch_names(t.sass)},
                        {"ptx", arch_names(t.ptx)},
                        {"nvcc_version", t.nvcc_version},
                        {"cxx_version", t.cxx_version}};
    return dump_json(j, 2) + "\n";
}

std::expected<LibraryTarget, Error> parse_target(std::string_view text) {
    auto j = parse_json(text);
    auto bad = [](const std::string& why) {
        return fail(ErrorKind::Cache, std::string(kTargetFile) + " " + why);
    };
    if (!j || !j->is_object()) return bad("is not a JSON object");
    if (j->value("format", 0) != kTargetFormat) return bad("has another format");
    LibraryTarget t;
    bool ok = true;
    t.machine = string_of(*j, "machine", ok);
    t.glibc = string_of(*j, "glibc", ok);
    t.cuda = string_of(*j, "cuda", ok);
    t.cudart = string_of(*j, "cudart", ok);
    t.cudart_dir = string_of(*j, "cudart_dir", ok);
    t.nvcc_version = string_of(*j, "nvcc_version", ok);
    t.cxx_version = string_of(*j, "cxx_version", ok);
    auto sass = archs_of(j->value("sass", nlohmann::json()));
    auto ptx = archs_of(j->value("ptx", nlohmann::json()));
    if (!ok || !sass || !ptx) return bad("lacks a field or has one of the wrong kind");
    t.sass = std::move(*sass);
    t.ptx = std::move(*ptx);
    return t;
}

std::expected<LibraryTarget, Error> read_target(const CacheDir& cache, const fs::path& entry) {
    auto text = cache.read(entry / kTargetFile, 64 << 10);
    if (!text)
        return fail(ErrorKind::Cache,
                    std::string(kTargetFile) +
                        " is missing (an entry of an older bekc): " + text.error().message);
    return parse_target(*text);
}

}  // namespace bekc
