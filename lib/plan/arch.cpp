#include "plan/arch.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string_view>

#include "util/text.hpp"

namespace bekc {

namespace {

// One element as brainevent's normalize_arch reads it: case does not matter,
// one "sm_" or "compute_" prefix is dropped, a trailing letter is a suffix,
// and every '.' is dropped ("8.6", "sm_8.6", ".86" and "8.6." are all 86);
// what is left must be two or three digits. `text` gets brainevent's result
// ("sm_86", "sm_086"). (No regular expression: compiling one cost a third of
// a cache hit.)
struct Spelled {
    Arch arch;
    std::string text;
};

std::optional<Spelled> parse_one(std::string_view item) {
    std::string s;
    for (char c : item) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view rest = s;
    for (std::string_view prefix : {"sm_", "compute_"})
        if (rest.starts_with(prefix)) {
            rest.remove_prefix(prefix.size());
            break;
        }
    std::string suffix;
    if (!rest.empty() && rest.back() >= 'a' && rest.back() <= 'z') {
        suffix = std::string(1, rest.back());
        rest.remove_suffix(1);
    }
    std::string digits;
    for (char c : rest) {
        if (c == '.') continue;
        if (c < '0' || c > '9') return std::nullopt;
        digits += c;
    }
    if (digits.size() < 2 || digits.size() > 3) return std::nullopt;
    return Spelled{Arch{std::stoi(digits), suffix}, "sm_" + digits + suffix};
}

// Why nvcc cannot compile for an architecture spelled right, or "".
std::string unsupported(const Spelled& s, const std::string& item) {
    const std::string head = "--arch: '" + item + "' is " + s.text;
    if (s.arch.number < 20) return head + ", and no CUDA GPU has a major version below 2";
    if (s.arch.number < 50 || s.text != s.arch.sm() ||
        (!s.arch.suffix.empty() && s.arch.suffix != "a" && s.arch.suffix != "f"))
        return head +
               ", which nvcc does not compile for (bekc takes sm_50 and newer, with an 'a' or "
               "'f' suffix at most)";
    return "";
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
        if (!a) {
            error = "--arch: '" + item +
                    "' is not a GPU architecture (write sm_90, 90, 9.0 or sm_90a; or native, auto)";
            return std::nullopt;
        }
        if (error = unsupported(*a, item); !error.empty()) return std::nullopt;
        out.push_back(a->arch);
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
        if (auto a = parse_one(trim(line))) out.push_back(a->arch);
    sort_unique(out);
    return out;
}

}  // namespace bekc
