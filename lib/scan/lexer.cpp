#include "scan/lexer.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_set>

namespace bekc {

int Lexed::line_of(uint32_t offset) const {
    auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
    return static_cast<int>(it - line_starts.begin());
}

int Lexed::column_of(uint32_t offset) const {
    return static_cast<int>(offset - line_starts[line_of(offset) - 1]) + 1;
}

namespace {

// Character classes, looked up in a table: the lexer's inner loops run once
// per byte of the file, and a table keeps each step to a load and a compare.
enum CharClass : uint8_t { kOther, kSpace, kNewline, kIdent, kDigit };

struct ClassTable {
    CharClass cls[256];
    bool ident[256];  // may continue an identifier
    // The second character of the two-character punctuators that matter to
    // the scanner (`::`, `##`, `&&`, `->`, `<<`, `>>`), by first character.
    char pair[256];
    bool bracket[256];  // ( [ { ) ] }
    constexpr ClassTable() : cls(), ident(), pair(), bracket() {
        for (char c : {'(', '[', '{', ')', ']', '}'}) bracket[static_cast<unsigned char>(c)] = true;
        pair[static_cast<unsigned char>(':')] = ':';
        pair[static_cast<unsigned char>('#')] = '#';
        pair[static_cast<unsigned char>('&')] = '&';
        pair[static_cast<unsigned char>('-')] = '>';
        pair[static_cast<unsigned char>('<')] = '<';
        pair[static_cast<unsigned char>('>')] = '>';
        for (int i = 0; i < 256; ++i) {
            bool alpha = (i >= 'a' && i <= 'z') || (i >= 'A' && i <= 'Z') || i == '_' || i >= 0x80;
            bool digit = i >= '0' && i <= '9';
            cls[i] = alpha ? kIdent : digit ? kDigit : kOther;
            ident[i] = alpha || digit;
        }
        for (char c : {' ', '\t', '\r', '\f', '\v'}) cls[static_cast<unsigned char>(c)] = kSpace;
        cls[static_cast<unsigned char>('\n')] = kNewline;
    }
};
constexpr ClassTable kTable;

CharClass cls(char c) {
    return kTable.cls[static_cast<unsigned char>(c)];
}
bool is_ident_char(char c) {
    return kTable.ident[static_cast<unsigned char>(c)];
}
bool is_space(char c) {
    return cls(c) == kSpace;
}

bool is_encoding_prefix(std::string_view w) {
    return w == "L" || w == "u" || w == "U" || w == "u8" || w == "R" || w == "LR" || w == "uR" ||
           w == "UR" || w == "u8R";
}

bool is_pair(char a, char b) {
    char second = kTable.pair[static_cast<unsigned char>(a)];
    return second != 0 && b == second;
}

// A set of names with a quick "no" for most: macro names are few, and most
// identifiers differ from all of them in their first character or length.
class NameSet {
  public:
    void insert(std::string_view name) {
        if (name.empty()) return;
        first_[static_cast<unsigned char>(name[0])] = true;
        min_ = std::min(min_, name.size());
        max_ = std::max(max_, name.size());
        names_.insert(name);
    }
    bool contains(std::string_view name) const {
        return !name.empty() && first_[static_cast<unsigned char>(name[0])] &&
               name.size() >= min_ && name.size() <= max_ && names_.count(name) != 0;
    }

  private:
    bool first_[256] = {};
    size_t min_ = SIZE_MAX, max_ = 0;
    std::unordered_set<std::string_view> names_;
};

class Lexer {
  public:
    Lexer(std::string_view src, bool keep_all) : s_(src), keep_all_(keep_all) {}

    Lexed run() {
        find_line_starts();
        out_.source_size = s_.size();
        // About one token per four bytes of code, of which the scanner keeps
        // about one in six; reserving avoids regrowing.
        out_.tokens.reserve(s_.size() / (keep_all_ ? 4 : 24) + 16);
        code();
        return std::move(out_);
    }

  private:
    void find_line_starts() {
        out_.line_starts.reserve(s_.size() / 32 + 1);
        out_.line_starts.push_back(0);
        const char* base = s_.data();
        const char* end = base + s_.size();
        for (const char* q = base; q < end;) {
            const void* nl = std::memchr(q, '\n', static_cast<size_t>(end - q));
            if (!nl) break;
            q = static_cast<const char*>(nl) + 1;
            out_.line_starts.push_back(static_cast<uint32_t>(q - base));
        }
    }

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

