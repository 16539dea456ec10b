#include "scan/arg_spec.hpp"

namespace bekc {

namespace {

// Aliases accepted in specs, normalised before use (SPEC §1.2).
struct Alias {
    std::string_view written;
    TokenKind kind;
};
constexpr Alias kPlainTokens[] = {
    {"arg", TokenKind::Arg},       {"args", TokenKind::Arg},
    {"ret", TokenKind::Ret},       {"rets", TokenKind::Ret},
    {"stream", TokenKind::Stream}, {"ctx.stream", TokenKind::Stream},
};
constexpr std::string_view kAttrPrefixes[] = {"attr.", "attrs."};

// Spellings users reach for, mapped to the type names bekc accepts.
constexpr std::pair<std::string_view, std::string_view> kTypeSuggestions[] = {
    {"float", "float32"},   {"double", "float64"}, {"half", "float16"},  {"f32", "float32"},
    {"f64", "float64"},     {"f16", "float16"},    {"bf16", "bfloat16"}, {"int", "int32"},
    {"long", "int64"},      {"i32", "int32"},      {"i64", "int64"},     {"uint", "uint32"},
    {"char", "int8"},       {"short", "int16"},    {"int32_t", "int32"}, {"int64_t", "int64"},
    {"uint32_t", "uint32"}, {"uint64_t", "uint64"}, {"bool_", "bool"},   {"float32_t", "float32"},
};

}  // namespace

std::string attr_type_list() {
    std::string out;
    for (const auto& row : attr_types()) {
        if (!out.empty()) out += ", ";
        out += row.name;
    }
    return out;
}

std::optional<std::string_view> suggest_attr_type(std::string_view wrong) {
    for (const auto& [from, to] : kTypeSuggestions)
        if (from == wrong) return to;
    return std::nullopt;
}

std::vector<RawToken> split_tokens(std::string_view text, int base_column) {
    std::vector<RawToken> out;
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == ',' ||
                                   text[i] == '\r' || text[i] == '\n'))
            ++i;
        size_t start = i;
        while (i < text.size() && text[i] != ' ' && text[i] != '\t' && text[i] != ',' &&
               text[i] != '\r' && text[i] != '\n')
            ++i;
        if (i > start)
            out.push_back({std::string(text.substr(start, i - start)),
                           base_column + static_cast<int>(start)});
    }
    return out;
}

std::optional<ParsedToken> parse_token(const RawToken& raw, TokenError& error) {
    const std::string& t = raw.text;
    for (const auto& alias : kPlainTokens)
        if (alias.written == t) return ParsedToken{Token{alias.kind, {}, {}, false}, true, raw.column};

    for (auto prefix : kAttrPrefixes) {
        if (t.rfind(prefix, 0) != 0) continue;
        std::string_view rest = std::string_view(t).substr(prefix.size());
        size_t colon = rest.find(':');
        std::string_view name = rest.substr(0, colon);
        if (!is_cxx_identifier(name)) {
            error = {"attribute name '" + std::string(name) + "' in '" + t +
                         "' is not a C++ identifier",
                     "attribute names are emitted into generated C++: use ASCII letters, "
                     "digits and '_', not starting with a digit, and not a C++ keyword",
                     raw.column + static_cast<int>(prefix.size())};
            return std::nullopt;
        }
        ParsedToken out{Token{TokenKind::Attr, std::string(name), AttrType::Int32, false},
                        colon != std::string_view::npos, raw.column};
        if (colon == std::string_view::npos) return out;
        std::string_view type_name = rest.substr(colon + 1);
        auto type = attr_type_from_name(type_name);
        if (!type) {
            std::string fix = "attribute types are: " + attr_type_list();
            if (auto s = suggest_attr_type(type_name))
                fix = "did you mean 'attr." + std::string(name) + ":" + std::string(*s) +
                      "'? " + fix;
            error = {"unknown attribute type '" + std::string(type_name) + "' in '" + t + "'",
                     fix,
                     raw.column + static_cast<int>(prefix.size() + name.size() + 1)};
            return std::nullopt;
        }
        out.token.attr_type = *type;
        return out;
    }
    error = {"unknown arg_spec token '" + t + "'",
             "tokens are 'arg', 'ret', 'stream' and 'attr.<name>' or 'attr.<name>:<type>' "
             "(aliases: 'args', 'rets', 'ctx.stream', 'attrs.<name>')",
             raw.column};
    return std::nullopt;
}

std::optional<TokenError> check_spec_rules(const std::vector<ParsedToken>& tokens, bool cuda) {
    int rets = 0;
    const ParsedToken* stream = nullptr;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const ParsedToken& p = tokens[i];
        if (p.token.kind == TokenKind::Ret) ++rets;
        if (p.token.kind == TokenKind::Stream) {
            if (!cuda)
                return TokenError{"'stream' in a CPU (.cpp) build",
                                  "CPU handlers have no CUDA stream: remove the 'stream' "
                                  "token and the int64_t parameter, or compile the file as .cu",
                                  p.column};
            if (stream)
                return TokenError{"more than one 'stream' token",
                                  "a function receives at most one CUDA stream", p.column};
            stream = &p;
        }
        if (p.token.kind == TokenKind::Attr) {
            for (size_t j = 0; j < i; ++j)
                if (tokens[j].token.kind == TokenKind::Attr &&
                    tokens[j].token.attr_name == p.token.attr_name)
                    return TokenError{"attribute '" + p.token.attr_name + "' is listed twice",
                                      "give each attribute a distinct name", p.column};
        }
    }
    if (rets == 0)
        return TokenError{"no 'ret' token: a function must have at least one output",
                          "XLA allocates outputs; add a 'ret' token and a BE::Tensor parameter "
                          "the function writes its result into",
                          0};
    return std::nullopt;
}

}  // namespace bekc
