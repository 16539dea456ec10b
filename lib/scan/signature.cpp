#include "scan/signature.hpp"

#include <algorithm>

#include "scan/macro.hpp"

namespace bekc {

namespace {

// Splits the tokens between `(` at `open` and its `)` at top-level commas.
std::vector<Param> split_params(const std::vector<LexToken>& tokens, size_t open, size_t close) {
    std::vector<Param> params;
    if (close == open + 1) return params;
    params.emplace_back();
    int depth = 0, angle = 0;
    bool in_default = false;
    for (size_t i = open + 1; i < close; ++i) {
        const LexToken& t = tokens[i];
        if (t.kind == LexKind::Punct) {
            if (is(t, "(") || is(t, "[") || is(t, "{")) ++depth;
            if (is(t, ")") || is(t, "]") || is(t, "}")) --depth;
            // Template arguments, as in `std::array<int, 3>`; only outside defaults,
            // where `<` could be a comparison.
            if (!in_default && is(t, "<")) ++angle;
            if (!in_default && is(t, ">") && angle > 0) --angle;
            if (!in_default && is(t, ">>") && angle > 0) angle = std::max(0, angle - 2);
            if (is(t, ",") && depth == 0 && angle == 0) {
                params.emplace_back();
                in_default = false;
                continue;
            }
            if (is(t, "=") && depth == 0 && angle == 0) in_default = true;
        }
        if (!in_default) params.back().tokens.push_back(t);
    }
    // `void f(void)` has no parameters.
    if (params.size() == 1 && params[0].tokens.size() == 1 && is(params[0].tokens[0], "void"))
        params.clear();
    return params;
}

bool is_type_word(std::string_view w) {
    static constexpr std::string_view kWords[] = {
        "const", "volatile", "unsigned",     "signed",     "int",     "long", "short",
        "char",  "bool",     "float",        "double",     "void",    "auto", "struct",
        "class", "typename", "__restrict__", "__restrict", "restrict"};
    for (auto k : kWords)
        if (k == w) return true;
    return false;
}

// Joins tokens as a C++ type is usually written: `unsigned int`, `BE::Tensor`.
std::string join_type(const std::vector<LexToken>& toks, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        bool word = toks[i].kind == LexKind::Ident || toks[i].kind == LexKind::Number;
        bool prev_word =
            i > 0 && (toks[i - 1].kind == LexKind::Ident || toks[i - 1].kind == LexKind::Number);
        if (i > 0 && ((word && prev_word) || (word && is(toks[i - 1], "&")) ||
                      (word && is(toks[i - 1], "*"))))
            out += ' ';
        out += toks[i].text();
    }
    return out;
}

bool names_tensor(const std::vector<LexToken>& toks, size_t n) {
    for (size_t i = 0; i + 2 < n + 1 && i + 2 < toks.size(); ++i)
        if (is(toks[i], "BE") && is(toks[i + 1], "::") && is(toks[i + 2], "Tensor")) return true;
    return false;
}

// True when a function body follows the parameter list ending before `i`:
// `{` comes before `;`, past qualifiers such as `noexcept` or `__attribute__((...))`.
bool body_follows(const std::vector<LexToken>& tokens, size_t i) {
    int depth = 0;
    for (size_t end = std::min(tokens.size(), i + 16); i < end; ++i) {
        const LexToken& t = tokens[i];
        if (t.kind != LexKind::Punct) continue;
        if (is(t, "(") || is(t, "[")) ++depth;
        if (is(t, ")") || is(t, "]")) --depth;
        if (depth < 0) return false;
        if (depth == 0 && is(t, "{")) return true;
        if (depth == 0 && (is(t, ";") || is(t, "}") || is(t, ","))) return false;
    }
    return false;
}

bool starts_site(const std::vector<LexToken>& tokens, size_t i) {
    return tokens[i].kind == LexKind::Ident && is(tokens[i], "void") &&
           tokens[i + 1].kind == LexKind::Ident && is(tokens[i + 2], "(");
}

}  // namespace

