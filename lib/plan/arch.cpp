#include "plan/arch.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
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

// The architectures nvcc has compiled for, from CUDA 11 to 13 (`nvcc
// --list-gpu-code`), oldest first: what a refusal lists and guesses from.
// bekc takes any number from 50 on, so a newer nvcc's needs no change here.
constexpr int kKnownArchs[] = {50, 52, 53, 60, 61, 62,  70,  72,  75,  80,
                               86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
constexpr int kOldestArch = 50;

bool known_arch(int number) {
    return std::find(std::begin(kKnownArchs), std::end(kKnownArchs), number) !=
           std::end(kKnownArchs);
}

// The note every refusal of a readable spelling ends with.
std::string known_archs_note() {
    std::string list;
    for (int n : kKnownArchs) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(n);
    return "the architectures bekc knows: " + list +
           ", and their arch-specific variants with an 'a' or 'f' suffix (sm_90a, sm_100f); "
           "`nvcc --list-gpu-code` names those your nvcc compiles for";
}

// "'1.0' (sm_10)", or "'sm_10'" where the spelling is the architecture's.
std::string spelled_as(const Spelled& s, const std::string& item) {
    return "'" + item + "'" + (item == s.text ? "" : " (" + s.text + ")");
}

// "did you mean sm_NN?" for a known architecture of number `n`, else "".
std::string did_you_mean(int n) {
    return known_arch(n) ? "did you mean sm_" + std::to_string(n) + "?" : "";
}

Error arch_refusal(std::string message, const std::string& guess) {
    Error e = Error::make(ErrorKind::Usage, std::string(kArchRefusalPrefix) + std::move(message));
    if (!guess.empty()) e.note(guess);
    return e;
}

// Why nvcc cannot compile for an architecture spelled right, if it cannot.
std::optional<Error> unsupported(const Spelled& s, const std::string& item) {
    const int n = s.arch.number;
    std::optional<Error> e;
    if (n < 20)
        e = arch_refusal(spelled_as(s, item) + " names no GPU: " + std::string(kArchNoGpuWords),
                         did_you_mean(n * 10));
    else if (s.text != s.arch.sm())
        e = arch_refusal(
            "nvcc does not compile for " + spelled_as(s, item) + ": the number has a leading zero",
            did_you_mean(n));
    else if (!s.arch.suffix.empty() && s.arch.suffix != "a" && s.arch.suffix != "f")
        e = arch_refusal("nvcc does not compile for " + spelled_as(s, item) + ": '" +
                             s.arch.suffix +
                             "' is not an architecture suffix (nvcc's are 'a' and 'f')",
                         did_you_mean(n));
    else if (n < kOldestArch)
        e = arch_refusal("nvcc does not compile for " + spelled_as(s, item) + ": bekc takes sm_" +
                             std::to_string(kOldestArch) + " and newer",
                         "");
    if (e) e->note(known_archs_note());
    return e;
}

// A spelling no architecture reads as, with a guess from its digits ("sm86",
// "SM-120") when they name a known architecture.
Error unreadable(const std::string& item) {
    std::string digits;
    for (char c : item)
        if (c >= '0' && c <= '9') digits += c;
    const int n = digits.empty() || digits.size() > 3 ? 0 : std::stoi(digits);
    return arch_refusal("'" + item + "' " + std::string(kArchUnreadableWords) +
                            " (write sm_90, 90, 9.0 or sm_90a; or native, auto)",
                        did_you_mean(n));
}

void sort_unique(std::vector<Arch>& archs) {
    std::sort(archs.begin(), archs.end());
    archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
}

}  // namespace

std::expected<std::vector<Arch>, Error> parse_arch_list(const std::string& list) {
    std::vector<Arch> out;
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) {
        item = std::string(trim(item));
        if (item.empty()) continue;
        auto a = parse_one(item);
        if (!a) return std::unexpected(unreadable(item));
        if (auto refused = unsupported(*a, item)) return std::unexpected(std::move(*refused));
        out.push_back(a->arch);
    }
    if (out.empty()) return fail(ErrorKind::Usage, "--arch: empty architecture list");
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

bool flags_name_gpu_archs(const std::vector<std::string>& nvcc_flags) {
    // nvcc's options that choose the virtual or the real architectures.
    constexpr std::string_view kArchOptions[] = {
        "-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code"};
    for (const std::string& flag : nvcc_flags)
        for (std::string_view option : kArchOptions)
            if (flag == option || (flag.starts_with(option) && flag.size() > option.size() &&
                                   flag[option.size()] == '='))
                return true;
    return false;
}

std::vector<Arch> arch_union(std::vector<Arch> a, const std::vector<Arch>& b) {
    a.insert(a.end(), b.begin(), b.end());
    sort_unique(a);
    return a;
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
