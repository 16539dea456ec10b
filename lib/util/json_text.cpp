#include "util/json_text.hpp"

#include <vector>

#include "util/text.hpp"

namespace bekc {

namespace {

// How bytes travel through nlohmann, which takes and gives UTF-8 only: NUL
// starts a mark. A NUL byte is marked as two NULs, and a byte B that is not
// part of a UTF-8 sequence as NUL and U+00B (two bytes of UTF-8, B >= 0x80).
// nlohmann writes a NUL as "\u0000" and reads "\u0000" as a NUL, so in its
// text a mark is "\u0000\u0000", or "\u0000" and a two-byte character.
constexpr char kMark = '\0';
constexpr std::string_view kMarkEscape = "\\u0000";

void append_latin1(std::string& out, unsigned char byte) {
    out += static_cast<char>(0xC0 | (byte >> 6));
    out += static_cast<char>(0x80 | (byte & 0x3F));
}

bool needs_marks(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        size_t n = s[i] == kMark ? 0 : utf8_length_at(s, i);
        if (n == 0) return true;
        i += n;
    }
    return false;
}

std::string marked(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    for (size_t i = 0; i < s.size();) {
        size_t n = s[i] == kMark ? 0 : utf8_length_at(s, i);
        if (n > 0) {
            out.append(s.substr(i, n));
            i += n;
            continue;
        }
        out += kMark;
        if (s[i] == kMark)
            out += kMark;
        else
            append_latin1(out, static_cast<unsigned char>(s[i]));
        ++i;
    }
    return out;
}

bool has_mark(std::string_view s) {
    return s.find(kMark) != std::string_view::npos;
}

// The bytes of a string read from text whose escapes marks_of_escapes made
// marks: there, every NUL starts a mark.
std::string unmarked(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != kMark || i + 1 >= s.size()) {
            out += s[i];
        } else if (s[i + 1] == kMark) {
            out += kMark;
            ++i;
        } else if (i + 2 < s.size()) {
            auto lead = static_cast<unsigned char>(s[i + 1]);
            auto low = static_cast<unsigned char>(s[i + 2]);
            out += static_cast<char>(((lead & 0x1F) << 6) | (low & 0x3F));
            i += 2;
        }
    }
    return out;
}

// Whether any string or object key of `root` needs marks. Without recursion:
// a value read from a file may nest deeply.
template <typename Json>
bool any_needs_marks(const Json& root) {
    std::vector<const Json*> todo{&root};
    while (!todo.empty()) {
        const Json& j = *todo.back();
        todo.pop_back();
        if (j.is_string() && needs_marks(j.template get_ref<const std::string&>())) return true;
        if (j.is_object())
            for (auto it = j.begin(); it != j.end(); ++it)
                if (needs_marks(it.key())) return true;
        if (j.is_structured())
            for (const auto& child : j) todo.push_back(&child);
    }
    return false;
}

// Replaces every string and object key `s` of `root` for which `wanted(s)`
// with `edit(s)`; an object whose keys change is rebuilt, in its order.
template <typename Json, typename Wanted, typename Edit>
void edit_strings(Json& root, Wanted wanted, Edit edit) {
    std::vector<Json*> todo{&root};
    while (!todo.empty()) {
        Json& j = *todo.back();
        todo.pop_back();
        if (j.is_string()) {
            auto& s = j.template get_ref<std::string&>();
            if (wanted(s)) s = edit(s);
            continue;
        }
        if (j.is_object()) {
            bool keys = false;
            for (auto it = j.begin(); it != j.end() && !keys; ++it) keys = wanted(it.key());
            if (keys) {
                Json rebuilt = Json::object();
                for (auto it = j.begin(); it != j.end(); ++it)
                    rebuilt[wanted(it.key()) ? edit(it.key()) : it.key()] = std::move(it.value());
                j = std::move(rebuilt);
            }
        }
        if (j.is_structured())
            for (auto& child : j) todo.push_back(&child);
    }
}

// The code point of the escape "\uXXXX" at text[at], if there is one.
std::optional<uint32_t> escape_at(std::string_view text, size_t at) {
    if (text.size() < at + 6 || text[at] != '\\' || text[at + 1] != 'u') return std::nullopt;
    return escape_digits(text.substr(at + 2, 4));
}

