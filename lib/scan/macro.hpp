// Just enough of the C preprocessor to see through the macros that kernel
// libraries use to stamp out entry points:
//   #define DEFINE_SCALE(SUFFIX, T) void scale##SUFFIX(const BE::Tensor x, T a) {...}
//   DEFINE_SCALE(_f32, float)
// Function-like macros defined in the same file are expanded, with `##` pasting,
// `#` stringizing, __VA_ARGS__ and nested invocations; nothing else.
#pragma once

#include <string_view>
#include <unordered_map>
#include <vector>

#include "scan/lexer.hpp"

namespace bekc {

class MacroExpander {
public:
    // `lexed` owns the token text; pasted tokens are stored in its arena.
    explicit MacroExpander(Lexed& lexed);

    bool is_macro(std::string_view name) const { return macros_.count(name) != 0; }

    // Expands the invocation whose name is tokens[i] (a known macro followed by
    // `(`). Returns the expansion and sets `next` to the index after the closing
    // parenthesis. Every produced token carries the invocation's offset.
    std::vector<LexToken> expand_at(const std::vector<LexToken>& tokens, size_t i, size_t& next);

private:
    void expand(const std::vector<LexToken>& in, std::vector<LexToken>& out, int depth,
                std::vector<std::string_view>& active, uint32_t offset);
    bool collect_args(const std::vector<LexToken>& in, size_t open, size_t& close,
                      std::vector<std::vector<LexToken>>& args) const;
    void substitute(const MacroDef& m, const std::vector<std::vector<LexToken>>& args,
                    std::vector<LexToken>& out, uint32_t offset);
    std::string_view store(std::string text);

    Lexed& lexed_;
    std::unordered_map<std::string_view, const MacroDef*> macros_;
    size_t budget_;  // tokens this file may still produce; bounds pathological input
};

// Index of the closing bracket matching the opening one at `open`, or
// tokens.size() when unbalanced.
size_t matching_close(const std::vector<LexToken>& tokens, size_t open);

}  // namespace bekc