void add_signature(const std::vector<LexToken>& tokens, size_t i, size_t close,
                   std::string_view macro, std::vector<SignatureSite>& sites) {
    sites.push_back({tokens[i + 1].text(), split_params(tokens, i + 2, close), tokens[i].offset,
                     macro, body_follows(tokens, close + 1)});
}

void find_signatures(const std::vector<LexToken>& tokens, std::string_view macro,
                     std::vector<SignatureSite>& sites) {
    // Sites are rare in an expansion, so brackets are matched on demand; an
    // unclosed `(` holds everything after it, so the search stops there.
    for (size_t i = 0; i + 2 < tokens.size(); ++i) {
        if (!starts_site(tokens, i)) continue;
        size_t close = matching_close(tokens, i + 2);
        if (close >= tokens.size()) return;
        add_signature(tokens, i, close, macro, sites);
        i = close;
    }
}

ParamInfo classify_param(const Param& p) {
    ParamInfo info;
    const auto& toks = p.tokens;
    size_t type_len = toks.size();
    if (toks.size() >= 2 && toks.back().kind == LexKind::Ident &&
        !is_type_word(toks.back().text()) && !is(toks[toks.size() - 2], "::")) {
        info.name = std::string(toks.back().text());
        type_len = toks.size() - 1;
    }
    info.type_text = join_type(toks, type_len);
    bool is_const = false, amp = false, rvalue = false, pointer = false;
    for (size_t i = 0; i < type_len; ++i) {
        is_const |= is(toks[i], "const");
        amp |= is(toks[i], "&");
        rvalue |= is(toks[i], "&&");
        pointer |= is(toks[i], "*");
    }
    if (names_tensor(toks, type_len)) {
        if (pointer || rvalue || (amp && !is_const)) {
            info.problem = "parameter '" + info.type_text +
                           (info.name.empty() ? "" : " " + info.name) + "' cannot receive a buffer";
            info.fix =
                "take inputs as 'const BE::Tensor' (or 'const BE::Tensor&') and outputs "
                "as 'BE::Tensor', by value";
            return info;
        }
        info.kind = is_const ? ParamKind::TensorIn : ParamKind::TensorOut;
        info.by_reference = amp;
        return info;
    }
    auto scalar = pointer || amp || rvalue ? std::nullopt : attr_type_from_cxx(info.type_text);
    if (!scalar) {
        info.problem = "cannot infer an arg_spec token from parameter '" + info.type_text +
                       (info.name.empty() ? "" : " " + info.name) + "'";
        if (info.type_text.find("cudaStream_t") != std::string::npos)
            info.fix =
                "the stream arrives as 'int64_t stream'; cast it with "
                "(cudaStream_t)stream inside the function";
        else
            info.fix =
                "pointers, references and other types are not inferable: write the spec "
                "inline with explicit types, e.g. '// @BE <function> arg ret "
                "attr.<name>:<type>'";
        return info;
    }
    if (info.name.empty()) {
        info.problem = "parameter '" + info.type_text + "' has no name to call the attribute by";
        info.fix = "name the parameter; its name becomes the attribute name";
        return info;
    }
    if (!is_cxx_identifier(info.name)) {
        info.problem = "parameter name '" + info.name + "' is not an ASCII C++ identifier";
        info.fix =
            "attribute names are emitted into generated C++: use ASCII letters, digits "
            "and '_', not starting with a digit, and not a C++ keyword";
        return info;
    }
    info.kind =
        info.name == "stream" && *scalar == AttrType::Int64 ? ParamKind::Stream : ParamKind::Scalar;
    info.scalar = *scalar;
    return info;
}

Token token_for(const ParamInfo& info) {
    switch (info.kind) {
        case ParamKind::TensorIn:
            return Token{TokenKind::Arg, {}, {}, info.by_reference};
        case ParamKind::TensorOut:
            return Token{TokenKind::Ret, {}, {}, false};
        case ParamKind::Stream:
            return Token{TokenKind::Stream, {}, {}, false};
        default:
            return Token{TokenKind::Attr, info.name, info.scalar, false};
    }
}

}  // namespace bekc
