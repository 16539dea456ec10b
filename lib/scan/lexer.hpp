// A C/C++ lexer just deep enough for finding exports: it drops comments,
// string and character literals and `#if 0` blocks, keeps `//` comments aside
// (annotations live there), and collects function-like `#define`s.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace bekc {

enum class LexKind : uint8_t { Ident, Number, Punct, String };

// Trivial (no member initializers), so that vectors of tokens copy with
// memmove: macro expansion copies a lot of them.
struct LexToken {
    LexToken() = default;
    LexToken(LexKind k, std::string_view t, uint32_t o) : text(t), offset(o), kind(k) {}

    // Ordered for size: a file has about one token per four bytes.
    std::string_view text;  // into the source, or into Lexed::arena for synthesized tokens
    uint32_t offset;        // byte offset in the source of the token (or of its macro invocation)
    LexKind kind;
};

// True when `t` is the token `lit`: a size check and a fixed-size compare,
// which compilers inline (string_view's operator== calls memcmp).
template <size_t N>
bool is(const LexToken& t, const char (&lit)[N]) {
    return t.text.size() == N - 1 && std::memcmp(t.text.data(), lit, N - 1) == 0;
}

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
    // The identifiers directly followed by `(`: the only places a macro is
    // invoked or a function named, so the scanner looks nowhere else. Kept
    // apart from `tokens`, with their closing `)`, so that the scanner's walk
    // over them stays in cache.
    struct Call {
        std::string_view name;
        uint32_t index;   // of the identifier in `tokens`
        // Of the `)` closing the call, or kUnclosed. `(`, `[` and `{` count as
        // one kind of bracket, as everywhere in the scanner.
        uint32_t close = kUnclosed;
        bool after_void;  // `void name(`
    };
    static constexpr uint32_t kUnclosed = UINT32_MAX;
    std::vector<Call> calls;
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
