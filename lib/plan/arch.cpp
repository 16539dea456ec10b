#include "plan/arch.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>

#include "util/text.hpp"

namespace bekc {

namespace {

// Digits only, 1 to `max` of them.
std::optional<int> digits(std::string_view s, size_t max) {
    if (s.empty() || s.size() > max) return std::nullopt;
    int n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    return n;
}

// "sm_90a", "compute_90", "90", "100f", or "9.0a" (no regular expression:
// compiling one cost a third of a cache hit).
std::optional<Arch> parse_one(std::string_view s) {
    std::string suffix;
    if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) {
        suffix = std::string(1, s.back());
        s.remove_suffix(1);
    }
    if (size_t dot = s.find('.'); dot != std::string_view::npos) {
        auto major = digits(s.substr(0, dot), 2);
        auto minor = digits(s.substr(dot + 1), 1);
        if (!major || !minor) return std::nullopt;
        return Arch{*major * 10 + *minor, suffix};
    }
    for (std::string_view prefix : {"sm_", "compute_"})
        if (s.substr(0, prefix.size()) == prefix) {
            s.remove_prefix(prefix.size());
            break;
        }
    if (s.size() < 2) return std::nullopt;
    auto number = digits(s, 3);
    if (!number) return std::nullopt;
    return Arch{*number, suffix};
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
        item = std::string(trim(item));
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
    // Appended piece by piece: `"," + a.sm()` made GCC 12 warn (a false
    // -Wstringop-overflow in the inlined operator+).
    for (const auto& a : archs) {
        if (!out.empty()) out += ',';
        out += a.sm();
    }
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
