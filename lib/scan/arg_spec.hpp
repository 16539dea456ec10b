// Parsing of arg_spec tokens as users write them (`args`, `attrs.x`, `attr.x:float32`)
// into canonical Tokens. Shared by `// @BE` annotations and `--function` specs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scan/spec.hpp"

namespace bekc {

// A token as written, with its column (1-based, 0 when it has none).
struct RawToken {
    std::string text;
    int column = 0;
};

// A parsed token, before bare `attr.x` gets its type from the signature.
struct ParsedToken {
    Token token;
    bool type_given = true;  // false for a bare `attr.x`
    int column = 0;
};

struct TokenError {
    std::string message;
    std::string fix;
    int column = 0;
};

// Parses one token; aliases are normalised here.
std::optional<ParsedToken> parse_token(const RawToken& raw, TokenError& error);

// Splits an annotation's text ("vector_add arg, arg ret") at white space and
// commas; `base_column` is the column of text[0].
std::vector<RawToken> split_tokens(std::string_view text, int base_column);

// The rules of SPEC §1.2 that concern a whole spec: at least one ret, at most
// one stream, no stream in a CPU build, no attribute named twice. Returns the
// first violation.
std::optional<TokenError> check_spec_rules(const std::vector<ParsedToken>& tokens, bool cuda);

// Edit distance (a swap of neighbours counts one), for "did you mean" notes.
size_t edit_distance(std::string_view a, std::string_view b);

// The closest of `candidates` to `wrong` when it is a plausible typo (at
// most two edits, fewer than half the word), for "did you mean".
std::optional<std::string> nearest_word(std::string_view wrong,
                                        const std::vector<std::string>& candidates);

// "float" -> "float32", "flaot32" -> "float32" and the like, for "did you
// mean" notes.
std::optional<std::string_view> suggest_attr_type(std::string_view wrong);

// "bool, int8, ..., bfloat16".
std::string attr_type_list();

}  // namespace bekc
