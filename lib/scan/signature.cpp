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

// Words that qualify or introduce a type without being it.
bool is_qualifier(std::string_view w) {
    static constexpr std::string_view kWords[] = {"const",      "volatile", "__restrict__",
                                                  "__restrict", "restrict", "struct",
                                                  "class",      "typename"};
    for (auto k : kWords)
        if (k == w) return true;
    return false;
}

// A parameter's type as the checks read it: its qualifiers, and the tokens
// left when they are taken away (`BE :: Tensor` in `const BE::Tensor&`).
struct TypeShape {
    bool is_const = false, amp = false, rvalue = false, pointer = false;
    std::vector<size_t> core;  // indices of the remaining tokens
};

TypeShape shape_of(const std::vector<LexToken>& type) {
    TypeShape s;
    int square = 0;
    for (size_t i = 0; i < type.size(); ++i) {
        const LexToken& t = type[i];
        if (is(t, "[")) {
            ++square;
            s.pointer = true;  // an array parameter is a pointer
        } else if (is(t, "]")) {
            square = std::max(0, square - 1);
        } else if (square > 0) {
            continue;
        } else if (is(t, "const")) {
            s.is_const = true;
        } else if (is(t, "&")) {
            s.amp = true;
        } else if (is(t, "&&")) {
            s.rvalue = true;
        } else if (is(t, "*")) {
            s.pointer = true;
        } else if (t.kind != LexKind::Ident || !is_qualifier(t.text())) {
            s.core.push_back(i);
        }
    }
    return s;
}

// `BE::Tensor` or `::BE::Tensor`, and nothing else: not `std::vector<BE::Tensor>`.
bool core_is_tensor(const std::vector<LexToken>& type, const TypeShape& s) {
    size_t k = !s.core.empty() && is(type[s.core[0]], "::") ? 1 : 0;
    return s.core.size() == k + 3 && is(type[s.core[k]], "BE") && is(type[s.core[k + 1]], "::") &&
           is(type[s.core[k + 2]], "Tensor");
}

// The identifier a type is spelled with when it is one bekc does not know
// (`T` in `const T&`), else empty.
std::string_view lone_name(const std::vector<LexToken>& type, const TypeShape& s) {
    if (s.core.size() != 1) return {};
    const LexToken& t = type[s.core[0]];
    return t.kind == LexKind::Ident && !is_type_word(t.text()) ? t.text() : std::string_view();
}

// Replaces the alias a type is spelled with by the type it stands for.
bool read_through(std::vector<LexToken>& type, const TensorAliases& aliases, uint32_t before) {
    TypeShape s = shape_of(type);
    std::string_view name = lone_name(type, s);
    const std::vector<LexToken>* target = name.empty() ? nullptr : aliases.find(name, before);
    if (!target) return false;
    auto at = type.begin() + static_cast<long>(s.core[0]);
    at = type.erase(at);
    type.insert(at, target->begin(), target->end());
    return true;
}

// The written token that fits a parameter, for notes; empty when none does.
std::string fitting_token(const ParamInfo& p) {
    switch (p.type) {
        case TypeClass::TensorIn:
            return "arg";
        case TypeClass::TensorOut:
            return "ret";
        case TypeClass::Scalar:
            if (p.kind == ParamKind::Stream) return "stream";
            return "attr." + (p.name.empty() ? std::string("<name>") : p.name) + ":" +
                   std::string(attr_type_info(p.scalar).name);
        default:
            return {};
    }
}

