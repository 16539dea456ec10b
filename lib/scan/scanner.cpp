#include "scan/scanner.hpp"

#include <algorithm>
#include <unordered_map>

#include "scan/lexer.hpp"
#include "scan/macro.hpp"
#include "scan/signature.hpp"

namespace bekc {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

struct Annotation {
    std::string name;
    std::vector<RawToken> tokens;
    uint32_t offset;  // of the comment
    int line;
    int name_column;
};

class Scanner {
public:
    Scanner(std::string_view text, std::string_view file, const ScanOptions& options)
        : text_(text), file_(file), options_(options), lexed_(lex(text)), expander_(lexed_) {}

    ScanResult run() {
        index_signatures();
        if (!options_.explicit_specs.empty()) {
            for (const auto& spec : options_.explicit_specs) resolve_explicit(spec);
        } else {
            std::vector<Annotation> annotations = find_annotations();
            if (annotations.empty() && result_.diagnostics.empty()) {
                Diagnostic d;
                d.where.file = std::string(file_);
                d.message = "no exported functions: the file has no '// @BE' annotation";
                d.fix = "mark each entry point with a '// @BE <function>' comment above it, or "
                        "name the exports with --function '<function>=arg,ret' or --functions "
                        "FILE.json";
                result_.diagnostics.push_back(d);
            }
            for (const auto& a : annotations) resolve_annotation(a);
        }
        return std::move(result_);
    }

private:
    Location at(uint32_t offset) const {
        return {std::string(file_), lexed_.line_of(offset), lexed_.column_of(offset)};
    }

    void error(Location where, std::string message, std::string fix = {}) {
        result_.diagnostics.push_back(make_error(text_, std::move(where), std::move(message),
                                                 std::move(fix)));
    }

    // One pass over the code: `void f(` written out, and every invocation of a
    // function-like macro of this file expanded once and searched.
    void index_signatures() {
        const auto& toks = lexed_.tokens;
        std::vector<SignatureSite> found;
        size_t i = 0;
        while (i < toks.size()) {
            if (toks[i].kind == LexKind::Ident && i + 1 < toks.size() && toks[i + 1].text == "(" &&
                expander_.is_macro(toks[i].text)) {
                size_t next = i;
                std::vector<LexToken> expansion = expander_.expand_at(toks, i, next);
                find_signatures(expansion, toks[i].text, found);
                i = next;
                continue;
            }
            if (toks[i].text == "void" && i + 2 < toks.size() &&
                toks[i + 1].kind == LexKind::Ident && toks[i + 2].text == "(" &&
                !expander_.is_macro(toks[i + 1].text)) {
                size_t close = matching_close(toks, i + 2);
                std::vector<LexToken> head(toks.begin() + static_cast<long>(i),
                                           toks.begin() + static_cast<long>(
                                                              std::min(close + 1, toks.size())));
                find_signatures(head, {}, found);
                i = std::min(close + 1, toks.size());
                continue;
            }
            ++i;
        }
        sites_ = std::move(found);
        for (size_t s = 0; s < sites_.size(); ++s) by_name_[sites_[s].name].push_back(s);
    }

    // The site a name refers to: the first at or after `after`, else the first.
    const SignatureSite* site_for(std::string_view name, uint32_t after) const {
        auto it = by_name_.find(name);
        if (it == by_name_.end()) return nullptr;
        for (size_t s : it->second)
            if (sites_[s].offset >= after) return &sites_[s];
        return &sites_[it->second.front()];
    }

    std::vector<Annotation> find_annotations() {
        std::vector<Annotation> out;
        for (const auto& c : lexed_.comments) {
            std::string_view t = c.text;
            size_t k = 0;
            while (k < t.size() && (t[k] == ' ' || t[k] == '\t')) ++k;
            if (t.substr(k, 3) != "@BE") continue;
            if (k + 3 < t.size() && t[k + 3] != ' ' && t[k + 3] != '\t') continue;
            int base = lexed_.column_of(c.offset) + 2 + static_cast<int>(k + 3);
            std::vector<RawToken> toks = split_tokens(t.substr(k + 3), base);
            Location where = at(c.offset);
            if (toks.empty()) {
                error(where, "'@BE' annotation names no function",
                      "write '// @BE <function> [tokens...]'");
                continue;
            }
            if (!is_cxx_identifier(toks[0].text)) {
                where.column = toks[0].column;
                error(where, "function name '" + toks[0].text + "' is not an ASCII C++ identifier",
                      "names are emitted into generated code: use ASCII letters, digits and '_', "
                      "not starting with a digit, and not a C++ keyword");
                continue;
            }
            Annotation a{toks[0].text, {toks.begin() + 1, toks.end()}, c.offset, where.line,
                         toks[0].column};
            auto dup = std::find_if(out.begin(), out.end(),
                                    [&](const Annotation& o) { return o.name == a.name; });
            if (dup != out.end()) {
                where.column = a.name_column;
                error(where, "function '" + a.name + "' is annotated twice",
                      "the first annotation is at " + std::string(file_) + ":" +
                          std::to_string(dup->line) + "; remove one of them");
                continue;
            }
            out.push_back(std::move(a));
        }
        return out;
    }

