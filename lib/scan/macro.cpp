#include "scan/macro.hpp"

#include <algorithm>

namespace bekc {

namespace {

constexpr int kMaxDepth = 32;
// Tokens a file may produce by expansion: a fixed floor plus a multiple of its
// own size, so that big real files never hit it and a macro bomb stops early.
// Real files expand to a fraction of their own size (the 100,000-line
// benchmark to a twentieth of its bytes); a bomb of a few lines stops within
// milliseconds.
constexpr size_t kMinTokensPerFile = 256 * 1024;
constexpr size_t kTokensPerSourceByte = 1;

// +1 for an opening bracket, -1 for a closing one, 0 for anything else.
int bracket(const LexToken& t) {
    if (t.kind != LexKind::Punct || t.text().size() != 1) return 0;
    switch (t.text()[0]) {
        case '(':
        case '[':
        case '{':
            return 1;
        case ')':
        case ']':
        case '}':
            return -1;
        default:
            return 0;
    }
}
bool is_open(const LexToken& t) {
    return bracket(t) > 0;
}
bool is_punct(const LexToken& t, char c) {
    return t.kind == LexKind::Punct && t.text().size() == 1 && t.text()[0] == c;
}

}  // namespace

std::vector<uint32_t> match_brackets(const std::vector<LexToken>& tokens) {
    std::vector<uint32_t> match(tokens.size(), static_cast<uint32_t>(tokens.size()));
    std::vector<uint32_t> open;
    for (size_t i = 0; i < tokens.size(); ++i) {
        int b = bracket(tokens[i]);
        if (b > 0) {
            open.push_back(static_cast<uint32_t>(i));
        } else if (b < 0 && !open.empty()) {
            match[open.back()] = static_cast<uint32_t>(i);
            open.pop_back();
        }
    }
    return match;
}

size_t matching_close(const std::vector<LexToken>& tokens, size_t open) {
    int depth = 0;
    for (size_t i = open; i < tokens.size(); ++i) {
        int b = bracket(tokens[i]);
        depth += b;
        if (b < 0 && depth == 0) return i;
    }
    return tokens.size();
}

MacroExpander::MacroExpander(Lexed& lexed) : lexed_(lexed) {
    limit_ = kMinTokensPerFile + kTokensPerSourceByte * lexed_.source_size;
    budget_ = limit_;
    // A later #define of the same name wins, as it would for code after it.
    for (const auto& def : lexed_.macros) {
        Macro m{&def, {}};
        std::unordered_map<std::string_view, int> index;
        for (size_t p = 0; p < def.params.size(); ++p)
            index.emplace(def.params[p], static_cast<int>(p));
        m.param_of.reserve(def.body.size());
        for (const auto& t : def.body) {
            auto it = t.kind == LexKind::Ident ? index.find(t.text()) : index.end();
            m.param_of.push_back(it == index.end() ? -1 : it->second);
        }
        macros_[def.name] = std::move(m);
        first_char_[static_cast<unsigned char>(def.name[0])] = true;
        min_len_ = std::min(min_len_, def.name.size());
        max_len_ = std::max(max_len_, def.name.size());
    }
}

std::string_view MacroExpander::store(std::string text) {
    lexed_.arena.push_back(std::move(text));
    return lexed_.arena.back();
}

bool MacroExpander::charge(size_t tokens) {
    if (tokens > budget_) {
        budget_ = 0;
        exhausted_ = true;
        return false;
    }
    budget_ -= tokens;
    return true;
}

// The arguments of the invocation whose `(` is at `open`, split at top-level
// commas; false when the `(` is never closed.
bool MacroExpander::collect_args(const std::vector<LexToken>& in,
                                 const std::vector<uint32_t>& match, size_t open,
                                 std::vector<ArgRange>& args) const {
    size_t close = match[open];
    if (close >= in.size()) return false;
    args.clear();
    size_t start = open + 1;
    for (size_t i = open + 1; i < close; ++i) {
        if (is_open(in[i]) && match[i] < close) {
            i = match[i];
        } else if (is_punct(in[i], ',')) {
            args.push_back({start, i});
            start = i + 1;
        }
    }
    args.push_back({start, close});
    return true;
}

namespace {

// Appends in[begin, end) to `out`: one bulk copy, much cheaper than a
// push_back per token.
void append_range(std::vector<LexToken>& out, const std::vector<LexToken>& in, size_t begin,
                  size_t end) {
    out.insert(out.end(), in.begin() + static_cast<long>(begin),
               in.begin() + static_cast<long>(end));
}

}  // namespace

// The tokens argument `p` contributes; __VA_ARGS__ takes the rest, commas included.
void MacroExpander::append_arg(const Macro& m, const std::vector<LexToken>& in,
                               const std::vector<ArgRange>& args, size_t p,
                               std::vector<LexToken>& out) {
    bool variadic = m.def->params[p] == "__VA_ARGS__";
    for (size_t a = p; a < args.size(); ++a) {
        if (!charge(args[a].end - args[a].begin + 1)) return;
        if (a > p) out.emplace_back(LexKind::Punct, ",", in[args[a].begin - 1].offset);
        append_range(out, in, args[a].begin, args[a].end);
        if (!variadic) break;
    }
}

// True when `toks` holds an invocation of a macro of this file.
bool MacroExpander::invokes_macro(const std::vector<LexToken>& toks) const {
    for (size_t i = 0; i + 1 < toks.size(); ++i)
        if (toks[i].kind == LexKind::Ident && is_punct(toks[i + 1], '(') &&
            is_macro(toks[i].text()))
            return true;
    return false;
}

// Replaces the parameters in the body of `m`. As in the C preprocessor, an
// argument next to `#` or `##` is used as written, and anywhere else fully
// macro-expanded first (in the caller's context, so `I(I(1))` expands both).
void MacroExpander::substitute(const Macro& m, const std::vector<LexToken>& in,
                               const std::vector<ArgRange>& args, std::vector<LexToken>& out,
                               int depth) {
    const auto& body = m.def->body;
    std::vector<std::vector<LexToken>> expanded(m.def->params.size());
    std::vector<bool> done(m.def->params.size());
    bool paste_next = false;
    for (size_t i = 0; i < body.size() && !exhausted_; ++i) {
        const LexToken& t = body[i];
        if (t.kind == LexKind::Punct && is(t, "##")) {
            paste_next = !out.empty();
            continue;
        }
        size_t piece = out.size();
        if (is_punct(t, '#') && i + 1 < body.size() && m.param_of[i + 1] >= 0) {
            std::vector<LexToken> arg;
            append_arg(m, in, args, static_cast<size_t>(m.param_of[++i]), arg);
            std::string s = "\"";
            for (const auto& a : arg) s += a.text();
            out.emplace_back(LexKind::String, store(s + "\""), t.offset);
        } else if (int p = m.param_of[i]; p >= 0) {
            bool pasted = paste_next || (i + 1 < body.size() && is(body[i + 1], "##"));
            if (pasted) {
                append_arg(m, in, args, static_cast<size_t>(p), out);
            } else {
                if (!done[p]) {
                    std::vector<LexToken> raw;
                    append_arg(m, in, args, static_cast<size_t>(p), raw);
                    if (invokes_macro(raw))
                        expand(raw, expanded[p], depth + 1);
                    else
                        expanded[p] = std::move(raw);
                    done[p] = true;
                }
                if (!charge(expanded[p].size())) return;
                out.insert(out.end(), expanded[p].begin(), expanded[p].end());
            }
        } else {
            // A run of plain body tokens (no parameter, `#` or `##`) is copied at once.
            size_t j = i + 1;
            while (j < body.size() && m.param_of[j] < 0 && !is_punct(body[j], '#') &&
                   !is(body[j], "##"))
                ++j;
            if (!charge(j - i)) return;
            append_range(out, body, i, j);
            i = j - 1;
        }
        if (paste_next && out.size() > piece) {
            // Pasting joins the token before this piece with the piece's first.
            LexToken& last = out[piece - 1];
            const LexToken& first = out[piece];
            last.set_text(store(std::string(last.text()) + std::string(first.text())));
            if (last.kind == LexKind::Punct) last.kind = first.kind;
            out.erase(out.begin() + static_cast<long>(piece));
        }
        paste_next = false;
    }
}

void MacroExpander::expand(const std::vector<LexToken>& in, std::vector<LexToken>& out, int depth) {
    std::vector<uint32_t> match;  // computed at the first nested invocation
    std::vector<ArgRange> args;
    size_t copied = 0;  // in[copied, i) is still to be appended as is
    for (size_t i = 0; i < in.size(); ++i) {
        const LexToken& t = in[i];
        if (t.kind != LexKind::Ident || !is_macro(t.text()) || i + 1 >= in.size() ||
            !is_punct(in[i + 1], '(') || depth >= kMaxDepth ||
            std::find(active_.begin(), active_.end(), t.text()) != active_.end())
            continue;
        if (match.empty()) match = match_brackets(in);
        if (!collect_args(in, match, i + 1, args)) continue;
        if (!charge(i - copied)) return;
        append_range(out, in, copied, i);
        const Macro& m = macros_.find(t.text())->second;
        std::vector<LexToken> substituted;
        substituted.reserve(m.def->body.size() + (match[i + 1] - i));
        substitute(m, in, args, substituted, depth);
        active_.push_back(t.text());
        expand(substituted, out, depth + 1);
        active_.pop_back();
        if (exhausted_) return;
        i = match[i + 1];
        copied = i + 1;
    }
    if (!charge(in.size() - copied)) return;
    append_range(out, in, copied, in.size());
}

std::vector<LexToken> MacroExpander::expand_at(const std::vector<LexToken>& tokens, size_t i,
                                               size_t close) {
    size_t next = std::min(close + 1, tokens.size());
    std::vector<LexToken> call(tokens.begin() + static_cast<long>(i),
                               tokens.begin() + static_cast<long>(next));
    std::vector<LexToken> out;
    expand(call, out, 0);
    return out;
}

}  // namespace bekc
