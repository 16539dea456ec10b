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

// 16 bytes: a file has about one token per four bytes, and the scanner's
// speed on big files is mostly the memory its tokens take. Tokens longer than
// 16 MiB (only literals can be) keep their first 16 MiB as text.
struct LexToken {
    static constexpr size_t kMaxLength = (size_t{1} << 24) - 1;

    LexToken() = default;
    LexToken(LexKind k, std::string_view t, uint32_t o)
        : ptr_(t.data()),
          offset(o),
          len_(static_cast<uint32_t>(t.size() < kMaxLength ? t.size() : kMaxLength)),
          kind(k) {}

    // Into the source, or into Lexed::arena for synthesized tokens.
    std::string_view text() const { return {ptr_, len_}; }
    void set_text(std::string_view t) { *this = LexToken(kind, t, offset); }

  private:
    const char* ptr_;

  public:
    uint32_t offset;  // byte offset in the source of the token

  private:
    uint32_t len_ : 24;

  public:
    LexKind kind : 8;
};
static_assert(sizeof(LexToken) == 16);

// True when `t` is the token `lit`: a size check and a fixed-size compare,
// which compilers inline (string_view's operator== calls memcmp).
template <size_t N>
bool is(const LexToken& t, const char (&lit)[N]) {
    std::string_view s = t.text();
    return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
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
    // Tokens of code outside directives: every one, or only those the scanner
    // looks at (each `void name(...)` with the 16 tokens after it, each
    // invocation of a macro #defined before it, and the two tokens after each
    // annotation), in source order.
    std::vector<LexToken> tokens;
    // The identifiers directly followed by `(`: the only places a macro is
    // invoked or a function named, so the scanner looks nowhere else. Kept
    // apart from `tokens`, with their closing `)`, so that the scanner's walk
    // over them stays in cache.
    struct Call {
        std::string_view name;
        uint32_t index;  // of the identifier in `tokens`
        // Of the `)` closing the call, or kUnclosed. `(`, `[` and `{` count as
        // one kind of bracket, as everywhere in the scanner.
        uint32_t close = kUnclosed;
        bool after_void;  // `void name(`
    };
    static constexpr uint32_t kUnclosed = UINT32_MAX;
    std::vector<Call> calls;
    std::vector<LineComment> comments;  // in source order
    std::vector<MacroDef> macros;       // function-like #defines, in source order
    std::vector<uint32_t> line_starts;  // offset of each line's first byte
    size_t source_size = 0;
    std::deque<std::string> arena;  // storage for synthesized token text

    // 1-based line and column of a byte offset.
    int line_of(uint32_t offset) const;
    int column_of(uint32_t offset) const;
};

// With `all_tokens`, `tokens` holds every token of code (for tests and
// tools); without, only those the scanner looks at (see Lexed::tokens).
Lexed lex(std::string_view source, bool all_tokens = false);

}  // namespace bekc