    // Parses written tokens; reports the first bad one at its column.
    bool parse_tokens(const std::vector<RawToken>& raw, Location where,
                      std::vector<ParsedToken>& out) {
        for (const auto& r : raw) {
            TokenError e;
            auto p = parse_token(r, e);
            if (!p) {
                if (e.column > 0) where.column = e.column;
                error(where, e.message, e.fix);
                return false;
            }
            out.push_back(*p);
        }
        return true;
    }

    // Where a parameter problem is reported: the parameter itself when it is
    // written out, the annotation when it came from a macro.
    Location param_location(const SignatureSite& site, const Param& p, Location fallback) const {
        if (!site.macro.empty() || p.tokens.empty()) return fallback;
        return at(p.tokens.front().offset);
    }

    std::string macro_note(const SignatureSite& site) const {
        return site.macro.empty() ? std::string()
                                  : " (in the expansion of macro '" + std::string(site.macro) +
                                        "')";
    }

    // Infers the whole spec from the signature.
    bool infer(const std::string& name, const SignatureSite& site, Location where,
               std::vector<ParsedToken>& out) {
        for (const auto& p : site.params) {
            ParamInfo info = classify_param(p);
            if (info.kind == ParamKind::Invalid) {
                error(param_location(site, p, where),
                      "in function '" + name + "'" + macro_note(site) + ": " + info.problem,
                      info.fix);
                return false;
            }
            out.push_back({token_for(info), true, 0});
        }
        return true;
    }

    // Gives bare `attr.x` tokens their type from the parameter named x, and
    // marks `const BE::Tensor&` inputs. Checks the count when it can.
    bool resolve_with_signature(const std::string& name, const SignatureSite* site,
                                Location where, std::vector<ParsedToken>& tokens) {
        std::vector<ParamInfo> infos;
        if (site)
            for (const auto& p : site->params) infos.push_back(classify_param(p));
        for (size_t i = 0; i < tokens.size(); ++i) {
            Token& t = tokens[i].token;
            if (t.kind == TokenKind::Arg && i < infos.size() &&
                infos[i].kind == ParamKind::TensorIn)
                t.by_reference = infos[i].by_reference;
            if (t.kind != TokenKind::Attr || tokens[i].type_given) continue;
            Location loc = where;
            if (tokens[i].column > 0) loc.column = tokens[i].column;
            auto match = std::find_if(infos.begin(), infos.end(),
                                      [&](const ParamInfo& p) { return p.name == t.attr_name; });
            if (match == infos.end() || match->kind != ParamKind::Scalar) {
                std::string why = !site ? "the signature of '" + name + "' was not found"
                                  : match == infos.end()
                                      ? "'" + name + "' has no parameter named '" + t.attr_name + "'"
                                      : "parameter '" + match->type_text + " " + t.attr_name +
                                            "' is not a scalar bekc can infer";
                error(loc, "cannot infer the type of 'attr." + t.attr_name + "': " + why,
                      "give the type explicitly: 'attr." + t.attr_name + ":<type>' with <type> "
                      "one of " + attr_type_list());
                return false;
            }
            t.attr_type = match->scalar;
        }
        if (site && site->params.size() != tokens.size()) {
            error(where,
                  "arg_spec of '" + name + "' has " + std::to_string(tokens.size()) +
                      " tokens but its signature" + macro_note(*site) + " has " +
                      std::to_string(site->params.size()) + " parameters",
                  "the spec lists one token per C++ parameter, in order");
            return false;
        }
        return true;
    }

