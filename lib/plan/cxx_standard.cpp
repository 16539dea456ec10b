#include "plan/cxx_standard.hpp"

#include <utility>

namespace bekc {

namespace {

// The part of a standard's name after "c++" or "gnu++", and its year: the
// published number and the name each had while it was a draft.
constexpr std::pair<std::string_view, int> kStandardYears[] = {
    {"98", 1998}, {"03", 2003}, {"0x", 2011}, {"11", 2011}, {"1y", 2014},
    {"14", 2014}, {"1z", 2017}, {"17", 2017}, {"2a", 2020}, {"20", 2020},
    {"2b", 2023}, {"23", 2023}, {"2c", 2026}, {"26", 2026},
};

// The options that ask for a standard: with the value after '=' or in the
// next flag.
constexpr std::string_view kStdOptions[] = {"-std", "--std"};

// nvcc's options whose value holds options for the host compiler.
constexpr std::string_view kHostCompilerOptions[] = {"-Xcompiler", "--compiler-options"};

// nvcc's options whose value names a response file.
constexpr std::string_view kOptionsFiles[] = {"--options-file", "-optf"};

// A nesting this deep is a loop or a mistake (toolchain/flag_files.cpp
// refuses it before this is asked).
constexpr int kMaxStandardFileDepth = 16;

// What the host compiler gets of one such value: nvcc splits it at commas,
// and the shell nvcc runs the host compiler through at white space.
std::vector<std::string> host_compiler_words(std::string_view value) {
    std::vector<std::string> out;
    std::string word;
    for (char c : value) {
        if (c != ',' && c != ' ' && c != '\t' && c != '\n') {
            word += c;
        } else if (!word.empty()) {
            out.push_back(std::move(word));
            word.clear();
        }
    }
    if (!word.empty()) out.push_back(std::move(word));
    return out;
}

// `option` as one flag ("-std=c++14") or as itself followed by a value in the
// next flag: the value, and how many flags it took; nullopt when `flags[i]`
// is not `option`.
std::optional<std::pair<std::string, size_t>> option_value(const std::vector<std::string>& flags,
                                                           size_t i, std::string_view option) {
    std::string_view a = flags[i];
    if (a.size() > option.size() && a.starts_with(option) && a[option.size()] == '=')
        return std::pair{std::string(a.substr(option.size() + 1)), size_t{1}};
    if (a != option) return std::nullopt;
    if (i + 1 >= flags.size()) return std::pair{std::string(), size_t{1}};
    return std::pair{flags[i + 1], size_t{2}};
}

class RequestFinder {
  public:
    explicit RequestFinder(const ResponseFileWords& files) : files_(files) {}

    std::vector<StandardRequest> in(const std::vector<std::string>& flags, int depth) {
        std::vector<StandardRequest> out;
        for (size_t i = 0; i < flags.size();) i += at(flags, i, depth, out);
        return out;
    }

  private:
    // The requests of `flags[i]` (and the flag after it, for an option with a
    // separate value), appended to `out`; the number of flags it took.
    size_t at(const std::vector<std::string>& flags, size_t i, int depth,
              std::vector<StandardRequest>& out) {
        auto spelled = [&](size_t n) {
            auto from = flags.begin() + static_cast<std::ptrdiff_t>(i);
            return std::vector<std::string>(from, from + static_cast<std::ptrdiff_t>(n));
        };
        // What a request inside the value or the file of these `n` flags is.
        auto nested = [&](size_t n, const std::vector<std::string>& words, std::string file) {
            for (auto& r : in(words, depth + 1))
                out.push_back({std::move(r.value), spelled(n), r.file.empty() ? file : r.file});
            return n;
        };
        if (flags[i] == "-ansi") {
            out.push_back({"c++98", spelled(1), ""});
            return 1;
        }
        for (std::string_view option : kStdOptions)
            if (auto v = option_value(flags, i, option)) {
                if (!v->first.empty()) out.push_back({v->first, spelled(v->second), ""});
                return v->second;
            }
        for (std::string_view option : kHostCompilerOptions)
            if (auto v = option_value(flags, i, option))
                return nested(v->second, host_compiler_words(v->first), "");
        for (std::string_view option : kOptionsFiles)
            if (auto v = option_value(flags, i, option)) {
                const auto* words = read(v->first, depth);
                return words ? nested(v->second, *words, v->first) : v->second;
            }
        if (flags[i].size() > 1 && flags[i][0] == '@')
            if (const auto* words = read(flags[i].substr(1), depth))
                return nested(1, *words, flags[i].substr(1));
        return 1;
    }

    const std::vector<std::string>* read(std::string_view name, int depth) const {
        if (!files_ || name.empty() || depth >= kMaxStandardFileDepth) return nullptr;
        return files_(name);
    }

    const ResponseFileWords& files_;
};

}  // namespace

std::optional<int> cxx_standard_year(std::string_view name) {
    for (std::string_view prefix : {"c++", "gnu++"}) {
        if (!name.starts_with(prefix)) continue;
        std::string_view number = name.substr(prefix.size());
        for (const auto& [spelling, year] : kStandardYears)
            if (number == spelling) return year;
    }
    return std::nullopt;
}

std::string cxx_standard_title(int year) {
    std::string two = std::to_string(year % 100);
    return "C++" + (two.size() < 2 ? "0" + two : two);
}

std::vector<StandardRequest> standard_requests(const std::vector<std::string>& flags,
                                               const ResponseFileWords& files) {
    return RequestFinder(files).in(flags, 0);
}

}  // namespace bekc