// `text` with the escapes that stand for bytes written as marks, which
// nlohmann reads: "\u0000" as "\u0000\u0000", and a lone "\udcXX" as
// "\u0000" and U+00XX. Nullopt when it has none.
std::optional<std::string> marks_of_escapes(std::string_view text) {
    if (text.find("\\u") == std::string_view::npos) return std::nullopt;
    std::string out;
    bool changed = false;
    for (size_t i = 0; i < text.size();) {
        size_t slash = std::min(text.find('\\', i), text.size());
        out.append(text.substr(i, slash - i));
        if ((i = slash) >= text.size()) break;
        std::optional<uint32_t> cp = escape_at(text, i);
        if (!cp) {
            out.append(text.substr(i, 2));  // any other escape, whole
            i += 2;
            continue;
        }
        if (*cp >= 0xD800 && *cp <= 0xDBFF && escape_at(text, i + 6)) {
            out.append(text.substr(i, 12));  // a pair, whatever its second half: nlohmann judges it
            i += 12;
            continue;
        }
        if (*cp == 0) {
            out.append(kMarkEscape).append(kMarkEscape);
            changed = true;
        } else if (std::optional<char> byte = escaped_byte(*cp)) {
            out.append(kMarkEscape);
            append_latin1(out, static_cast<unsigned char>(*byte));
            changed = true;
        } else {
            out.append(text.substr(i, 6));
        }
        i += 6;
    }
    if (!changed) return std::nullopt;
    return out;
}

// nlohmann's text of marked strings with each mark written as the escape it
// stands for: "\u0000\u0000" as "\u0000", "\u0000" and U+00XX as "\udcXX".
std::string escapes_of_marks(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 16);
    for (size_t i = 0; i < text.size();) {
        size_t slash = std::min(text.find('\\', i), text.size());
        out.append(text.substr(i, slash - i));
        if ((i = slash) >= text.size()) break;
        if (text.substr(i, kMarkEscape.size()) != kMarkEscape) {
            out.append(text.substr(i, 2));  // any other escape, whole
            i += 2;
            continue;
        }
        i += kMarkEscape.size();
        if (text.substr(i, kMarkEscape.size()) == kMarkEscape) {
            out.append(kMarkEscape);
            i += kMarkEscape.size();
        } else if (i + 1 < text.size()) {
            auto lead = static_cast<unsigned char>(text[i]);
            auto low = static_cast<unsigned char>(text[i + 1]);
            constexpr char kHex[] = "0123456789abcdef";
            unsigned byte = ((lead & 0x1Fu) << 6) | (low & 0x3Fu);
            out.append("\\udc");
            out += kHex[byte >> 4];
            out += kHex[byte & 0xF];
            i += 2;
        }
    }
    return out;
}

}  // namespace

std::optional<uint32_t> escape_digits(std::string_view digits) {
    if (digits.size() != 4) return std::nullopt;
    uint32_t v = 0;
    for (char c : digits) {
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= static_cast<uint32_t>(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= static_cast<uint32_t>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= static_cast<uint32_t>(c - 'A' + 10);
        else
            return std::nullopt;
    }
    return v;
}

std::optional<char> escaped_byte(uint32_t code_point) {
    if (code_point < 0xDC80 || code_point > 0xDCFF) return std::nullopt;
    return static_cast<char>(code_point - 0xDC00);
}

template <typename Json>
std::string dump_json(const Json& value, int indent) {
    if (!any_needs_marks(value)) return value.dump(indent);
    Json copy = value;
    edit_strings(copy, needs_marks, marked);
    return escapes_of_marks(copy.dump(indent));
}

template <typename Json>
std::expected<Json, std::string> parse_json(std::string_view text) {
    std::optional<std::string> marks = marks_of_escapes(text);
    if (marks) text = *marks;
    // nlohmann says where the text stops being JSON only by an exception.
    try {
        Json j = Json::parse(text.begin(), text.end());
        if (marks) edit_strings(j, has_mark, unmarked);
        return j;
    } catch (const nlohmann::json::exception& e) {
        std::string what = e.what();
        // "[json.exception.parse_error.101] ": nothing a reader needs.
        if (size_t close = what.find("] ");
            what.starts_with("[json.exception") && close != what.npos)
            what.erase(0, close + 2);
        return std::unexpected(what);
    }
}

template std::string dump_json(const nlohmann::json&, int);
template std::string dump_json(const nlohmann::ordered_json&, int);
template std::expected<nlohmann::json, std::string> parse_json(std::string_view);
template std::expected<nlohmann::ordered_json, std::string> parse_json(std::string_view);

}  // namespace bekc
