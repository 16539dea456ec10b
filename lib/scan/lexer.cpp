#include "scan/lexer.hpp"

#include <algorithm>

namespace bekc {

int Lexed::line_of(uint32_t offset) const {
    auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
    return static_cast<int>(it - line_starts.begin());
}

int Lexed::column_of(uint32_t offset) const {
    return static_cast<int>(offset - line_starts[line_of(offset) - 1]) + 1;
}

namespace {

bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
}
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
public:
    explicit Lexer(std::string_view src) : s_(src) {}

    Lexed run() {
        out_.line_starts.push_back(0);
        for (size_t i = 0; i < s_.size(); ++i)
            if (s_[i] == '\n') out_.line_starts.push_back(static_cast<uint32_t>(i + 1));
        bool line_start = true;  // only white space since the last newline
        while (p_ < s_.size()) {
            char c = s_[p_];
            if (c == '\n') {
                line_start = true;
                ++p_;
            } else if (is_space(c) || splice_at(p_)) {
                p_ += splice_at(p_) ? splice_len(p_) : 1;
            } else if (c == '#' && line_start) {
                directive();
                line_start = true;
            } else {
                line_start = false;
                token(out_.tokens, /*in_directive=*/false);
            }
        }
        return std::move(out_);
    }

private:
    // A backslash-newline splice (also `\` + CRLF) joins two physical lines.
    bool splice_at(size_t i) const {
        return s_[i] == '\\' && ((i + 1 < s_.size() && s_[i + 1] == '\n') ||
                                 (i + 2 < s_.size() && s_[i + 1] == '\r' && s_[i + 2] == '\n'));
    }
    size_t splice_len(size_t i) const { return s_[i + 1] == '\r' ? 3 : 2; }

    // Skips a `/* */` comment starting at p_; an unterminated one runs to the end.
    void block_comment() {
        size_t end = s_.find("*/", p_ + 2);
        p_ = end == std::string_view::npos ? s_.size() : end + 2;
    }

    // Skips a `//` comment at p_ and returns its text; a splice continues it.
    std::string_view line_comment() {
        size_t start = p_ + 2, i = start;
        while (i < s_.size() && s_[i] != '\n') i += splice_at(i) ? splice_len(i) : 1;
        p_ = i;
        std::string_view text = s_.substr(start, i - start);
        if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        return text;
    }

    // Skips a quoted literal starting at `q` (the quote); returns the offset after it.
    // An unterminated literal ends at the end of the line, as compilers recover.
    size_t quoted(size_t q) const {
        char quote = s_[q];
        size_t i = q + 1;
        while (i < s_.size() && s_[i] != quote && s_[i] != '\n') i += s_[i] == '\\' ? 2 : 1;
        return std::min(i + 1, s_.size());
    }

    // R"delim( ... )delim"; `q` is the offset of the quote.
    size_t raw_string(size_t q) const {
        size_t open = s_.find('(', q);
        if (open == std::string_view::npos || open - q > 17) return quoted(q);
        std::string close = ")" + std::string(s_.substr(q + 1, open - q - 1)) + "\"";
        size_t end = s_.find(close, open);
        return end == std::string_view::npos ? s_.size() : end + close.size();
    }

    // Lexes one token (or skips one comment) at p_ into `dest`.
    void token(std::vector<LexToken>& dest, bool in_directive) {
        char c = s_[p_];
        uint32_t at = static_cast<uint32_t>(p_);
        if (c == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '/') {
            std::string_view text = line_comment();
            if (!in_directive) out_.comments.push_back({text, at});
            return;
        }
        if (c == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '*') {
            block_comment();
            return;
        }
        if (is_ident_start(c)) {
            size_t e = p_;
            while (e < s_.size() && is_ident_char(s_[e])) ++e;
            std::string_view word = s_.substr(p_, e - p_);
            // Encoding prefixes and raw strings: u8"..", L'..', R"(..)".
            if (e < s_.size() && (s_[e] == '"' || s_[e] == '\'') &&
                (word == "L" || word == "u" || word == "U" || word == "u8" || word == "R" ||
                 word == "LR" || word == "uR" || word == "UR" || word == "u8R")) {
                p_ = word.back() == 'R' && s_[e] == '"' ? raw_string(e) : quoted(e);
                dest.push_back({LexKind::String, s_.substr(at, p_ - at), at});
                return;
            }
            dest.push_back({LexKind::Ident, word, at});
            p_ = e;
            return;
        }
        if (c >= '0' && c <= '9') {
            size_t e = p_ + 1;
            while (e < s_.size() && (is_ident_char(s_[e]) || s_[e] == '.' || s_[e] == '\'')) ++e;
            dest.push_back({LexKind::Number, s_.substr(p_, e - p_), at});
            p_ = e;
            return;
        }
        if (c == '"' || c == '\'') {
            p_ = quoted(p_);
            dest.push_back({LexKind::String, s_.substr(at, p_ - at), at});
            return;
        }
        // Two-character punctuators that matter to the scanner.
        static constexpr std::string_view kPairs[] = {"::", "##", "&&", "->", "<<", ">>"};
        for (auto pair : kPairs) {
            if (s_.substr(p_, 2) == pair) {
                dest.push_back({LexKind::Punct, s_.substr(p_, 2), at});
                p_ += 2;
                return;
            }
        }
        dest.push_back({LexKind::Punct, s_.substr(p_, 1), at});
        ++p_;
    }

