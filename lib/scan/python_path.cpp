#include "scan/python_path.hpp"

#include <cctype>
#include <vector>

namespace bekc {

namespace {

struct PathToken {
    enum class Kind { Name, Literal, Punct } kind;
    std::string text;
};

bool path_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// A plain string literal at text[i] (prefix r or u allowed; no f-strings, no
// bytes, no escapes); its value, and i moved past it.
std::optional<std::string> path_literal(std::string_view text, size_t& i) {
    size_t j = i;
    bool raw = false;
    while (j < text.size() && j - i < 1 && std::isalpha(static_cast<unsigned char>(text[j]))) {
        char p = static_cast<char>(std::tolower(static_cast<unsigned char>(text[j])));
        if (p != 'r' && p != 'u') return std::nullopt;
        raw = p == 'r';
        ++j;
    }
    if (j >= text.size() || (text[j] != '\'' && text[j] != '"')) return std::nullopt;
    const char q = text[j];
    const bool triple = text.substr(j, 3) == std::string_view(std::string(3, q));
    const size_t open = triple ? 3 : 1;
    std::string value;
    for (size_t k = j + open; k < text.size(); ++k) {
        if (text[k] == '\\' && !raw) return std::nullopt;
        if (text[k] == '\n' && !triple) return std::nullopt;
        if (triple ? text.substr(k, 3) == std::string_view(std::string(3, q)) : text[k] == q) {
            i = k + open;
            return value;
        }
        value += text[k];
    }
    return std::nullopt;
}

std::optional<std::vector<PathToken>> path_tokens(std::string_view text) {
    std::vector<PathToken> out;
    size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
            i += 2;
        } else if (c == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
        } else if (c == '\'' || c == '"' ||
                   (i + 1 < text.size() && (text[i + 1] == '\'' || text[i + 1] == '"') &&
                    std::isalpha(static_cast<unsigned char>(c)))) {
            auto value = path_literal(text, i);
            if (!value) return std::nullopt;
            // Adjacent literals are one string, as in Python.
            if (!out.empty() && out.back().kind == PathToken::Kind::Literal)
                out.back().text += *value;
            else
                out.push_back({PathToken::Kind::Literal, *value});
        } else if (path_name_char(c) && !std::isdigit(static_cast<unsigned char>(c))) {
            size_t j = i;
            while (j < text.size() && path_name_char(text[j])) ++j;
            out.push_back({PathToken::Kind::Name, std::string(text.substr(i, j - i))});
            i = j;
        } else if (c == '.' || c == '(' || c == ')' || c == ',' || c == '/') {
            out.push_back({PathToken::Kind::Punct, std::string(1, c)});
            ++i;
        } else {
            return std::nullopt;
        }
    }
    return out;
}

// A pure path: components and whether it starts at the root.
struct PurePath {
    std::vector<std::string> parts;
    bool absolute = false;

    static PurePath of(std::string_view s) {
        PurePath p;
        p.absolute = !s.empty() && s.front() == '/';
        p.append(s);
        return p;
    }
    void append(std::string_view s) {
        size_t start = 0;
        while (start <= s.size()) {
            size_t slash = s.find('/', start);
            std::string_view part =
                s.substr(start, slash == std::string_view::npos ? s.npos : slash - start);
            if (!part.empty() && part != ".") parts.emplace_back(part);
            if (slash == std::string_view::npos) break;
            start = slash + 1;
        }
    }
    std::string str() const {
        std::string out = absolute ? "/" : "";
        for (size_t i = 0; i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
        return out.empty() ? "." : out;
    }
};

// pathlib's suffix rule: the last '.' of the name, unless it is the first or
// the last character.
size_t suffix_start(std::string_view name) {
    size_t dot = name.rfind('.');
    return dot == std::string_view::npos || dot == 0 || dot + 1 == name.size() ? name.size() : dot;
}

class PathEvaluator {
  public:
    explicit PathEvaluator(std::vector<PathToken> tokens) : t_(std::move(tokens)) {}

    std::optional<std::string> run(std::string_view py_file) {
        int parens = 0;
        while (punct("(")) ++parens;
        if (!(name("Path") || (name("pathlib") && punct(".") && name("Path")))) return std::nullopt;
        if (!(punct("(") && name("__file__") && punct(")"))) return std::nullopt;
        PurePath p = PurePath::of(py_file);
        while (i_ < t_.size()) {
            if (punct("/")) {
                if (!append(p)) return std::nullopt;
            } else if (punct(".")) {
                if (!method(p)) return std::nullopt;
            } else if (parens > 0 && punct(")")) {
                --parens;
            } else {
                return std::nullopt;
            }
        }
        if (parens != 0) return std::nullopt;
        return p.str();
    }

  private:
    bool punct(const char* s) { return take(PathToken::Kind::Punct, s); }
    bool name(const char* s) { return take(PathToken::Kind::Name, s); }
    bool take(PathToken::Kind kind, const char* s) {
        if (i_ >= t_.size() || t_[i_].kind != kind || t_[i_].text != s) return false;
        ++i_;
        return true;
    }
    std::optional<std::string> literal() {
        if (i_ >= t_.size() || t_[i_].kind != PathToken::Kind::Literal) return std::nullopt;
        return t_[i_++].text;
    }
    // A relative, non-empty literal appended.
    bool append(PurePath& p) {
        auto s = literal();
        if (!s || s->empty() || s->front() == '/') return false;
        p.append(*s);
        return true;
    }
    bool method(PurePath& p) {
        if (name("parent")) {
            if (!p.parts.empty()) p.parts.pop_back();
            return true;
        }
        if (name("resolve") || name("absolute")) return punct("(") && punct(")");
        if (name("joinpath")) {
            if (!punct("(")) return false;
            do {
                if (punct(")")) return true;  // a trailing comma
                if (!append(p)) return false;
            } while (punct(","));
            return punct(")");
        }
        const bool with_name = name("with_name");
        if (!with_name && !name("with_suffix")) return false;
        if (!punct("(")) return false;
        auto s = literal();
        if (!s || !punct(")") || p.parts.empty() || p.parts.back() == "..") return false;
        std::string& last = p.parts.back();
        if (with_name) {
            if (s->empty() || *s == "." || s->find('/') != std::string::npos) return false;
            last = *s;
        } else {
            // pathlib refuses a suffix that is not empty and not '.x'.
            if (!s->empty() &&
                (s->size() < 2 || s->front() != '.' || s->find('/') != std::string::npos))
                return false;
            last = last.substr(0, suffix_start(last)) + *s;
        }
        return true;
    }

    std::vector<PathToken> t_;
    size_t i_ = 0;
};

}  // namespace

std::optional<std::string> evaluate_load_path(std::string_view path_text,
                                              std::string_view py_file) {
    auto tokens = path_tokens(path_text);
    if (!tokens || py_file.empty()) return std::nullopt;
    return PathEvaluator(std::move(*tokens)).run(py_file);
}

std::string path_stem(std::string_view path) {
    size_t slash = path.rfind('/');
    std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    return std::string(name.substr(0, suffix_start(name)));
}

}  // namespace bekc
