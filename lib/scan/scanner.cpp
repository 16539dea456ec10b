#include "scan/scanner.hpp"

#include <algorithm>
#include <memory>
#include <unordered_map>

#include "scan/lexer.hpp"
#include "scan/macro.hpp"
#include "scan/scope.hpp"
#include "scan/signature.hpp"

namespace bekc {

namespace {

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
        const auto& calls = lexed_.calls;
        for (size_t c = 0; c < calls.size(); ++c) {
            const auto& call = calls[c];
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
                if (!add_with_macro_params(c, found))
                    add_signature(toks, i - 1, call.close, {}, found);
                next = call.close + 1;
            }
        }
        sites_ = std::move(found);
        for (size_t s = 0; s < sites_.size(); ++s) by_name_[sites_[s].name].push_back(s);
    }

    // `void f(PARAMS(float))` with PARAMS a macro of this file: the site with
    // its parameter list expanded. False when no macro is invoked in it, but
    // in default arguments, which are dropped anyway.
    bool add_with_macro_params(size_t c, std::vector<SignatureSite>& found) {
        const auto& toks = lexed_.tokens;
        const auto& calls = lexed_.calls;
        const size_t i = calls[c].index, close = calls[c].close;
        std::string_view macro;
        std::vector<LexToken> spliced(toks.begin() + static_cast<long>(i) - 1,
                                      toks.begin() + static_cast<long>(i) + 2);
        size_t at = i + 2, walked = i + 2;
        int depth = 0;
        bool in_default = false;
        for (size_t d = c + 1; d < calls.size() && calls[d].index < close; ++d) {
            const auto& inner = calls[d];
            if (inner.index < at || inner.close == Lexed::kUnclosed || inner.close >= close ||
                !expander_.is_macro(inner.name))
                continue;
            for (; walked < inner.index; ++walked) {
                const LexToken& t = toks[walked];
                if (is(t, "(") || is(t, "[") || is(t, "{")) ++depth;
                if (is(t, ")") || is(t, "]") || is(t, "}")) --depth;
                if (depth == 0 && is(t, ",")) in_default = false;
                if (depth == 0 && is(t, "=")) in_default = true;
            }
            if (in_default) continue;
            spliced.insert(spliced.end(), toks.begin() + static_cast<long>(at),
                           toks.begin() + static_cast<long>(inner.index));
            std::vector<LexToken> expansion = expander_.expand_at(toks, inner.index, inner.close);
            if (expander_.exhausted() && !bomb_) bomb_ = &toks[inner.index];
            spliced.insert(spliced.end(), expansion.begin(), expansion.end());
            if (macro.empty()) macro = inner.name;
            at = inner.close + 1;
        }
        if (macro.empty()) return false;
        const size_t end = std::min<size_t>(toks.size(), close + 17);  // `)` and what follows
        spliced.insert(spliced.end(), toks.begin() + static_cast<long>(at),
                       toks.begin() + static_cast<long>(end));
        add_signature(spliced, 0, spliced.size() - (end - close), macro, found);
        found.back().offset = toks[i - 1].offset;
        return true;
    }

    // Every token of the file, read once and only when a name has several
    // signatures or a parameter's type may be an alias: which scope each
    // part of the file is in, and the names it declares for BE::Tensor.
    struct FileView {
        ScopeMap scopes;
        TensorAliases aliases;
    };
    const FileView& view() {
        if (!view_) {
            Lexed all = lex(text_, /*all_tokens=*/true);
            view_ = std::make_unique<FileView>(
                FileView{ScopeMap(all.tokens), TensorAliases(all.tokens)});
        }
        return *view_;
    }

    // A parameter as the spec check reads it: through an alias of BE::Tensor
    // when its type may be one and `want_aliases`.
    ParamInfo info_of(const SignatureSite& site, const Param& p, bool want_aliases) {
        ParamInfo info = classify_param(p, view_ ? &view_->aliases : nullptr, site.offset);
        if (!view_ && want_aliases && info.type == TypeClass::Other && !info.unknown_name.empty())
            info = classify_param(p, &view().aliases, site.offset);
        return info;
    }

    std::string where_is(const SignatureSite& site) const {
        return std::string(file_) + ":" + std::to_string(lexed_.line_of(site.offset));
    }

    // The first definition at or after `after`, else the first definition,
    // else the first prototype at or after `after`, else the first prototype.
    static const SignatureSite* first_by_rank(const std::vector<const SignatureSite*>& sites,
                                              uint32_t after) {
        const SignatureSite* best[4] = {};
        for (const SignatureSite* s : sites) {
            int rank = (s->definition ? 0 : 2) + (s->offset >= after ? 0 : 1);
            if (!best[rank]) best[rank] = s;
        }
        for (const SignatureSite* b : best)
            if (b) return b;
        return nullptr;
    }

    // Parameters written with the same tokens (comments and spacing aside).
    static bool written_alike(const SignatureSite& a, const SignatureSite& b) {
        if (a.params.size() != b.params.size()) return false;
        for (size_t i = 0; i < a.params.size(); ++i) {
            const auto &x = a.params[i].tokens, &y = b.params[i].tokens;
            if (x.size() != y.size()) return false;
            for (size_t k = 0; k < x.size(); ++k)
                if (x[k].text() != y[k].text()) return false;
        }
        return true;
    }

    // The site an annotation (or, with `a` null, an explicit spec) exports.
    // A name with one signature in the file, or (for an annotation) several
    // written alike, names it. Otherwise only those in the annotation's
    // scope count (global scope for explicit specs): the one right after the
    // annotation, else their common parameter types, which several that
    // differ make ambiguous. A prototype gives way to the definition with
    // its parameter types, whose names inference needs. Returns null with
    // `failed` set after reporting an error.
    const SignatureSite* select_site(const std::string& name, const Annotation* a, bool& failed) {
        failed = false;
        auto it = by_name_.find(name);
        if (it == by_name_.end()) return nullptr;
        const uint32_t after = a ? a->offset : 0;
        std::vector<const SignatureSite*> all;
        for (size_t s : it->second) all.push_back(&sites_[s]);
        // Written alike, any of them gives the same spec: no need to read the
        // whole file for their scopes. One in another scope only is left to
        // the compiler, which reports at the annotation that the handler
        // cannot see it; an explicit spec, which has no annotation, is checked.
        if (a && std::all_of(all.begin(), all.end(),
                             [&](const SignatureSite* s) { return written_alike(*all[0], *s); }))
            return first_by_rank(all, after);
        const FileView& v = view();
        const uint32_t scope = v.scopes.at(after);
        std::vector<const SignatureSite*> here, elsewhere;
        for (const SignatureSite* s : all)
            (v.scopes.at(s->offset) == scope ? here : elsewhere).push_back(s);
        if (here.empty()) {
            if (!a) return nullptr;  // another input may define it there; the driver checks
            failed = true;
            Location where = at(a->offset);
            where.column = a->name_column;
            error(where,
                  "annotated function '" + name + "' not found in " + v.scopes.describe(scope) +
                      ": the '" + name + "' at " + where_is(*elsewhere[0]) + " is in " +
                      v.scopes.describe(v.scopes.at(elsewhere[0]->offset)) +
                      ", a different function",
                  "bekc exports the function declared in the annotation's scope and calls it "
                  "by its plain name from global scope: declare 'void " +
                      name + "(...)' there");
            return nullptr;
        }
        const SignatureSite* chosen = nullptr;
        if (a) {
            auto next =
                std::lower_bound(sites_.begin(), sites_.end(), a->offset,
                                 [](const SignatureSite& s, uint32_t o) { return s.offset < o; });
            for (auto s = next; s != sites_.end() && s->offset == next->offset; ++s)
                if (s->name == name && std::find(here.begin(), here.end(), &*s) != here.end())
                    chosen = &*s;
        }
        std::string key = parameter_types_key(chosen ? *chosen : *here[0], &v.aliases);
        std::vector<const SignatureSite*> same;
        for (const SignatureSite* s : here) {
            if (parameter_types_key(*s, &v.aliases) == key) {
                same.push_back(s);
            } else if (!chosen) {
                failed = true;
                Location where = a ? at(a->offset) : at(here[0]->offset);
                if (a) where.column = a->name_column;
                error(where,
                      "function '" + name + "' is ambiguous: " + where_is(*here[0]) + " and " +
                          where_is(*s) + " declare it with different parameters",
                      a ? "bekc exports one function per name: put the annotation directly "
                          "above the one to export, or rename the other"
                        : "bekc exports one function per name: rename one of them, or move "
                          "it into a namespace");
                return nullptr;
            }
        }
        if (chosen && chosen->definition) return chosen;
        return first_by_rank(same, after);
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
            ParamInfo info = info_of(site, p, /*want_aliases=*/true);
            if (info.kind == ParamKind::Invalid) {
                error(param_location(site, p, where),
                      "function '" + name + "'" + macro_note(site) + ": " + info.problem, info.fix);
                return false;
            }
            out.push_back({token_for(info), true, 0});
        }
        return true;
    }

    // A lone parameter spelled with one unknown name (`void f(PARAMS)`) may be
    // an object-like macro, which bekc does not expand.
    std::string object_macro_hint(const SignatureSite& site) {
        for (const auto& p : site.params) {
            if (p.tokens.size() != 1) continue;
            ParamInfo info = classify_param(p);
            if (!info.unknown_name.empty())
                return "; if '" + info.unknown_name +
                       "' is a macro, write the parameters out: bekc expands only "
                       "function-like macros #defined in this file";
        }
        return {};
    }

    // Gives bare `attr.x` tokens their type from the parameter named x, and
    // marks `const BE::Tensor&` inputs. Checks the count when it can, then
    // each token against the parameter it stands for, as written: top-level
    // const is not part of a function's type, so the compiler cannot tell an
    // input `const BE::Tensor x` from an output `BE::Tensor x`. Errors are
    // reported at the token in an annotation, else at the parameter.
    bool resolve_with_signature(const std::string& name, const SignatureSite* site, Location where,
                                std::vector<ParsedToken>& tokens,
                                const std::vector<RawToken>& written, std::string_view origin) {
        std::vector<ParamInfo> infos;
        if (site)
            for (const auto& p : site->params) infos.push_back(info_of(*site, p, false));
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
        if (!site) return true;
        if (site->params.size() != tokens.size()) {
            error(
                where,
                "function '" + name + "': the arg_spec has " + std::to_string(tokens.size()) +
                    " tokens but the signature" + macro_note(*site) + " has " +
                    std::to_string(site->params.size()) + " parameters",
                "the spec lists one token per C++ parameter, in order" + object_macro_hint(*site));
            return false;
        }
        for (size_t i = 0; i < tokens.size(); ++i) {
            Token& t = tokens[i].token;
            ParamInfo& info = infos[i];
            if ((t.kind == TokenKind::Arg || t.kind == TokenKind::Ret) &&
                info.type == TypeClass::Other && !info.unknown_name.empty())
                info = info_of(*site, site->params[i], /*want_aliases=*/true);
            if (t.kind == TokenKind::Arg && info.kind == ParamKind::TensorIn)
                t.by_reference = info.by_reference;
            auto mismatch = check_token(t, written[i].text, i + 1, info);
            if (!mismatch) continue;
            Location loc = where;
            if (tokens[i].column > 0)
                loc.column = tokens[i].column;
            else
                loc = param_location(*site, site->params[i], where);
            error(loc,
                  "function '" + name + "'" +
                      (origin.empty() ? "" : " (spec from " + std::string(origin) + ")") +
                      macro_note(*site) + ": " + mismatch->message,
                  mismatch->fix);
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
        bool failed = false;
        const SignatureSite* site = select_site(a.name, &a, failed);
        if (failed) return;
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
        } else if (!resolve_with_signature(a.name, site, where, tokens, a.tokens, {})) {
            return;
        }
        emit(a.name, where, tokens);
    }

    void resolve_explicit(const ExplicitSpec& spec) {
        bool failed = false;
        const SignatureSite* site = select_site(spec.name, nullptr, failed);
        if (failed) result_.explicit_found.push_back(spec.name);
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
        } else if (!resolve_with_signature(spec.name, site, where, tokens, spec.tokens,
                                           spec.origin)) {
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
    std::unique_ptr<FileView> view_;  // see view()
    ScanResult result_;
};

}  // namespace

ScanResult scan_source(std::string_view text, std::string_view file, const ScanOptions& options) {
    return Scanner(text, file, options).run();
}

bool is_cuda_source(std::string_view path) {
    return path.ends_with(".cu");
}

bool is_cpu_source(std::string_view path) {
    return path.ends_with(".cpp") || path.ends_with(".cc") || path.ends_with(".cxx");
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
