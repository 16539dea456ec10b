// Small checks and edits on text that several layers share.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace bekc {

// `s` without leading and trailing white space (std::isspace).
inline std::string_view trim(std::string_view s) {
    auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

// True when `s` holds an ASCII control character (below 0x20, or DEL), which
// would let a value break a line, a header or a terminal.
inline bool has_control_char(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
}

// An ASCII letter, digit or '_': a character of a C identifier (and of the
// names nvcc and its tools give variables, macros and module ids).
inline bool is_c_identifier_char(char c) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// The words of `s` split at spaces, tabs and line breaks, as nvcc splits
// $NVCC_PREPEND_FLAGS and $NVCC_APPEND_FLAGS.
inline std::vector<std::string> split_words(std::string_view s) {
    std::vector<std::string> words;
    for (size_t at = 0; at < s.size();) {
        size_t start = s.find_first_not_of(" \t\n", at);
        if (start == std::string_view::npos) break;
        size_t end = std::min(s.find_first_of(" \t\n", start), s.size());
        words.emplace_back(s.substr(start, end - start));
        at = end;
    }
    return words;
}

// The non-empty elements of a colon-separated list of paths ($PATH,
// read_only_caches).
inline std::vector<std::string> split_path_list(std::string_view list) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= list.size()) {
        size_t colon = list.find(':', start);
        std::string_view part =
            list.substr(start, colon == std::string_view::npos ? colon : colon - start);
        if (!part.empty()) out.emplace_back(part);
        if (colon == std::string_view::npos) break;
        start = colon + 1;
    }
    return out;
}

}  // namespace bekc