    void emit(const std::string& name, Location where, std::vector<ParsedToken>& tokens) {
        if (auto e = check_spec_rules(tokens, options_.cuda)) {
            if (e->column > 0) where.column = e->column;
            error(where, "function '" + name + "': " + e->message, e->fix);
            return;
        }
        FunctionSpec spec;
        spec.name = name;
        spec.annotation = where;
        spec.annotation.column = 0;
        for (auto& p : tokens) spec.tokens.push_back(p.token);
        result_.functions.push_back(std::move(spec));
    }

    // True when the first code after the annotation calls a macro this file
    // does not define (one from a header); its expansion cannot be seen here.
    bool followed_by_foreign_macro(uint32_t offset) const {
        const auto& toks = lexed_.tokens;
        auto it = std::lower_bound(toks.begin(), toks.end(), offset,
                                   [](const LexToken& t, uint32_t o) { return t.offset < o; });
        return it != toks.end() && it + 1 != toks.end() && it->kind == LexKind::Ident &&
               (it + 1)->text == "(" && !expander_.is_macro(it->text);
    }

    void resolve_annotation(const Annotation& a) {
        Location where = at(a.offset);
        const SignatureSite* site = site_for(a.name, a.offset);
        std::vector<ParsedToken> tokens;
        if (!parse_tokens(a.tokens, where, tokens)) return;
        bool complete = !tokens.empty() &&
                        std::all_of(tokens.begin(), tokens.end(),
                                    [](const ParsedToken& t) { return t.type_given; });
        if (!site && !(complete && followed_by_foreign_macro(a.offset))) {
            where.column = a.name_column;
            error(where, "annotated function '" + a.name + "' not found",
                  "bekc looks for 'void " + a.name + "(...)' in this file, written out or made "
                  "by a macro #defined in this file; check the spelling, or give the full spec "
                  "inline above a macro from a header");
            return;
        }
        if (tokens.empty()) {
            if (!infer(a.name, *site, where, tokens)) return;
        } else if (!resolve_with_signature(a.name, site, where, tokens)) {
            return;
        }
        emit(a.name, where, tokens);
    }

    void resolve_explicit(const ExplicitSpec& spec) {
        const SignatureSite* site = site_for(spec.name, 0);
        if (!site) return;  // another input may define it; the driver checks
        result_.explicit_found.push_back(spec.name);
        Location where = at(site->offset);
        std::vector<ParsedToken> tokens;
        for (const auto& r : spec.tokens) {
            TokenError e;
            auto p = parse_token(r, e);
            if (!p) {
                Diagnostic d;
                d.where.file = spec.origin;
                d.message = "in the spec of '" + spec.name + "': " + e.message;
                d.fix = e.fix;
                result_.diagnostics.push_back(d);
                return;
            }
            tokens.push_back(*p);
        }
        if (tokens.empty()) {
            if (!infer(spec.name, *site, where, tokens)) return;
        } else if (!resolve_with_signature(spec.name, site, where, tokens)) {
            return;
        }
        emit(spec.name, where, tokens);
    }

    std::string_view text_;
    std::string_view file_;
    const ScanOptions& options_;
    Lexed lexed_;
    MacroExpander expander_;
    std::vector<SignatureSite> sites_;
    std::unordered_map<std::string_view, std::vector<size_t>> by_name_;
    ScanResult result_;
};

}  // namespace

ScanResult scan_source(std::string_view text, std::string_view file, const ScanOptions& options) {
    return Scanner(text, file, options).run();
}

bool is_cuda_source(std::string_view path) { return ends_with(path, ".cu"); }

bool is_cpu_source(std::string_view path) {
    return ends_with(path, ".cpp") || ends_with(path, ".cc") || ends_with(path, ".cxx");
}

std::optional<ExplicitSpec> parse_function_option(std::string_view value, std::string& error) {
    size_t eq = value.find('=');
    std::string_view name = value.substr(0, eq);
    if (!is_cxx_identifier(name)) {
        error = "--function '" + std::string(value) + "': '" + std::string(name) +
                "' is not an ASCII C++ identifier (expected 'name=arg,arg,ret')";
        return std::nullopt;
    }
    ExplicitSpec spec{std::string(name), {}, "--function"};
    if (eq != std::string_view::npos) spec.tokens = split_tokens(value.substr(eq + 1), 0);
    return spec;
}

}  // namespace bekc
