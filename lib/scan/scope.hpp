// Which scope each part of a source file is in, for telling apart functions
// of one name: namespaces by their names (a namespace reopened is the same
// scope), every class, function or other `{ }` body as a scope of its own.
// Anonymous and inline namespaces and `extern "C" { }` add none: their
// functions are called by their plain name from the enclosing scope.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scan/lexer.hpp"

namespace bekc {

class ScopeMap {
  public:
    // From every token of a file (lex(text, true)).
    explicit ScopeMap(const std::vector<LexToken>& tokens);

    // The scope at a byte offset of the file: equal numbers, one scope; 0 is
    // global scope.
    uint32_t at(uint32_t offset) const;

    // For messages: "global scope", "namespace 'a::b'", "struct 'K'".
    std::string describe(uint32_t scope) const;

  private:
    enum class Kind : uint8_t { Global, Namespace, Class, Block };
    struct Scope {
        uint32_t parent;
        Kind kind;
        std::string_view name;     // of a namespace or class
        std::string_view keyword;  // of a class: "struct", "class" or "union"
    };

    uint32_t open(const std::vector<LexToken>& tokens, size_t i, uint32_t parent);
    uint32_t add(uint32_t parent, Kind kind, std::string_view name, std::string_view keyword = {});

    std::vector<Scope> scopes_;
    std::vector<std::pair<uint32_t, uint32_t>> spans_;  // (from offset, scope), sorted
    std::map<std::pair<uint32_t, std::string_view>, uint32_t> namespaces_;
};

}  // namespace bekc
