#include "scan/python_loads.hpp"

#include <cctype>

namespace bekc {

namespace {

bool is_ident(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// A string literal starting at text[i] (after an optional prefix already
// skipped); returns the index after it. Triple quotes and escapes are honoured.
size_t skip_string(std::string_view text, size_t i, std::string* value) {
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
            return j + (triple ? 3 : 1);
        }
        if (!triple && c == '\n') break;  // unterminated: stop at the line end
        out += c;
        ++j;
    }
    if (value) value->clear();
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

// Parses the argument list whose '(' is at text[open]; fills `load`.
void parse_call(std::string_view text, size_t open, KernelLoad& load) {
    int depth = 0;
    bool in_first = true, any_token_in_arg = false, arg_is_keyword = false;
    std::string pending_keyword;  // set after `name =` until the value is seen
    bool value_is_single_literal = false;
    std::string value_literal;
    size_t tokens_in_value = 0;
    size_t arg_start = open + 1, here = arg_start;
    auto end_arg = [&] {
        if (!any_token_in_arg) return;
        if (in_first && !arg_is_keyword) load.path_text = text.substr(arg_start, here - arg_start);
        if (!arg_is_keyword) ++load.positional;
        if (pending_keyword == "name" && value_is_single_literal && tokens_in_value == 1)
            load.name = value_literal;
        in_first = false;
        any_token_in_arg = arg_is_keyword = false;
        pending_keyword.clear();
        value_is_single_literal = false;
        value_literal.clear();
    };
    for (size_t i = open; i < text.size();) {
        char c = text[i];
        if (c == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
            continue;
        }
        size_t quote = 0;
        bool plain = false;
        if (depth >= 1 && string_start(text, i, quote, plain)) {
            std::string value;
            i = skip_string(text, quote, &value);
            any_token_in_arg = true;
            ++tokens_in_value;
            if (in_first && !arg_is_keyword && plain) load.path_parts.push_back(value);
            if (depth == 1 && arg_is_keyword) {
                value_is_single_literal = plain && tokens_in_value == 1;
                value_literal = value;
            }
            continue;
        }
        if (c == '(' || c == '[' || c == '{') {
            ++depth;
            if (depth > 1) {
                any_token_in_arg = true;
                ++tokens_in_value;
            }
            ++i;
            continue;
        }
        if (c == ')' || c == ']' || c == '}') {
            if (--depth == 0) {
                here = i;
                end_arg();
                return;
            }
            ++i;
            continue;
        }
        if (depth == 1 && c == ',') {
            here = i;
            end_arg();
            tokens_in_value = 0;
            arg_start = ++i;
            continue;
        }
        if (depth == 1 && is_ident(c)) {
            size_t j = i;
            while (j < text.size() && is_ident(text[j])) ++j;
            size_t k = j;
            while (k < text.size() && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n')) ++k;
            if (!any_token_in_arg && k < text.size() && text[k] == '=' &&
                (k + 1 >= text.size() || text[k + 1] != '=')) {
                std::string word(text.substr(i, j - i));
                load.keywords.push_back(word);
                arg_is_keyword = true;
                pending_keyword = word;
                any_token_in_arg = true;
                tokens_in_value = 0;
                i = k + 1;
                continue;
            }
            any_token_in_arg = true;
            ++tokens_in_value;
            i = j;
            continue;
        }
        if (!std::isspace(static_cast<unsigned char>(c))) {
            any_token_in_arg = true;
            if (depth == 1) ++tokens_in_value;
        }
        ++i;
    }
}

}  // namespace

std::vector<KernelLoad> find_kernel_loads(std::string_view text) {
    std::vector<KernelLoad> out;
    int line = 1;
    size_t counted = 0;
    for (std::string_view fn :
         {std::string_view("load_cuda_file"), std::string_view("load_cpp_file")}) {
        size_t pos = 0;
        while ((pos = text.find(fn, pos)) != std::string_view::npos) {
            size_t after = pos + fn.size();
            bool word_start = pos == 0 || !is_ident(text[pos - 1]);
            size_t open = after;
            while (open < text.size() && (text[open] == ' ' || text[open] == '\t')) ++open;
            // `def load_cuda_file(` defines, it does not call.
            size_t back = pos;
            while (back > 0 && (text[back - 1] == ' ' || text[back - 1] == '\t')) --back;
            bool is_def = back >= 3 && text.substr(back - 3, 3) == "def" &&
                          (back == 3 || !is_ident(text[back - 4]));
            if (word_start && !is_def && open < text.size() && text[open] == '(') {
                KernelLoad load;
                load.function = std::string(fn);
                if (pos < counted) {
                    line = 1;
                    counted = 0;
                }
                for (; counted < pos; ++counted)
                    if (text[counted] == '\n') ++line;
                load.line = line;
                parse_call(text, open, load);
                out.push_back(std::move(load));
            }
            pos = after;
        }
    }
    return out;
}

}  // namespace bekc
