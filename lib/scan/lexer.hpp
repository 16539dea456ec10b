// A C/C++ lexer just deep enough for finding exports: it drops comments,
// string and character literals and `#if 0` blocks, keeps `//` comments aside
// (annotations live there), and collects function-like `#define`s.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace bekc {

enum class LexKind : uint8_t { Ident, Number, Punct, String };

struct LexToken {
    LexKind kind;
    std::string_view text;  // into the source, or into Lexed::arena for synthesized tokens
    uint32_t offset;        // byte offset in the source of the token (or of its macro invocation)
};

// A `//` comment outside any literal, block comment or `#if 0` block.
struct LineComment {
    std::string_view text;  // after the `//`, up to the end of the (logical) line
    uint32_t offset;        // of the first `/`
};

struct MacroDef {
    std::string_view name;
    std::vector<std::string_view> params;  // "__VA_ARGS__" stands for `...`
    std::vector<LexToken> body;
    uint32_t offset;
};

struct Lexed {
    std::vector<LexToken> tokens;        // code outside directives
    std::vector<LineComment> comments;   // in source order
    std::vector<MacroDef> macros;        // function-like #defines, in source order
    std::vector<uint32_t> line_starts;   // offset of each line's first byte
    std::deque<std::string> arena;       // storage for synthesized token text

    // 1-based line and column of a byte offset.
    int line_of(uint32_t offset) const;
    int column_of(uint32_t offset) const;
};

Lexed lex(std::string_view source);

}  // namespace bekc
