#include "scan/arg_spec.hpp"

#include <algorithm>

namespace bekc {

namespace {

// Aliases accepted in specs, normalised before use (SPEC §1.2).
struct Alias {
    std::string_view written;
    TokenKind kind;
};
constexpr Alias kPlainTokens[] = {
    {"arg", TokenKind::Arg},  {"args", TokenKind::Arg},      {"ret", TokenKind::Ret},
    {"rets", TokenKind::Ret}, {"stream", TokenKind::Stream}, {"ctx.stream", TokenKind::Stream},
};
constexpr std::string_view kAttrPrefixes[] = {"attr.", "attrs."};

// Spellings users reach for, mapped to the type names bekc accepts.
constexpr std::pair<std::string_view, std::string_view> kTypeSuggestions[] = {
    {"float", "float32"},   {"double", "float64"},  {"half", "float16"},  {"f32", "float32"},
    {"f64", "float64"},     {"f16", "float16"},     {"bf16", "bfloat16"}, {"int", "int32"},
    {"long", "int64"},      {"i32", "int32"},       {"i64", "int64"},     {"uint", "uint32"},
    {"char", "int8"},       {"short", "int16"},     {"int32_t", "int32"}, {"int64_t", "int64"},
    {"uint32_t", "uint32"}, {"uint64_t", "uint64"}, {"bool_", "bool"},    {"float32_t", "float32"},
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

size_t edit_distance(std::string_view a, std::string_view b) {
    // Optimal string alignment: insertions, deletions, substitutions and
    // swaps of two neighbours ("agr" for "arg") each cost one.
    const size_t w = b.size() + 1;
    std::vector<size_t> d((a.size() + 1) * w);
    for (size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t cost = a[i - 1] != b[j - 1];
            d[i * w + j] = std::min(
                {d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, d[(i - 1) * w + j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i * w + j] = std::min(d[i * w + j], d[(i - 2) * w + j - 2] + 1);
        }
    }
    return d.back();
}

namespace {

// The closest of `candidates` to `wrong` when it is a plausible typo: at most
// two edits, and fewer than half the word.
template <typename Range>
std::optional<std::string_view> nearest(std::string_view wrong, const Range& candidates) {
    std::optional<std::string_view> best;
    size_t best_distance = 3;
    for (std::string_view c : candidates) {
        size_t d = edit_distance(wrong, c);
        if (d < best_distance && 2 * d < std::max(wrong.size(), c.size())) {
            best = c;
            best_distance = d;
        }
    }
    return best;
}

// "did you mean 'arg'?" for a token that is not one.
std::optional<std::string> suggest_token(std::string_view wrong) {
    std::vector<std::string_view> plain;
    for (const auto& alias : kPlainTokens) plain.push_back(alias.written);
    if (auto p = nearest(wrong, plain)) return std::string(*p);
    // "attr:x", "attribute.x", "atr.x:float32": an attribute with a misspelt prefix.
    size_t sep = wrong.find_first_of(".:");
    if (sep != std::string_view::npos && sep + 1 < wrong.size() &&
        nearest(wrong.substr(0, sep), std::vector<std::string_view>{"attr", "attrs"}).has_value())
        return "attr." + std::string(wrong.substr(sep + 1));
    if (wrong.rfind("attr", 0) == 0 && sep == std::string_view::npos)
        return "attr." + std::string(wrong.substr(wrong.size() > 4 && wrong[4] == '_' ? 5 : 4));
    return std::nullopt;
}

bool is_separator(std::string_view text, size_t i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == ',' || c == '\r' || c == '\n') return true;
    // A backslash ending the line continues a `//` comment, and the annotation.
    return c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r');
}

}  // namespace

std::optional<std::string> nearest_word(std::string_view wrong,
                                        const std::vector<std::string>& candidates) {
    auto best = nearest(wrong, candidates);
    return best ? std::optional<std::string>(*best) : std::nullopt;
}

std::optional<std::string_view> suggest_attr_type(std::string_view wrong) {
    for (const auto& [from, to] : kTypeSuggestions)
        if (from == wrong) return to;
    std::vector<std::string_view> names;
    for (const auto& row : attr_types()) names.push_back(row.name);
    return nearest(wrong, names);
}

std::vector<RawToken> split_tokens(std::string_view text, int base_column) {
    std::vector<RawToken> out;
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && is_separator(text, i)) ++i;
        size_t start = i;
        while (i < text.size() && !is_separator(text, i)) ++i;
        if (i > start)
            out.push_back({std::string(text.substr(start, i - start)),
                           base_column + static_cast<int>(start)});
    }
    return out;
}

std::optional<ParsedToken> parse_token(const RawToken& raw, TokenError& error) {
    const std::string& t = raw.text;
    for (const auto& alias : kPlainTokens)
        if (alias.written == t)
            return ParsedToken{Token{alias.kind, {}, {}, false}, true, raw.column};

    for (auto prefix : kAttrPrefixes) {
        if (t.rfind(prefix, 0) != 0) continue;
        std::string_view rest = std::string_view(t).substr(prefix.size());
        size_t colon = rest.find(':');
        std::string_view name = rest.substr(0, colon);
        if (std::string why = identifier_problem(name); !why.empty()) {
            error = {"attribute name '" + std::string(name) + "' in '" + t + "' " + why,
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
                fix =
                    "did you mean 'attr." + std::string(name) + ":" + std::string(*s) + "'? " + fix;
            error = {"unknown attribute type '" + std::string(type_name) + "' in '" + t + "'", fix,
                     raw.column + static_cast<int>(prefix.size() + name.size() + 1)};
            return std::nullopt;
        }
        out.token.attr_type = *type;
        return out;
    }
    std::string fix =
        "tokens are 'arg', 'ret', 'stream' and 'attr.<name>' or "
        "'attr.<name>:<type>' (aliases: 'args', 'rets', 'ctx.stream', "
        "'attrs.<name>')";
    if (auto s = suggest_token(t)) fix = "did you mean '" + *s + "'? " + fix;
    error = {"unknown arg_spec token '" + t + "'", fix, raw.column};
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
