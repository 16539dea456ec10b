#include "scan/python_loads.hpp"

#include <cctype>
#include <optional>

namespace bekc {

namespace {

bool is_ident(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// A string literal starting at text[i] (after an optional prefix already
// skipped); returns the index after it. Triple quotes and escapes are
// honoured. `closed`: whether its closing quote was found.
size_t skip_string(std::string_view text, size_t i, std::string* value, bool* closed = nullptr) {
    char q = text[i];
    bool triple = text.substr(i, 3) == std::string_view(std::string(3, q));
    size_t j = i + (triple ? 3 : 1);
    std::string out;
    while (j < text.size()) {
        char c = text[j];
        if (c == '\\' && j + 1 < text.size()) {
            out += text[j + 1];
            j += 2;
            continue;
        }
        if (triple ? text.substr(j, 3) == std::string_view(std::string(3, q)) : c == q) {
            if (value) *value = out;
            if (closed) *closed = true;
            return j + (triple ? 3 : 1);
        }
        if (!triple && c == '\n') break;  // unterminated: stop at the line end
        out += c;
        ++j;
    }
    if (value) value->clear();
    if (closed) *closed = false;
    return j;
}

// Whether text[i] starts a string literal, and whether it is a plain one (an
// f-string or bytes literal is not a name bekc can know).
bool string_start(std::string_view text, size_t i, size_t& quote, bool& plain) {
    size_t j = i;
    while (j < text.size() && j - i < 2 && std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
    if (j >= text.size() || (text[j] != '\'' && text[j] != '"')) return false;
    std::string prefix(text.substr(i, j - i));
    for (char& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!(prefix.empty() || prefix == "r" || prefix == "u" || prefix == "f" || prefix == "b" ||
          prefix == "rb" || prefix == "br" || prefix == "fr" || prefix == "rf"))
        return false;
    quote = j;
    plain = prefix.find('f') == std::string::npos && prefix.find('b') == std::string::npos;
    return true;
}

// White space, line continuations and comments from text[i]: the index after them.
size_t skip_blank(std::string_view text, size_t i) {
    while (i < text.size()) {
        if (text[i] == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
        } else if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
            i += 2;
        } else if (std::isspace(static_cast<unsigned char>(text[i]))) {
            ++i;
        } else {
            break;
        }
    }
    return i;
}

// A plain string literal at text[i], closed and without a backslash (whose
// meaning depends on its prefix) appended to `out`; the index after it, or
// npos when there is none.
size_t take_plain_literal(std::string_view text, size_t i, std::vector<std::string>& out) {
    size_t quote = 0;
    bool plain = false, closed = false;
    if (!string_start(text, i, quote, plain) || !plain) return std::string_view::npos;
    std::string value;
    size_t end = skip_string(text, quote, &value, &closed);
    if (!closed || text.substr(quote, end - quote).find('\\') != std::string_view::npos)
        return std::string_view::npos;
    out.push_back(std::move(value));
    return end;
}

// A keyword argument's value as KernelLoad::string_lists takes it: one plain
// literal, a list or tuple of them, or None; nullopt for anything else.
std::optional<std::vector<std::string>> string_list_value(std::string_view v) {
    std::vector<std::string> out;
    size_t i = skip_blank(v, 0);
    if (v.substr(i, 4) == "None" && skip_blank(v, i + 4) == v.size()) return out;
    char close = 0;
    if (i < v.size() && (v[i] == '[' || v[i] == '(')) {
        close = v[i] == '[' ? ']' : ')';
        i = skip_blank(v, i + 1);
    }
    for (;;) {
        if (close && i < v.size() && v[i] == close) {
            i = skip_blank(v, i + 1);
            break;
        }
        size_t end = take_plain_literal(v, i, out);
        if (end == std::string_view::npos) return std::nullopt;
        i = skip_blank(v, end);
        if (!close) break;
        if (i < v.size() && v[i] == ',')
            i = skip_blank(v, i + 1);
        else if (i >= v.size() || v[i] != close)
            return std::nullopt;
    }
    if (i != v.size()) return std::nullopt;
    return out;
}

// One parse of an argument list: the argument being read and what is known
// of it so far.
class CallParser {
  public:
    CallParser(std::string_view text, KernelLoad& load) : text_(text), load_(load) {}

    // The argument list whose '(' is at text[open].
    void parse(size_t open) {
        arg_start_ = open + 1;
        for (size_t i = open; i < text_.size();) {
            char c = text_[i];
            size_t quote = 0;
            bool plain = false;
            if (c == '#') {
                while (i < text_.size() && text_[i] != '\n') ++i;
            } else if (depth_ >= 1 && string_start(text_, i, quote, plain)) {
                i = take_string(quote, plain);
            } else if (c == '(' || c == '[' || c == '{') {
                if (++depth_ > 1) value_token();
                ++i;
            } else if (c == ')' || c == ']' || c == '}') {
                if (--depth_ == 0) return end_arg(i);
                ++i;
            } else if (depth_ == 1 && c == ',') {
                end_arg(i);
                tokens_in_value_ = 0;
                arg_start_ = ++i;
            } else if (depth_ == 1 && is_ident(c)) {
                i = take_identifier(i);
            } else {
                if (!std::isspace(static_cast<unsigned char>(c))) {
                    any_token_in_arg_ = true;
                    if (depth_ == 1) ++tokens_in_value_;
                }
                ++i;
            }
        }
    }

  private:
    void value_token() {
        any_token_in_arg_ = true;
        ++tokens_in_value_;
    }

    // The argument that ends at text[here] (a ',' or the closing bracket).
    void end_arg(size_t here) {
        if (!any_token_in_arg_) return;
        if (in_first_ && !arg_is_keyword_)
            load_.path_text = text_.substr(arg_start_, here - arg_start_);
        if (!arg_is_keyword_) ++load_.positional;
        if (pending_keyword_ == "name" && value_is_single_literal_ && tokens_in_value_ == 1)
            load_.name = value_literal_;
        if (arg_is_keyword_)
            if (auto list = string_list_value(text_.substr(value_start_, here - value_start_)))
                load_.string_lists[pending_keyword_] = std::move(*list);
        in_first_ = false;
        any_token_in_arg_ = arg_is_keyword_ = false;
        pending_keyword_.clear();
        value_is_single_literal_ = false;
        value_literal_.clear();
    }

    // A string literal whose quote is at text[quote]; the index after it.
    size_t take_string(size_t quote, bool plain) {
        std::string value;
        size_t end = skip_string(text_, quote, &value);
        value_token();
        if (in_first_ && !arg_is_keyword_ && plain) load_.path_parts.push_back(value);
        if (depth_ == 1 && arg_is_keyword_) {
            value_is_single_literal_ = plain && tokens_in_value_ == 1;
            value_literal_ = value;
        }
        return end;
    }

    // A name at text[i], directly in the list: a keyword argument's when
    // `=` follows it first in the argument, else a token of the value. The
    // index after it (and after the `=`).
    size_t take_identifier(size_t i) {
        size_t j = i;
        while (j < text_.size() && is_ident(text_[j])) ++j;
        size_t k = j;
        while (k < text_.size() && (text_[k] == ' ' || text_[k] == '\t' || text_[k] == '\n')) ++k;
        if (!any_token_in_arg_ && k < text_.size() && text_[k] == '=' &&
            (k + 1 >= text_.size() || text_[k + 1] != '=')) {
            std::string word(text_.substr(i, j - i));
            load_.keywords.push_back(word);
            arg_is_keyword_ = true;
            pending_keyword_ = word;
            any_token_in_arg_ = true;
            tokens_in_value_ = 0;
            value_start_ = k + 1;
            return k + 1;
        }
        value_token();
        return j;
    }

    std::string_view text_;
    KernelLoad& load_;
    int depth_ = 0;
    bool in_first_ = true, any_token_in_arg_ = false, arg_is_keyword_ = false;
    std::string pending_keyword_;  // set after `name =` until the value is seen
    bool value_is_single_literal_ = false;
    std::string value_literal_;
    size_t tokens_in_value_ = 0;
    size_t arg_start_ = 0;
    size_t value_start_ = 0;  // of the keyword argument being read: after its `=`
};

// Parses the argument list whose '(' is at text[open]; fills `load`.
void parse_call(std::string_view text, size_t open, KernelLoad& load) {
    CallParser(text, load).parse(open);
}

}  // namespace

namespace {

// A load call found by the lexer: where its name and '(' are, and the ')'
// that closes it (npos: none does).
struct CallSite {
    size_t fn = 0;  // index into kLoadFunctions
    size_t pos = 0, open = 0, close = std::string_view::npos;
    int line = 0;
};

constexpr std::string_view kLoadFunctions[] = {"load_cuda_file", "load_cpp_file"};

// One pass over the file: comments and string literals are skipped (a load
// named in either is not a call), every bracket is matched with a stack, and
// each `load_cuda_file(` / `load_cpp_file(` in code is a call site.
std::vector<CallSite> call_sites(std::string_view text) {
    std::vector<CallSite> sites;
    std::vector<size_t> open_brackets;  // positions of '(' '[' '{' not yet closed
    std::vector<size_t> site_of;        // per open bracket: its call site, or npos
    int line = 1;
    size_t counted = 0;
    bool after_def = false;  // the identifier before was `def`
    for (size_t i = 0; i < text.size();) {
        char c = text[i];
        size_t quote = 0;
        bool plain = false;
        if (c == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
            continue;
        }
        if (string_start(text, i, quote, plain)) {
            i = skip_string(text, quote, nullptr);
            after_def = false;
            continue;
        }
        if (is_ident(c)) {
            size_t j = i;
            while (j < text.size() && is_ident(text[j])) ++j;
            std::string_view word = text.substr(i, j - i);
            bool was_def = after_def;
            after_def = word == "def";
            size_t open = j;
            while (open < text.size() && (text[open] == ' ' || text[open] == '\t')) ++open;
            bool word_start = i == 0 || !is_ident(text[i - 1]);
            for (size_t f = 0; f < std::size(kLoadFunctions); ++f) {
                if (word != kLoadFunctions[f] || was_def || !word_start || open >= text.size() ||
                    text[open] != '(')
                    continue;
                for (; counted < i; ++counted)
                    if (text[counted] == '\n') ++line;
                sites.push_back({f, i, open, std::string_view::npos, line});
            }
            i = j;
            continue;
        }
        if (c == '(' || c == '[' || c == '{') {
            bool is_site = !sites.empty() && sites.back().open == i;
            open_brackets.push_back(i);
            site_of.push_back(is_site ? sites.size() - 1 : std::string_view::npos);
        } else if ((c == ')' || c == ']' || c == '}') && !open_brackets.empty()) {
            if (site_of.back() != std::string_view::npos) sites[site_of.back()].close = i;
            open_brackets.pop_back();
            site_of.pop_back();
        }
        if (!std::isspace(static_cast<unsigned char>(c))) after_def = false;
        ++i;
    }
    return sites;
}

}  // namespace

// Linear in the file's size: each call's arguments are parsed once, up to
// its closing bracket, and a load call inside another one's arguments is not
// parsed again. A call that is never closed is a syntax error to Python, so
// the file cannot load anything: it is skipped, not parsed to the end of the
// file (which, for many such calls, took quadratic time).
std::vector<KernelLoad> find_kernel_loads(std::string_view text) {
    std::vector<CallSite> sites = call_sites(text);
    std::vector<KernelLoad> out;
    // In the order of the functions, then of the text, as callers expect.
    for (size_t f = 0; f < std::size(kLoadFunctions); ++f) {
        size_t parsed_to = 0;  // the end of the last call parsed
        for (const auto& s : sites) {
            if (s.fn != f || s.close == std::string_view::npos || s.pos < parsed_to) continue;
            KernelLoad load;
            load.function = std::string(kLoadFunctions[f]);
            load.line = s.line;
            parse_call(text.substr(0, s.close + 1), s.open, load);
            out.push_back(std::move(load));
            parsed_to = s.close;
        }
    }
    return out;
}

}  // namespace bekc
