#include "plan/arch.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

namespace bekc {

namespace {

std::optional<Arch> parse_one(std::string s) {
    static const std::regex sm_re(R"((?:sm_|compute_)?([0-9]{2,3})([af]?))");
    static const std::regex dotted_re(R"(([0-9]{1,2})\.([0-9])([af]?))");
    std::smatch m;
    if (std::regex_match(s, m, dotted_re))
        return Arch{std::stoi(m[1]) * 10 + std::stoi(m[2]), m[3]};
    if (std::regex_match(s, m, sm_re)) return Arch{std::stoi(m[1]), m[2]};
    return std::nullopt;
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    size_t e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

void sort_unique(std::vector<Arch>& archs) {
    std::sort(archs.begin(), archs.end());
    archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
}

}  // namespace

std::optional<std::vector<Arch>> parse_arch_list(const std::string& list, std::string& error) {
    std::vector<Arch> out;
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) {
        item = trim(item);
        if (item.empty()) continue;
        auto a = parse_one(item);
        if (!a || a->number < 50) {
            error = "--arch: '" + item +
                    "' is not a GPU architecture (write sm_90, 90, 9.0 or sm_90a; or native, auto)";
            return std::nullopt;
        }
        out.push_back(*a);
    }
    if (out.empty()) {
        error = "--arch: empty architecture list";
        return std::nullopt;
    }
    sort_unique(out);
    return out;
}

std::string arch_list_string(const std::vector<Arch>& archs) {
    std::string out;
    for (const auto& a : archs) out += (out.empty() ? "" : ",") + a.sm();
    return out;
}

std::vector<std::string> gencode_flags(const std::vector<Arch>& archs) {
    std::vector<std::string> out;
    for (const auto& a : archs) {
        out.push_back("-gencode");
        out.push_back("arch=" + a.compute() + ",code=" + a.sm());
    }
    if (!archs.empty()) {
        out.push_back("-gencode");
        out.push_back("arch=" + archs.back().compute() + ",code=" + archs.back().compute());
    }
    return out;
}

std::vector<Arch> parse_compute_caps(const std::string& output) {
    std::vector<Arch> out;
    std::stringstream ss(output);
    std::string line;
    while (std::getline(ss, line))
        if (auto a = parse_one(trim(line))) out.push_back(*a);
    sort_unique(out);
    return out;
}

}  // namespace bekc
