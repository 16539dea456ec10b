#include "scan/scope.hpp"

#include <algorithm>

namespace bekc {

ScopeMap::ScopeMap(const std::vector<LexToken>& tokens) {
    scopes_.push_back({0, Kind::Global, {}, {}});
    spans_.emplace_back(0, 0);
    std::vector<uint32_t> open_scopes{0};
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (is(tokens[i], "{")) {
            open_scopes.push_back(open(tokens, i, open_scopes.back()));
        } else if (is(tokens[i], "}") && open_scopes.size() > 1) {
            open_scopes.pop_back();
        } else {
            continue;
        }
        spans_.emplace_back(tokens[i].offset + 1, open_scopes.back());
    }
}

uint32_t ScopeMap::add(uint32_t parent, Kind kind, std::string_view name,
                       std::string_view keyword) {
    scopes_.push_back({parent, kind, name, keyword});
    return static_cast<uint32_t>(scopes_.size() - 1);
}

// The scope the `{` at tokens[i] opens inside `parent`.
uint32_t ScopeMap::open(const std::vector<LexToken>& tokens, size_t i, uint32_t parent) {
    if (i >= 2 && tokens[i - 1].kind == LexKind::String && is(tokens[i - 2], "extern"))
        return parent;  // extern "C" { }
    size_t k = i;
    while (k > 0 && ((tokens[k - 1].kind == LexKind::Ident && !is(tokens[k - 1], "namespace")) ||
                     is(tokens[k - 1], "::")))
        --k;
    if (k > 0 && is(tokens[k - 1], "namespace")) {
        // `namespace a::b {`, `namespace {`, `inline namespace v1 {`.
        if (k >= 2 && is(tokens[k - 2], "inline")) return parent;
        uint32_t scope = parent;
        for (size_t n = k; n < i; ++n) {
            if (tokens[n].kind != LexKind::Ident || is(tokens[n], "inline")) continue;
            auto [it, fresh] = namespaces_.try_emplace({scope, tokens[n].text()}, 0);
            if (fresh) it->second = add(scope, Kind::Namespace, tokens[n].text());
            scope = it->second;
        }
        return scope;
    }
    // A class: `struct K {`, `class K : public B<T> {`, but not the body of
    // `template <class T> void f(T x) {`, which has a `(` after the name.
    for (k = i; k > 0 && i - k < 64; --k) {
        const LexToken& t = tokens[k - 1];
        if (is(t, ";") || is(t, "{") || is(t, "}") || is(t, "(") || is(t, ")")) break;
        if ((is(t, "struct") || is(t, "class") || is(t, "union")) &&
            tokens[k].kind == LexKind::Ident)
            return add(parent, Kind::Class, tokens[k].text(), t.text());
    }
    return add(parent, Kind::Block, {});
}

uint32_t ScopeMap::at(uint32_t offset) const {
    auto it = std::upper_bound(
        spans_.begin(), spans_.end(), offset,
        [](uint32_t o, const std::pair<uint32_t, uint32_t>& s) { return o < s.first; });
    return std::prev(it)->second;
}

std::string ScopeMap::describe(uint32_t scope) const {
    const Scope& s = scopes_[scope];
    switch (s.kind) {
        case Kind::Global:
            return "global scope";
        case Kind::Class:
            return std::string(s.keyword) + " '" + std::string(s.name) + "'";
        case Kind::Block:
            return "a function body or another block";
        case Kind::Namespace:
            break;
    }
    std::string path(s.name);
    for (uint32_t p = s.parent; scopes_[p].kind == Kind::Namespace; p = scopes_[p].parent)
        path = std::string(scopes_[p].name) + "::" + path;
    return "namespace '" + path + "'";
}

}  // namespace bekc
