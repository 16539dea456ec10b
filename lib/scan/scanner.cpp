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
        if (bomb_)
            error(at(bomb_->offset),
                  "expanding macro '" + std::string(bomb_->text()) + "' produces more than " +
                      std::to_string(expander_.token_limit()) + " tokens",
                  "bekc stops expanding macros in this file there, so functions they make "
                  "may not be found; check the macro for runaway recursion or repetition");
        if (!options_.explicit_specs.empty()) {
            for (const auto& spec : options_.explicit_specs) resolve_explicit(spec);
        } else {
            std::vector<Annotation> annotations = find_annotations();
            if (annotations.empty() && result_.diagnostics.empty()) {
                Diagnostic d;
                d.where.file = std::string(file_);
                d.message = "no exported functions: the file has no '// @BE' annotation";
                d.fix =
                    "mark each entry point with a '// @BE <function>' comment above it, or "
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
        result_.diagnostics.push_back(
            make_error(text_, std::move(where), std::move(message), std::move(fix)));
    }

    // One pass over the identifiers followed by `(`: `void f(` written out,
    // and every invocation of a function-like macro of this file, expanded
    // once and searched. The lexer found the calls and their `)`.
    void index_signatures() {
        const auto& toks = lexed_.tokens;
        std::vector<SignatureSite> found;
        size_t next = 0;  // calls before this index lie inside one already handled
        for (const auto& call : lexed_.calls) {
            const size_t i = call.index;
            if (i < next || call.close == Lexed::kUnclosed) continue;
            if (expander_.is_macro(call.name)) {
                std::vector<LexToken> expansion = expander_.expand_at(toks, i, call.close);
                if (expander_.exhausted() && !bomb_) bomb_ = &toks[i];
                size_t first = found.size();
                find_signatures(expansion, call.name, found);
                for (size_t s = first; s < found.size(); ++s) found[s].offset = toks[i].offset;
                next = call.close + 1;
            } else if (call.after_void) {
                add_signature(toks, i - 1, call.close, {}, found);
                next = call.close + 1;
            }
        }
        sites_ = std::move(found);
        for (size_t s = 0; s < sites_.size(); ++s) by_name_[sites_[s].name].push_back(s);
    }

    // The site a name refers to: the first definition at or after `after`,
    // else the first definition, else the first prototype at or after `after`,
    // else the first prototype. A prototype may leave its parameters unnamed;
    // the definition's names are the ones inference needs.
    const SignatureSite* site_for(std::string_view name, uint32_t after) const {
        auto it = by_name_.find(name);
        if (it == by_name_.end()) return nullptr;
        const SignatureSite* best[4] = {};
        for (size_t s : it->second) {
            const SignatureSite& site = sites_[s];
            int rank = (site.definition ? 0 : 2) + (site.offset >= after ? 0 : 1);
            if (!best[rank]) best[rank] = &site;
        }
        for (const SignatureSite* b : best)
            if (b) return b;
        return nullptr;
    }

    std::vector<Annotation> find_annotations() {
        std::vector<Annotation> out;
        std::unordered_map<std::string, int> first_line;  // function -> line of its annotation
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
            if (std::string why = identifier_problem(toks[0].text); !why.empty()) {
                where.column = toks[0].column;
                error(where, "function name '" + toks[0].text + "' " + why,
                      "names are emitted into generated code: use ASCII letters, digits and '_', "
                      "not starting with a digit, and not a C++ keyword");
                continue;
            }
            Annotation a{
                toks[0].text, {toks.begin() + 1, toks.end()}, c.offset, where.line, toks[0].column};
            auto [first, fresh] = first_line.emplace(a.name, a.line);
            if (!fresh) {
                where.column = a.name_column;
                error(where, "function '" + a.name + "' is annotated twice",
                      "the first annotation is at " + std::string(file_) + ":" +
                          std::to_string(first->second) + "; remove one of them");
                continue;
            }
            out.push_back(std::move(a));
        }
        return out;
    }

    // Parses written tokens; reports the first bad one at its column.
    bool parse_tokens(const std::string& name, const std::vector<RawToken>& raw, Location where,
                      std::vector<ParsedToken>& out) {
        for (const auto& r : raw) {
            TokenError e;
            auto p = parse_token(r, e);
            if (!p) {
                if (e.column > 0) where.column = e.column;
                error(where, "function '" + name + "': " + e.message, e.fix);
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
        return site.macro.empty()
                   ? std::string()
                   : " (in the expansion of macro '" + std::string(site.macro) + "')";
    }

    // Infers the whole spec from the signature.
    bool infer(const std::string& name, const SignatureSite& site, Location where,
               std::vector<ParsedToken>& out) {
        for (const auto& p : site.params) {
            ParamInfo info = classify_param(p);
            if (info.kind == ParamKind::Invalid) {
                error(param_location(site, p, where),
                      "function '" + name + "'" + macro_note(site) + ": " + info.problem, info.fix);
                return false;
            }
            out.push_back({token_for(info), true, 0});
        }
        return true;
    }

    // Gives bare `attr.x` tokens their type from the parameter named x, and
    // marks `const BE::Tensor&` inputs. Checks the count when it can.
    bool resolve_with_signature(const std::string& name, const SignatureSite* site, Location where,
                                std::vector<ParsedToken>& tokens) {
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
                std::string why = !site ? "its signature was not found"
                                  : match == infos.end()
                                      ? "no parameter is named '" + t.attr_name + "'"
                                      : "parameter '" + match->type_text + " " + t.attr_name +
                                            "' is not a scalar bekc can infer";
                error(loc,
                      "function '" + name + "': cannot infer the type of 'attr." + t.attr_name +
                          "': " + why,
                      "give the type explicitly: 'attr." + t.attr_name +
                          ":<type>' with <type> "
                          "one of " +
                          attr_type_list());
                return false;
            }
            t.attr_type = match->scalar;
        }
        if (site && site->params.size() != tokens.size()) {
            error(where,
                  "function '" + name + "': the arg_spec has " + std::to_string(tokens.size()) +
                      " tokens but the signature" + macro_note(*site) + " has " +
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

    // The macro the first code after the annotation invokes when this file
    // does not define it (one from a header, whose expansion cannot be seen
    // here); empty otherwise.
    std::string_view foreign_macro_after(uint32_t offset) const {
        const auto& toks = lexed_.tokens;
        auto it = std::lower_bound(toks.begin(), toks.end(), offset,
                                   [](const LexToken& t, uint32_t o) { return t.offset < o; });
        if (it == toks.end() || it + 1 == toks.end() || it->kind != LexKind::Ident ||
            !is(*(it + 1), "(") || expander_.is_macro(it->text()))
            return {};
        return it->text();
    }

    void resolve_annotation(const Annotation& a) {
        Location where = at(a.offset);
        const SignatureSite* site = site_for(a.name, a.offset);
        std::vector<ParsedToken> tokens;
        if (!parse_tokens(a.name, a.tokens, where, tokens)) return;
        bool complete =
            !tokens.empty() && std::all_of(tokens.begin(), tokens.end(),
                                           [](const ParsedToken& t) { return t.type_given; });
        std::string_view foreign = site ? std::string_view() : foreign_macro_after(a.offset);
        if (!site && !(complete && !foreign.empty())) {
            where.column = a.name_column;
            if (!foreign.empty())
                error(where,
                      "annotated function '" + a.name + "' not found: it comes from macro '" +
                          std::string(foreign) + "', which is not #defined in this file",
                      "bekc cannot see a signature made by a macro from a header: give the full "
                      "spec inline, every attribute with its type, e.g. '// @BE " +
                          a.name + " arg ret attr.<name>:<type>'");
            else
                error(where, "annotated function '" + a.name + "' not found",
                      "bekc looks for 'void " + a.name +
                          "(...)' in this file, written out or "
                          "made by a macro #defined in this file; check the spelling");
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
                d.message = "function '" + spec.name + "': " + e.message;
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
    const LexToken* bomb_ = nullptr;  // the invocation that ran out of expansion budget
    std::unordered_map<std::string_view, std::vector<size_t>> by_name_;
    ScanResult result_;
};

}  // namespace

ScanResult scan_source(std::string_view text, std::string_view file, const ScanOptions& options) {
    return Scanner(text, file, options).run();
}

bool is_cuda_source(std::string_view path) {
    return ends_with(path, ".cu");
}

bool is_cpu_source(std::string_view path) {
    return ends_with(path, ".cpp") || ends_with(path, ".cc") || ends_with(path, ".cxx");
}

std::optional<ExplicitSpec> parse_function_option(std::string_view value, std::string& error) {
    size_t eq = value.find('=');
    std::string_view name = value.substr(0, eq);
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name.empty()) {
        error = "--function '" + std::string(value) +
                "': no function name before '=' (expected 'name=arg,arg,ret')";
        return std::nullopt;
    }
    if (std::string why = identifier_problem(name); !why.empty()) {
        error = "--function '" + std::string(value) + "': '" + std::string(name) + "' " + why +
                " (expected 'name=arg,arg,ret')";
        return std::nullopt;
    }
    ExplicitSpec spec{std::string(name), {}, "--function"};
    if (eq != std::string_view::npos) spec.tokens = split_tokens(value.substr(eq + 1), 0);
    return spec;
}

}  // namespace bekc