    // Skips a `//` comment at p_ and returns its text; a splice (a newline
    // right after a backslash) continues it.
    std::string_view line_comment() {
        size_t start = p_ + 2, i = start;
        for (;;) {
            size_t nl = s_.find('\n', i);
            if (nl == std::string_view::npos) {
                i = s_.size();
                break;
            }
            bool spliced = (nl >= 1 && s_[nl - 1] == '\\') ||
                           (nl >= 2 && s_[nl - 1] == '\r' && s_[nl - 2] == '\\');
            if (!spliced) {
                i = nl;
                break;
            }
            i = nl + 1;
        }
        p_ = i;
        std::string_view text = s_.substr(start, i - start);
        if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        return text;
    }

    // Skips a quoted literal starting at `q` (the quote); returns the offset after it.
    // An unterminated literal ends before the end of its line, as compilers
    // recover: the newline still ends a directive (`#error don't`).
    size_t quoted(size_t q) const {
        char quote = s_[q];
        size_t i = q + 1;
        while (i < s_.size() && s_[i] != quote && s_[i] != '\n')
            i += s_[i] != '\\' ? 1 : splice_at(i) ? splice_len(i) : 2;
        if (i >= s_.size()) return s_.size();
        return s_[i] == quote ? i + 1 : i;
    }

    // R"delim( ... )delim"; `q` is the offset of the quote. The delimiter has
    // at most 16 characters, so only those are searched for the `(`.
    size_t raw_string(size_t q) const {
        size_t open = s_.substr(0, std::min(s_.size(), q + 18)).find('(', q);
        if (open == std::string_view::npos) return quoted(q);
        std::string close = ")" + std::string(s_.substr(q + 1, open - q - 1)) + "\"";
        size_t end = s_.find(close, open);
        return end == std::string_view::npos ? s_.size() : end + close.size();
    }

    // The end of the identifier, number or punctuator at p_, with its kind;
    // for literals and comments, `skip` says the caller has nothing to add.
    struct Lexeme {
        size_t end;
        LexKind kind;
        bool skip;
    };

    Lexeme lexeme(bool in_directive) {
        const size_t n = s_.size();
        char c = s_[p_];
        switch (cls(c)) {
            case kIdent: {
                size_t e = p_ + 1;
                while (e < n && is_ident_char(s_[e])) ++e;
                // Encoding prefixes and raw strings: u8"..", L'..', R"(..)".
                if (e < n && (s_[e] == '"' || s_[e] == '\'') &&
                    is_encoding_prefix(s_.substr(p_, e - p_))) {
                    bool raw = s_[e - 1] == 'R' && s_[e] == '"';
                    return {raw ? raw_string(e) : quoted(e), LexKind::String, false};
                }
                return {e, LexKind::Ident, false};
            }
            case kDigit: {
                size_t e = p_ + 1;
                while (e < n && (is_ident_char(s_[e]) || s_[e] == '.' || s_[e] == '\'')) ++e;
                return {e, LexKind::Number, false};
            }
            default:
                break;
        }
        char d = p_ + 1 < n ? s_[p_ + 1] : '\0';
        if (c == '/' && d == '/') {
            uint32_t at = static_cast<uint32_t>(p_);
            std::string_view text = line_comment();
            if (!in_directive) {
                out_.comments.push_back({text, at});
                // The scanner looks at the code right after an annotation.
                size_t k = text.find_first_not_of(" \t");
                if (k != std::string_view::npos && text.substr(k, 3) == "@BE")
                    record_next_ = std::max<uint32_t>(record_next_, 2);
            }
            return {p_, LexKind::Punct, true};
        }
        if (c == '/' && d == '*') {
            block_comment();
            return {p_, LexKind::Punct, true};
        }
        if (c == '"' || c == '\'') return {quoted(p_), LexKind::String, false};
        return {p_ + (is_pair(c, d) ? 2 : 1), LexKind::Punct, false};
    }

