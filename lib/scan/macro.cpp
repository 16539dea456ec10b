#include "scan/macro.hpp"

#include <algorithm>

namespace bekc {

namespace {

constexpr int kMaxDepth = 32;
constexpr size_t kMaxTokensPerFile = 4'000'000;

}  // namespace

size_t matching_close(const std::vector<LexToken>& tokens, size_t open) {
    int depth = 0;
    for (size_t i = open; i < tokens.size(); ++i) {
        std::string_view t = tokens[i].text;
        if (tokens[i].kind != LexKind::Punct) continue;
        if (t == "(" || t == "[" || t == "{") ++depth;
        if (t == ")" || t == "]" || t == "}") {
            if (--depth == 0) return i;
        }
    }
    return tokens.size();
}

MacroExpander::MacroExpander(Lexed& lexed) : lexed_(lexed), budget_(kMaxTokensPerFile) {
    // A later #define of the same name wins, as it would for code after it.
    for (const auto& m : lexed_.macros) macros_[m.name] = &m;
}

std::string_view MacroExpander::store(std::string text) {
    lexed_.arena.push_back(std::move(text));
    return lexed_.arena.back();
}

bool MacroExpander::collect_args(const std::vector<LexToken>& in, size_t open, size_t& close,
                                 std::vector<std::vector<LexToken>>& args) const {
    int depth = 0;
    args.assign(1, {});
    for (size_t i = open; i < in.size(); ++i) {
        std::string_view t = in[i].text;
        bool punct = in[i].kind == LexKind::Punct;
        if (punct && (t == "(" || t == "[" || t == "{")) {
            if (depth++ == 0) continue;
        } else if (punct && (t == ")" || t == "]" || t == "}")) {
            if (--depth == 0) {
                close = i;
                return true;
            }
        } else if (punct && t == "," && depth == 1) {
            args.emplace_back();
            continue;
        }
        args.back().push_back(in[i]);
    }
    return false;
}

void MacroExpander::substitute(const MacroDef& m, const std::vector<std::vector<LexToken>>& args,
                               std::vector<LexToken>& out, uint32_t offset) {
    auto param_index = [&](std::string_view name) -> int {
        for (size_t p = 0; p < m.params.size(); ++p)
            if (m.params[p] == name) return static_cast<int>(p);
        return -1;
    };
    // The tokens an argument contributes; __VA_ARGS__ takes the rest, commas included.
    auto arg_tokens = [&](int p) {
        std::vector<LexToken> toks;
        bool variadic = m.params[p] == "__VA_ARGS__";
        for (size_t a = static_cast<size_t>(p); a < args.size(); ++a) {
            if (a > static_cast<size_t>(p)) toks.push_back({LexKind::Punct, ",", offset});
            toks.insert(toks.end(), args[a].begin(), args[a].end());
            if (!variadic) break;
        }
        return toks;
    };
    bool paste_next = false;
    for (size_t i = 0; i < m.body.size(); ++i) {
        const LexToken& t = m.body[i];
        if (t.kind == LexKind::Punct && t.text == "##") {
            paste_next = !out.empty();
            continue;
        }
        std::vector<LexToken> piece;
        if (t.kind == LexKind::Punct && t.text == "#" && i + 1 < m.body.size() &&
            param_index(m.body[i + 1].text) >= 0) {
            std::string s = "\"";
            for (const auto& a : arg_tokens(param_index(m.body[++i].text))) s += a.text;
            piece.push_back({LexKind::String, store(s + "\""), offset});
        } else if (int p = t.kind == LexKind::Ident ? param_index(t.text) : -1; p >= 0) {
            piece = arg_tokens(p);
        } else {
            piece.push_back(t);
        }
        for (auto& pt : piece) pt.offset = offset;
        if (paste_next && !piece.empty()) {
            LexToken& last = out.back();
            std::string joined = std::string(last.text) + std::string(piece.front().text);
            last.text = store(std::move(joined));
            last.kind = last.kind == LexKind::Punct ? piece.front().kind : last.kind;
            piece.erase(piece.begin());
        }
        paste_next = false;
        out.insert(out.end(), piece.begin(), piece.end());
    }
}

void MacroExpander::expand(const std::vector<LexToken>& in, std::vector<LexToken>& out, int depth,
                           std::vector<std::string_view>& active, uint32_t offset) {
    for (size_t i = 0; i < in.size(); ++i) {
        if (budget_ == 0) return;
        const LexToken& t = in[i];
        auto it = t.kind == LexKind::Ident ? macros_.find(t.text) : macros_.end();
        bool callable = it != macros_.end() && i + 1 < in.size() && in[i + 1].text == "(" &&
                        depth < kMaxDepth &&
                        std::find(active.begin(), active.end(), t.text) == active.end();
        std::vector<std::vector<LexToken>> args;
        size_t close = 0;
        if (!callable || !collect_args(in, i + 1, close, args)) {
            out.push_back(t);
            out.back().offset = offset;
            --budget_;
            continue;
        }
        std::vector<LexToken> substituted;
        substitute(*it->second, args, substituted, offset);
        active.push_back(t.text);
        expand(substituted, out, depth + 1, active, offset);
        active.pop_back();
        i = close;
    }
}

std::vector<LexToken> MacroExpander::expand_at(const std::vector<LexToken>& tokens, size_t i,
                                               size_t& next) {
    size_t close = matching_close(tokens, i + 1);
    next = std::min(close + 1, tokens.size());
    std::vector<LexToken> call(tokens.begin() + static_cast<long>(i),
                               tokens.begin() + static_cast<long>(next));
    std::vector<LexToken> out;
    std::vector<std::string_view> active;
    expand(call, out, 0, active, tokens[i].offset);
    return out;
}

}  // namespace bekc
