// Just enough of the C preprocessor to see through the macros that kernel
// libraries use to stamp out entry points:
//   #define DEFINE_SCALE(SUFFIX, T) void scale##SUFFIX(const BE::Tensor x, T a) {...}
//   DEFINE_SCALE(_f32, float)
// Function-like macros defined in the same file are expanded, with `##` pasting,
// `#` stringizing, __VA_ARGS__ and nested invocations; nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "scan/lexer.hpp"

namespace bekc {

// For each token, the index of the bracket closing it when it opens one, else
// `tokens.size()`. `(`, `[` and `{` count as one kind, as the scanner has
// always treated them. One pass, so that callers never rescan to find a `)`.
std::vector<uint32_t> match_brackets(const std::vector<LexToken>& tokens);

// Index of the closing bracket matching the opening one at `open`, or
// tokens.size() when unbalanced. Linear: use match_brackets for many queries.
size_t matching_close(const std::vector<LexToken>& tokens, size_t open);

class MacroExpander {
  public:
    // `lexed` owns the token text; pasted tokens are stored in its arena.
    explicit MacroExpander(Lexed& lexed);

    bool is_macro(std::string_view name) const {
        // Most names are not macros: a table of first characters and the
        // length range turn them away before hashing.
        if (name.empty() || !first_char_[static_cast<unsigned char>(name[0])] ||
            name.size() < min_len_ || name.size() > max_len_)
            return false;
        return macros_.count(name) != 0;
    }

    // Expands the invocation whose name is tokens[i] (a known macro followed by
    // `(`); `close` is the index of its `)` (tokens.size() when unbalanced).
    // Produced tokens keep the offsets they were written at (in the #define or
    // in an argument); the caller places what it finds at the invocation.
    std::vector<LexToken> expand_at(const std::vector<LexToken>& tokens, size_t i, size_t close);

    // True once the file has produced more expansion tokens than the scanner
    // allows (a macro "bomb"); expansions after that are cut short.
    bool exhausted() const { return exhausted_; }
    size_t token_limit() const { return limit_; }

  private:
    struct Macro {
        const MacroDef* def;
        std::vector<int> param_of;  // per body token: parameter index, or -1
    };
    struct ArgRange {
        size_t begin, end;  // into the token vector being expanded
    };

    void expand(const std::vector<LexToken>& in, std::vector<LexToken>& out, int depth);
    bool collect_args(const std::vector<LexToken>& in, const std::vector<uint32_t>& match,
                      size_t open, std::vector<ArgRange>& args) const;
    void substitute(const Macro& m, const std::vector<LexToken>& in,
                    const std::vector<ArgRange>& args, std::vector<LexToken>& out, int depth);
    bool invokes_macro(const std::vector<LexToken>& toks) const;
    void append_arg(const Macro& m, const std::vector<LexToken>& in,
                    const std::vector<ArgRange>& args, size_t p, std::vector<LexToken>& out);
    bool charge(size_t tokens);
    std::string_view store(std::string text);

    Lexed& lexed_;
    std::unordered_map<std::string_view, Macro> macros_;
    std::vector<std::string_view> active_;  // macros being expanded, innermost last
    bool first_char_[256] = {};
    size_t min_len_ = SIZE_MAX, max_len_ = 0;
    size_t limit_;
    size_t budget_;  // tokens this file may still produce; bounds pathological input
    bool exhausted_ = false;
};

}  // namespace bekc
