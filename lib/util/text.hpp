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

// `s` with leading and trailing blanks (space, tab, line breaks) dropped and
// each inner run of them made one space: "unsigned  long" and an HTTP
// header's value compare by their words.
inline std::string fold_spaces(std::string_view s) {
    std::string out;
    bool space = false;
    for (char c : s) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    return out;
}

// `s` with ASCII letters made lower case (std::tolower in the C locale).
inline std::string lower_case(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// True when `s` holds an ASCII control character (below 0x20, or DEL), which
// would let a value break a line, a header or a terminal.
inline bool has_control_char(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
}

// The length of the UTF-8 sequence that starts at s[at] (RFC 3629: no
// overlong form, no surrogate, nothing above U+10FFFF), or 0 where none does.
inline size_t utf8_length_at(std::string_view s, size_t at) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[at + k]); };
    unsigned char b0 = byte(0);
    if (b0 < 0x80) return 1;
    size_t n = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
    if (b0 < 0xC2 || b0 > 0xF4 || s.size() - at < n) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((byte(k) & 0xC0) != 0x80) return 0;
    unsigned char b1 = byte(1);
    if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 > 0x9F) || (b0 == 0xF0 && b1 < 0x90) ||
        (b0 == 0xF4 && b1 > 0x8F))
        return 0;
    return n;
}

// Whether `s` is UTF-8 throughout. A Linux file name need not be (a Latin-1
// directory, b"caf\xe9").
inline bool is_utf8(std::string_view s) {
    for (size_t i = 0, n; i < s.size(); i += n)
        if ((n = utf8_length_at(s, i)) == 0) return false;
    return true;
}

// An ASCII letter, digit or '_': a character of a C identifier (and of the
// names nvcc and its tools give variables, macros and module ids).
inline bool is_c_identifier_char(char c) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// The pieces of `text` between any of `separators`, without empty ones.
inline std::vector<std::string> split_nonempty(std::string_view text, std::string_view separators) {
    std::vector<std::string> out;
    for (size_t at = 0; at <= text.size();) {
        size_t end = std::min(text.find_first_of(separators, at), text.size());
        if (end > at) out.emplace_back(text.substr(at, end - at));
        at = end + 1;
    }
    return out;
}

// The words of `s` split at spaces, tabs and line breaks, as nvcc splits
// $NVCC_PREPEND_FLAGS and $NVCC_APPEND_FLAGS.
inline std::vector<std::string> split_words(std::string_view s) {
    return split_nonempty(s, " \t\n");
}

// The non-empty elements of a colon-separated list of paths ($PATH,
// read_only_caches).
inline std::vector<std::string> split_path_list(std::string_view list) {
    return split_nonempty(list, ":");
}

}  // namespace bekc