std::string write_instead(const ParamInfo& p) {
    std::string fit = fitting_token(p);
    return fit.empty() ? "the spec lists one token per C++ parameter, in order"
                       : "write '" + fit +
                             "' for it; the spec lists one token per C++ "
                             "parameter, in order";
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

TensorAliases::TensorAliases(const std::vector<LexToken>& toks) {
    // `using namespace BE;` makes a plain `Tensor` mean BE::Tensor.
    static const std::vector<LexToken> kTensor = {LexToken(LexKind::Ident, "BE", 0),
                                                  LexToken(LexKind::Punct, "::", 0),
                                                  LexToken(LexKind::Ident, "Tensor", 0)};
    for (size_t i = 0; i + 2 < toks.size(); ++i) {
        const bool is_using = is(toks[i], "using");
        if (!is_using && !is(toks[i], "typedef")) continue;
        size_t end = i + 1;  // the `;`, close by: an alias of BE::Tensor is short
        while (end < toks.size() && end - i < 24 && !is(toks[end], ";") && !is(toks[end], "{") &&
               !is(toks[end], "}"))
            ++end;
        if (end >= toks.size() || !is(toks[end], ";")) continue;
        std::string_view name;
        std::vector<LexToken> type;
        if (is_using && is(toks[i + 1], "namespace")) {
            size_t k = i + 2 + (is(toks[i + 2], "::") ? 1 : 0);
            if (k + 1 == end && is(toks[k], "BE")) {
                name = "Tensor";
                type = kTensor;
            }
        } else if (is_using && is(toks[i + 2], "=") && toks[i + 1].kind == LexKind::Ident) {
            name = toks[i + 1].text();  // using T = BE::Tensor;
            type.assign(toks.begin() + static_cast<long>(i) + 3,
                        toks.begin() + static_cast<long>(end));
        } else if (is_using) {
            type.assign(toks.begin() + static_cast<long>(i) + 1,
                        toks.begin() + static_cast<long>(end));
            if (shape_of(type).core.size() == type.size()) name = "Tensor";  // using BE::Tensor;
        } else if (end >= i + 3 && toks[end - 1].kind == LexKind::Ident) {
            name = toks[end - 1].text();  // typedef BE::Tensor T;
            type.assign(toks.begin() + static_cast<long>(i) + 1,
                        toks.begin() + static_cast<long>(end) - 1);
        }
        if (name.empty()) continue;
        read_through(type, *this, toks[i].offset);
        if (!core_is_tensor(type, shape_of(type))) continue;
        aliases_.push_back({name, std::move(type), toks[i].offset});
        i = end;
    }
}

const std::vector<LexToken>* TensorAliases::find(std::string_view name, uint32_t before) const {
    for (auto it = aliases_.rbegin(); it != aliases_.rend(); ++it)
        if (it->name == name && it->offset < before) return &it->type;
    return nullptr;
}

ParamInfo classify_param(const Param& p, const TensorAliases* aliases, uint32_t site_offset) {
    ParamInfo info;
    const auto& toks = p.tokens;
    std::vector<LexToken> type = toks;
    if (toks.size() >= 2 && toks.back().kind == LexKind::Ident &&
        !is_type_word(toks.back().text()) && !is(toks[toks.size() - 2], "::")) {
        type.pop_back();
        // `const T` is an unnamed T: a type is left when a name is taken away.
        if (shape_of(type).core.empty())
            type = toks;
        else
            info.name = std::string(toks.back().text());
    } else if (auto sq = std::find_if(toks.begin(), toks.end(),
                                      [](const LexToken& t) { return is(t, "["); });
               sq != toks.end() && sq - toks.begin() >= 2 && (sq - 1)->kind == LexKind::Ident &&
               !is_type_word((sq - 1)->text()) && !is(*(sq - 2), "::")) {
        // `BE::Tensor x[2]`: the name stands before the brackets.
        info.name = std::string((sq - 1)->text());
        type.erase(type.begin() + (sq - 1 - toks.begin()));
    }
    info.type_text = join_type(type, type.size());
    if (aliases) read_through(type, *aliases, site_offset);
    TypeShape s = shape_of(type);
    if (core_is_tensor(type, s)) {
        if (s.pointer || s.rvalue || (s.amp && !s.is_const)) {
            info.type = TypeClass::TensorBad;
            info.problem = "parameter '" + info.type_text +
                           (info.name.empty() ? "" : " " + info.name) + "' cannot receive a buffer";
            info.fix =
                "take inputs as 'const BE::Tensor' (or 'const BE::Tensor&') and outputs "
                "as 'BE::Tensor', by value";
            return info;
        }
        info.type = s.is_const ? TypeClass::TensorIn : TypeClass::TensorOut;
        info.kind = s.is_const ? ParamKind::TensorIn : ParamKind::TensorOut;
        info.by_reference = s.amp;
        return info;
    }
    auto scalar =
        s.pointer || s.amp || s.rvalue ? std::nullopt : attr_type_from_cxx(info.type_text);
    if (!scalar) {
        info.unknown_name = std::string(lone_name(type, s));
        if (info.unknown_name.empty() && !s.core.empty() && is(type[s.core.back()], "Tensor"))
            for (size_t i : s.core) info.unknown_name += type[i].text();  // `be::Tensor`
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
    info.type = TypeClass::Scalar;
    info.scalar = *scalar;
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
    return info;
}

std::string parameter_types_key(const SignatureSite& site, const TensorAliases* aliases) {
    std::string key;
    for (const auto& p : site.params) {
        ParamInfo info = classify_param(p, aliases, site.offset);
        std::string type = info.type_text;
        if (info.type == TypeClass::TensorIn || info.type == TypeClass::TensorOut)
            type = info.by_reference ? "const BE::Tensor&" : "BE::Tensor";
        else if (info.type == TypeClass::Scalar)
            type = std::string(attr_type_info(info.scalar).cxx_type);
        else if (type.size() > 6 && type.compare(type.size() - 6, 6, " const") == 0)
            type.resize(type.size() - 6);  // `float* const`: top-level const
        else if (type.find_first_of("*&[") == std::string::npos && type.rfind("const ", 0) == 0)
            type.erase(0, 6);
        key += type + ", ";
    }
    return key;
}

std::optional<TokenMismatch> check_token(const Token& token, std::string_view written, size_t index,
                                         const ParamInfo& param) {
    if (param.type == TypeClass::TensorBad) return TokenMismatch{param.problem, param.fix};
    // Built only for a mismatch: most tokens fit.
    auto head = [&] {
        std::string h = "'";
        h.append(written).append("' does not match parameter ").append(std::to_string(index));
        h.append(", '").append(param.type_text);
        if (!param.name.empty()) h.append(" ").append(param.name);
        return h.append("'");
    };
    auto what = [&] { return param.name.empty() ? std::string("it") : "'" + param.name + "'"; };
    const bool tensor = param.type == TypeClass::TensorIn || param.type == TypeClass::TensorOut;
    switch (token.kind) {
        case TokenKind::Arg:
        case TokenKind::Ret: {
            const bool in = token.kind == TokenKind::Arg;
            if (param.type == (in ? TypeClass::TensorIn : TypeClass::TensorOut))
                return std::nullopt;
            if (param.type == TypeClass::TensorOut)
                return TokenMismatch{
                    head() + ": 'arg' is an input, and a BE::Tensor without const is an output",
                    "write 'ret' for an output; if the function only reads " + what() +
                        ", declare it 'const " + param.type_text +
                        "', so that it cannot write into the array JAX passes in"};
            if (param.type == TypeClass::TensorIn)
                return TokenMismatch{
                    head() + ": 'ret' is an output, and a const BE::Tensor is an input",
                    "write 'arg' for an input; if the function writes into " + what() +
                        ", it is an output: declare it 'BE::Tensor', without const"};
            if (!param.unknown_name.empty())
                return TokenMismatch{
                    head() + ": bekc cannot tell whether '" + param.unknown_name +
                        "' is BE::Tensor",
                    "bekc checks 'arg' and 'ret' against the parameter as written: spell it "
                    "'const BE::Tensor' (an input) or 'BE::Tensor' (an output), or declare "
                    "'using " +
                        (is_cxx_identifier(param.unknown_name) ? param.unknown_name
                                                               : std::string("T")) +
                        " = BE::Tensor;' in this file, before the function"};
            return TokenMismatch{head() + ": '" + std::string(written) + "' is for a '" +
                                     (in ? "const BE::Tensor" : "BE::Tensor") + "' parameter",
                                 write_instead(param)};
        }
        case TokenKind::Stream:
            if (tensor || (param.type == TypeClass::Scalar &&
                           attr_type_info(param.scalar).cxx_type != "int64_t"))
                return TokenMismatch{head() + ": the stream is an 'int64_t' parameter",
                                     write_instead(param)};
            if (param.type_text.find("cudaStream_t") != std::string::npos)
                return TokenMismatch{head() + ": the stream arrives as 'int64_t'",
                                     "declare the parameter 'int64_t stream' and cast it with "
                                     "(cudaStream_t)stream inside the function"};
            return std::nullopt;
        case TokenKind::Attr:
            if (tensor)
                return TokenMismatch{
                    head() + ": an attribute is a scalar, and a BE::Tensor a buffer",
                    write_instead(param)};
            if (param.type == TypeClass::Scalar &&
                attr_type_info(param.scalar).cxx_type != attr_type_info(token.attr_type).cxx_type)
                return TokenMismatch{head() + ": the parameter's type is " +
                                         std::string(attr_type_info(param.scalar).name) + ", not " +
                                         std::string(attr_type_info(token.attr_type).name),
                                     "write 'attr." + token.attr_name + ":" +
                                         std::string(attr_type_info(param.scalar).name) +
                                         "', or declare the parameter '" +
                                         std::string(attr_type_info(token.attr_type).cxx_type) +
                                         "'"};
            return std::nullopt;
    }
    return std::nullopt;
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
