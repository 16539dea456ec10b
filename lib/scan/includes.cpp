#include "scan/includes.hpp"

#include <algorithm>

namespace bekc {

namespace {

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

size_t skip_spaces(std::string_view line, size_t i) {
    while (i < line.size() && is_blank(line[i])) ++i;
    return i;
}

// The directive on one line, if the line is `# include <h>` or `# include "h"`.
bool parse_directive(std::string_view line, IncludeDirective& out) {
    size_t i = skip_spaces(line, 0);
    if (i >= line.size() || line[i] != '#') return false;
    size_t hash = i;
    i = skip_spaces(line, i + 1);
    constexpr std::string_view kWord = "include";
    if (line.substr(i, kWord.size()) != kWord) return false;
    i = skip_spaces(line, i + kWord.size());
    if (i >= line.size() || (line[i] != '"' && line[i] != '<')) return false;
    char close = line[i] == '"' ? '"' : '>';
    size_t end = line.find(close, i + 1);
    if (end == std::string_view::npos || end == i + 1) return false;
    out.header = std::string(line.substr(i + 1, end - i - 1));
    out.angled = close == '>';
    out.where.column = static_cast<int>(hash) + 1;
    return true;
}

// What find_has_includes needs to skip so that a "/*" inside a string or a
// quote inside a comment cannot hide an operand: comments, string and
// character literals (also raw strings), pp-numbers with digit separators.
class HasIncludeScanner {
  public:
    HasIncludeScanner(std::string_view text, std::string_view file) : text_(text), file_(file) {}

    std::vector<HasIncludeOperand> run() {
        while (i_ < text_.size()) {
            char c = text_[i_];
            if (c == '\n') {
                newline(i_);
                ++i_;
            } else if (starts_with("//")) {
                skip_line_comment();
            } else if (starts_with("/*")) {
                skip_block_comment();
            } else if (c == '"' || c == '\'') {
                skip_quoted(c);
            } else if (is_ident_start(c)) {
                identifier();
            } else if (is_digit(c)) {
                skip_number();
            } else {
                ++i_;
            }
        }
        return std::move(out_);
    }

