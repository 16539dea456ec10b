// Finding `void name(...)` signatures in a token stream and reading what each
// parameter means for the arg_spec (SPEC §1.2, inference).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scan/lexer.hpp"
#include "scan/spec.hpp"

namespace bekc {

struct Param {
    std::vector<LexToken> tokens;  // without a default argument
};

// One `void name(params)` seen in the file or in a macro expansion.
struct SignatureSite {
    std::string_view name;
    std::vector<Param> params;
    uint32_t offset = 0;      // of `void`; for macro-made ones, of the invocation
    std::string_view macro;   // the invoked macro, empty for code written out
    bool definition = false;  // a body follows; false for a prototype
};

// Appends the site `void name(...)` whose `void` is tokens[i] and whose `)`
// is tokens[close].
void add_signature(const std::vector<LexToken>& tokens, size_t i, size_t close,
                   std::string_view macro, std::vector<SignatureSite>& sites);

// Appends every `void name(...)` in `tokens` (a macro expansion).
void find_signatures(const std::vector<LexToken>& tokens, std::string_view macro,
                     std::vector<SignatureSite>& sites);

enum class ParamKind { TensorIn, TensorOut, Stream, Scalar, Invalid };

struct ParamInfo {
    ParamKind kind = ParamKind::Invalid;
    std::string name;       // empty when unnamed
    std::string type_text;  // "const float", "BE::Tensor"
    bool by_reference = false;
    AttrType scalar = AttrType::Int32;
    std::string problem;  // why it is Invalid
    std::string fix;
};

ParamInfo classify_param(const Param& p);

// The token a classified parameter implies; only for kinds other than Invalid.
Token token_for(const ParamInfo& info);

}  // namespace bekc
