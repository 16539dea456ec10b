// Finding `void name(...)` signatures in a token stream and reading what each
// parameter means for the arg_spec (SPEC §1.2, inference), and whether a
// token written in a spec fits the parameter it stands for.
#pragma once

#include <cstdint>
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

// Names the file declares for BE::Tensor (`using T = BE::Tensor;`, `typedef
// const BE::Tensor& In;`, `using BE::Tensor;`, `using namespace BE;`), so that
// parameters spelled with them are read as written out.
class TensorAliases {
  public:
    // Collects them from every token of a file (lex(text, true)).
    explicit TensorAliases(const std::vector<LexToken>& tokens);
    TensorAliases() = default;

    // The type `name` stands for when it was declared before `before`.
    const std::vector<LexToken>* find(std::string_view name, uint32_t before) const;

  private:
    struct Alias {
        std::string_view name;
        std::vector<LexToken> type;
        uint32_t offset;
    };
    std::vector<Alias> aliases_;
};

enum class ParamKind { TensorIn, TensorOut, Stream, Scalar, Invalid };

// What a parameter's type is, whatever its name: the check of written specs
// needs this also for parameters inference rejects (an unnamed `float`).
enum class TypeClass {
    TensorIn,   // const BE::Tensor, const BE::Tensor&, BE::Tensor const
    TensorOut,  // BE::Tensor by value
    TensorBad,  // BE::Tensor&, BE::Tensor*, BE::Tensor&&, BE::Tensor[]
    Scalar,     // a C++ spelling of an attribute type (`scalar` says which)
    Other,
};

struct ParamInfo {
    ParamKind kind = ParamKind::Invalid;
    TypeClass type = TypeClass::Other;
    std::string name;       // empty when unnamed
    std::string type_text;  // "const float", "BE::Tensor"
    bool by_reference = false;
    AttrType scalar = AttrType::Int32;
    // For TypeClass::Other: the one identifier the type is spelled with
    // (`T` in `const T x`) when bekc does not know it; it may be an alias.
    std::string unknown_name;
    std::string problem;  // why it is Invalid
    std::string fix;
};

// With `aliases`, names declared before `site_offset` are read through.
ParamInfo classify_param(const Param& p, const TensorAliases* aliases = nullptr,
                         uint32_t site_offset = 0);

// The token a classified parameter implies; only for kinds other than Invalid.
Token token_for(const ParamInfo& info);

// The parameter types of a site as C++ compares them for overloading: names,
// default arguments and top-level const left out, scalar spellings folded
// (`int` and `int32_t` are one type).
std::string parameter_types_key(const SignatureSite& site, const TensorAliases* aliases);

// Why the token written for a parameter does not fit it; nullopt when it fits
// or only the compiler can tell (a type bekc does not know).
struct TokenMismatch {
    std::string message;  // "'ret' does not match parameter 1, 'const BE::Tensor x': ..."
    std::string fix;
};
std::optional<TokenMismatch> check_token(const Token& token, std::string_view written, size_t index,
                                         const ParamInfo& param);

}  // namespace bekc