    // The main loop over code outside directives. It runs once per byte of
    // the file, so it works on local pointers and handles identifiers,
    // numbers and punctuators inline; everything rarer goes through p_.
    void code() {
        const char* const b = s_.data();
        const char* const e = b + s_.size();
        const char* p = b;
        bool line_start = true;  // only white space since the last newline
        while (p < e) {
            const char c = *p;
            const CharClass k = cls(c);
            if (k == kSpace) {
                ++p;
                continue;
            }
            if (k == kNewline) {
                line_start = true;
                ++p;
                continue;
            }
            const uint32_t at = static_cast<uint32_t>(p - b);
            const char* q = p + 1;
            LexKind kind = LexKind::Punct;
            if (k == kIdent) {
                while (q < e && is_ident_char(*q)) ++q;
                kind = LexKind::Ident;
                if (q < e && (*q == '"' || *q == '\'') &&
                    is_encoding_prefix(std::string_view(p, static_cast<size_t>(q - p))))
                    kind = LexKind::String;  // u8"..", L'..', R"(..)": the slow path
            } else if (k == kDigit) {
                while (q < e && (is_ident_char(*q) || *q == '.' || *q == '\'')) ++q;
                kind = LexKind::Number;
            } else if (c == '/' || c == '"' || c == '\'' || c == '\\' || c == '#') {
                kind = LexKind::String;  // comments, literals, splices, directives
            } else if (q < e && is_pair(c, *q)) {
                ++q;
            }
            if (kind == LexKind::String) {
                p_ = at;
                if (c == '\\' && splice_at(p_)) {
                    p_ += splice_len(p_);
                } else if (c == '#' && line_start) {
                    directive();
                    line_start = true;
                } else {
                    p_ = slow_token(false);
                    line_start = false;
                }
                p = b + p_;
                continue;
            }
            add(kind, std::string_view(p, static_cast<size_t>(q - p)), at);
            p = q;
            line_start = false;
        }
        p_ = s_.size();
    }

    // Adds one token of code. Unless all tokens are wanted, only those the
    // scanner can look at are kept: `void name(...)` and the 16 tokens after
    // it, invocations of the macros defined so far, and the two tokens after
    // an annotation. That is about a sixth of a kernel file, and memory is
    // most of the scanner's time on big files.
    [[gnu::always_inline]] void add(LexKind kind, std::string_view text, uint32_t at) {
        auto& toks = out_.tokens;
        const uint32_t index = static_cast<uint32_t>(toks.size());
        bool keep = keep_all_ || record_next_ > 0 || open_.size() > region_;
        if (record_next_ > 0) --record_next_;
        const bool is_void = kind == LexKind::Ident && text.size() == 4 && text == "void";
        if (kind == LexKind::Ident && open_.size() <= region_) {
            if (is_void) {
                keep = true;
                record_next_ = std::max<uint32_t>(record_next_, 2);  // the name and `(`
            } else if (defined_.contains(text)) {
                keep = true;
                record_next_ = std::max<uint32_t>(record_next_, 1);  // `(`
            }
        }
        if (kind == LexKind::Punct && text.size() == 1 &&
            kTable.bracket[static_cast<unsigned char>(text[0])])
            keep |= bracket(text[0], index);
        if (keep) toks.emplace_back(kind, text, at);
        void_before_last_ = last_is_void_;
        last_is_void_ = is_void;
        last_kept_ident_ = kind == LexKind::Ident && keep ? index : Lexed::kUnclosed;
    }

    // Bracket bookkeeping for the code token about to be added at `index`,
    // `c`. A `(` after a kept identifier is a call: recorded, and the start of
    // a region that is kept up to its `)`. Returns true when `c` must be kept.
    bool bracket(char c, uint32_t index) {
        switch (c) {
            case '(':
                if (last_kept_ident_ != Lexed::kUnclosed) {
                    if (region_ == kNoRegion) {
                        region_ = open_.size();
                        region_void_ = void_before_last_;
                    }
                    open_.push_back(static_cast<uint32_t>(out_.calls.size()));
                    out_.calls.push_back({out_.tokens[last_kept_ident_].text(), last_kept_ident_,
                                          Lexed::kUnclosed, void_before_last_});
                    return true;
                }
                [[fallthrough]];
            case '[':
            case '{':
                open_.push_back(Lexed::kUnclosed);
                return false;
            case ')':
            case ']':
            case '}':
                if (open_.empty()) return false;
                if (open_.back() != Lexed::kUnclosed) out_.calls[open_.back()].close = index;
                open_.pop_back();
                if (open_.size() == region_) {
                    region_ = kNoRegion;
                    // What follows a signature says whether it is a definition.
                    if (region_void_) record_next_ = std::max<uint32_t>(record_next_, 16);
                    return true;
                }
                return false;
            default:
                return false;
        }
    }