  private:
    static bool is_digit(char c) { return c >= '0' && c <= '9'; }
    static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
    // Bytes of UTF-8 sequences count as identifier characters, so that
    // "\u00e9__has_include" is not taken for the operator.
    static bool is_ident_start(char c) {
        return is_alpha(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
    }
    static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

    bool starts_with(std::string_view s) const { return text_.substr(i_, s.size()) == s; }

    void newline(size_t at) {
        ++line_;
        line_start_ = at + 1;
    }

    // A backslash-newline (also backslash-CR-LF) at `at`: its length, else 0.
    size_t splice_at(size_t at) const {
        if (at >= text_.size() || text_[at] != '\\') return 0;
        if (at + 1 < text_.size() && text_[at + 1] == '\n') return 2;
        if (at + 2 < text_.size() && text_[at + 1] == '\r' && text_[at + 2] == '\n') return 3;
        return 0;
    }

    void skip_splice(size_t len) {
        newline(i_ + len - 1);
        i_ += len;
    }

    void skip_line_comment() {
        i_ += 2;
        while (i_ < text_.size() && text_[i_] != '\n') {
            if (size_t len = splice_at(i_)) {
                skip_splice(len);
                continue;
            }
            ++i_;
        }
    }

    void skip_block_comment() {
        i_ += 2;
        while (i_ < text_.size() && !starts_with("*/")) {
            if (text_[i_] == '\n') newline(i_);
            ++i_;
        }
        i_ = std::min(text_.size(), i_ + 2);
    }

    // A string or character literal; an unterminated one ends at the line's end.
    void skip_quoted(char quote) {
        ++i_;
        while (i_ < text_.size() && text_[i_] != '\n') {
            if (size_t len = splice_at(i_)) {
                skip_splice(len);
            } else if (text_[i_] == '\\') {
                i_ += 2;
            } else if (text_[i_] == quote) {
                ++i_;
                return;
            } else {
                ++i_;
            }
        }
    }

    // R"delim( ... )delim", the opening quote at i_.
    void skip_raw_string() {
        size_t open = text_.find('(', i_ + 1);
        size_t eol = text_.find('\n', i_ + 1);
        if (open == std::string_view::npos || open > eol || open - i_ - 1 > 16) {
            skip_quoted('"');  // not a valid raw string: treat as an ordinary one
            return;
        }
        std::string close = ")" + std::string(text_.substr(i_ + 1, open - i_ - 1)) + "\"";
        size_t end = text_.find(close, open + 1);
        size_t stop = end == std::string_view::npos ? text_.size() : end + close.size();
        for (size_t k = i_; k < stop; ++k)
            if (text_[k] == '\n') newline(k);
        i_ = stop;
    }

    // 1'000'000, 0x1p-3, 1.5e+10: a digit separator is not a character literal.
    void skip_number() {
        while (i_ < text_.size()) {
            char c = text_[i_];
            if (is_ident_char(c) || c == '.') {
                ++i_;
            } else if ((c == '+' || c == '-') && (text_[i_ - 1] == 'e' || text_[i_ - 1] == 'E' ||
                                                  text_[i_ - 1] == 'p' || text_[i_ - 1] == 'P')) {
                ++i_;
            } else if (c == '\'' && i_ + 1 < text_.size() && is_ident_char(text_[i_ + 1])) {
                i_ += 2;
            } else {
                break;
            }
        }
    }

    // White space within one logical line: blanks and backslash-newlines.
    void skip_blanks() {
        while (i_ < text_.size()) {
            if (size_t len = splice_at(i_)) {
                skip_splice(len);
            } else if (is_blank(text_[i_])) {
                ++i_;
            } else {
                break;
            }
        }
    }

    void identifier() {
        size_t start = i_;
        while (i_ < text_.size() && is_ident_char(text_[i_])) ++i_;
        std::string_view word = text_.substr(start, i_ - start);
        if (i_ < text_.size() && text_[i_] == '"' &&
            (word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R")) {
            skip_raw_string();
            return;
        }
        bool next;
        if (word == "__has_include" || word == "__has_include__")
            next = false;
        else if (word == "__has_include_next" || word == "__has_include_next__")
            next = true;
        else
            return;
        Location where{std::string(file_), line_, static_cast<int>(start - line_start_) + 1};
        // Whatever follows is scanned normally when it is not `( header-name )`.
        int line = line_;
        size_t line_start = line_start_, after_word = i_;
        auto give_up = [&] {
            line_ = line;
            line_start_ = line_start;
            i_ = after_word;
        };
        skip_blanks();
        if (i_ >= text_.size() || text_[i_] != '(') return give_up();
        ++i_;
        skip_blanks();
        if (i_ >= text_.size() || (text_[i_] != '"' && text_[i_] != '<')) return give_up();
        char close = text_[i_] == '"' ? '"' : '>';
        size_t end = i_ + 1;
        while (end < text_.size() && text_[end] != close && text_[end] != '\n') ++end;
        if (end >= text_.size() || text_[end] != close || end == i_ + 1) return give_up();
        std::string header(text_.substr(i_ + 1, end - i_ - 1));
        i_ = end + 1;
        skip_blanks();
        if (i_ >= text_.size() || text_[i_] != ')') return give_up();
        ++i_;
        out_.push_back({std::move(header), close == '>', next, std::move(where)});
    }

    std::string_view text_, file_;
    size_t i_ = 0, line_start_ = 0;
    int line_ = 1;
    std::vector<HasIncludeOperand> out_;
};

}  // namespace

std::vector<HasIncludeOperand> find_has_includes(std::string_view text, std::string_view file) {
    return HasIncludeScanner(text, file).run();
}

std::vector<IncludeDirective> find_includes(std::string_view text, std::string_view file) {
    std::vector<IncludeDirective> out;
    bool in_comment = false;
    int line_no = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t nl = text.find('\n', pos);
        std::string_view line =
            text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        ++line_no;
        // Block comments: a line that starts inside one is not a directive; the
        // state carries past every "/*" that the line leaves open.
        bool starts_in_comment = in_comment;
        for (size_t i = 0; i + 1 < line.size(); ++i) {
            if (!in_comment && line[i] == '/' && line[i + 1] == '/') break;
            if (!in_comment && line[i] == '/' && line[i + 1] == '*') {
                in_comment = true;
                ++i;
            } else if (in_comment && line[i] == '*' && line[i + 1] == '/') {
                in_comment = false;
                ++i;
            }
        }
        IncludeDirective d;
        if (!starts_in_comment && parse_directive(line, d)) {
            d.where.file = std::string(file);
            d.where.line = line_no;
            out.push_back(std::move(d));
        }
        if (nl == std::string_view::npos) break;
        pos = nl + 1;
    }
    return out;
}

}  // namespace bekc