    // Lexes the rest of the logical line (after splices) into tokens.
    std::vector<LexToken> directive_tokens() {
        std::vector<LexToken> toks;
        while (p_ < s_.size() && s_[p_] != '\n') {
            if (is_space(s_[p_])) {
                ++p_;
            } else if (splice_at(p_)) {
                p_ += splice_len(p_);
            } else if (s_[p_] == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '*') {
                // A block comment may run over several lines inside a directive.
                block_comment();
            } else {
                token(toks, /*in_directive=*/true);
            }
        }
        return toks;
    }

    void directive() {
        uint32_t at = static_cast<uint32_t>(p_);
        ++p_;  // '#'
        std::vector<LexToken> toks = directive_tokens();
        if (toks.empty() || toks[0].kind != LexKind::Ident) return;
        std::string_view kw = toks[0].text;
        if (kw == "define") {
            define(toks, at);
        } else if (kw == "if" && toks.size() == 2 &&
                   (toks[1].text == "0" || toks[1].text == "false")) {
            skip_disabled_group();
        }
    }

    // Records `#define NAME(params) body`. Object-like macros define no
    // functions and are ignored.
    void define(const std::vector<LexToken>& toks, uint32_t at) {
        if (toks.size() < 3 || toks[1].kind != LexKind::Ident || toks[2].text != "(") return;
        // Function-like only when `(` follows the name without white space.
        if (toks[2].offset != toks[1].offset + toks[1].text.size()) return;
        MacroDef m;
        m.name = toks[1].text;
        m.offset = at;
        size_t i = 3;
        for (; i < toks.size() && toks[i].text != ")"; ++i) {
            if (toks[i].kind == LexKind::Ident) m.params.push_back(toks[i].text);
            else if (toks[i].text == ".") {
                if (i + 2 < toks.size() && toks[i + 1].text == "." && toks[i + 2].text == ".") {
                    m.params.push_back("__VA_ARGS__");
                    i += 2;
                }
            }
        }
        if (i >= toks.size()) return;  // unterminated parameter list
        m.body.assign(toks.begin() + static_cast<long>(i) + 1, toks.end());
        out_.macros.push_back(std::move(m));
    }

    // After `#if 0`: skips lines up to the matching #else, #elif or #endif,
    // counting nested conditionals.
    void skip_disabled_group() {
        int depth = 0;
        while (p_ < s_.size()) {
            // Move to the start of the next line.
            while (p_ < s_.size() && s_[p_] != '\n') {
                if (splice_at(p_)) p_ += splice_len(p_);
                else if (s_[p_] == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '*') block_comment();
                else ++p_;
            }
            if (p_ >= s_.size()) return;
            ++p_;
            size_t q = p_;
            while (q < s_.size() && is_space(s_[q])) ++q;
            if (q >= s_.size() || s_[q] != '#') continue;
            ++q;
            while (q < s_.size() && is_space(s_[q])) ++q;
            size_t e = q;
            while (e < s_.size() && is_ident_char(s_[e])) ++e;
            std::string_view kw = s_.substr(q, e - q);
            if (kw == "if" || kw == "ifdef" || kw == "ifndef") {
                ++depth;
            } else if (kw == "endif") {
                if (depth-- == 0) {
                    p_ = e;
                    directive_tokens();
                    return;
                }
            } else if ((kw == "else" || kw == "elif") && depth == 0) {
                // The alternative group is live; the lexer continues there.
                p_ = e;
                directive_tokens();
                return;
            }
        }
    }

    std::string_view s_;
    size_t p_ = 0;
    Lexed out_;
};

}  // namespace

Lexed lex(std::string_view source) { return Lexer(source).run(); }

}  // namespace bekc