    // Any other token of code at p_ (literals, comments, punctuators);
    // returns the offset after it.
    size_t slow_token(bool in_directive) {
        Lexeme l = lexeme(in_directive);
        if (!l.skip) add(l.kind, s_.substr(p_, l.end - p_), static_cast<uint32_t>(p_));
        return l.end;
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
                Lexeme l = lexeme(/*in_directive=*/true);
                if (!l.skip)
                    toks.emplace_back(l.kind, s_.substr(p_, l.end - p_), static_cast<uint32_t>(p_));
                p_ = l.end;
            }
        }
        return toks;
    }

    void directive() {
        uint32_t at = static_cast<uint32_t>(p_);
        ++p_;  // '#'
        std::vector<LexToken> toks = directive_tokens();
        if (toks.empty() || toks[0].kind != LexKind::Ident) return;
        std::string_view kw = toks[0].text();
        if (kw == "define") {
            define(toks, at);
        } else if (kw == "if" && toks.size() == 2 &&
                   (toks[1].text() == "0" || toks[1].text() == "false")) {
            skip_disabled_group();
        }
    }

    // Records `#define NAME(params) body`. Object-like macros define no
    // functions and are ignored.
    void define(const std::vector<LexToken>& toks, uint32_t at) {
        if (toks.size() < 3 || toks[1].kind != LexKind::Ident || toks[2].text() != "(") return;
        // Function-like only when `(` follows the name without white space.
        if (toks[2].offset != toks[1].offset + toks[1].text().size()) return;
        MacroDef m;
        m.name = toks[1].text();
        m.offset = at;
        size_t i = 3;
        for (; i < toks.size() && toks[i].text() != ")"; ++i) {
            if (toks[i].kind == LexKind::Ident)
                m.params.push_back(toks[i].text());
            else if (toks[i].text() == ".") {
                if (i + 2 < toks.size() && toks[i + 1].text() == "." && toks[i + 2].text() == ".") {
                    m.params.push_back("__VA_ARGS__");
                    i += 2;
                }
            }
        }
        if (i >= toks.size()) return;  // unterminated parameter list
        m.body.assign(toks.begin() + static_cast<long>(i) + 1, toks.end());
        defined_.insert(m.name);
        out_.macros.push_back(std::move(m));
    }

    // Moves p_ to the end of the line, past splices, comments and literals,
    // which may hide a newline or a `/*` that is not a comment.
    void skip_rest_of_line() {
        while (p_ < s_.size() && s_[p_] != '\n') {
            char c = s_[p_];
            char d = p_ + 1 < s_.size() ? s_[p_ + 1] : '\0';
            if (splice_at(p_))
                p_ += splice_len(p_);
            else if (c == '/' && d == '*')
                block_comment();
            else if (c == '/' && d == '/')
                line_comment();
            else if (c == '"' || c == '\'')
                p_ = std::min(quoted(p_), s_.size());
            else
                ++p_;
        }
    }

    // After `#if 0`: skips lines up to the matching #else, #elif or #endif,
    // counting nested conditionals.
    void skip_disabled_group() {
        int depth = 0;
        while (p_ < s_.size()) {
            skip_rest_of_line();
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

    static constexpr size_t kNoRegion = SIZE_MAX;

    std::string_view s_;
    const bool keep_all_;
    size_t p_ = 0;
    Lexed out_;
    NameSet defined_;                              // function-like macros #defined so far
    uint32_t record_next_ = 0;                     // tokens to keep whatever they are
    size_t region_ = kNoRegion;                    // open_.size() outside the kept region
    bool region_void_ = false;                     // the region is `void name(...)`
    uint32_t last_kept_ident_ = Lexed::kUnclosed;  // the previous token, if a kept identifier
    bool last_is_void_ = false;
    bool void_before_last_ = false;
    // Unclosed brackets, innermost last: the index of the call a `(` opens,
    // or kUnclosed for other brackets.
    std::vector<uint32_t> open_;
};

}  // namespace

Lexed lex(std::string_view source, bool all_tokens) {
    return Lexer(source, all_tokens).run();
}

}  // namespace bekc
