#include "scan/spec.hpp"

#include <algorithm>
#include <iterator>

#include "util/text.hpp"

namespace bekc {

const std::vector<AttrTypeInfo>& attr_types() {
    // XLA dtype codes from XLA-FFI-ABI.md: PRED 1, S8 2, S16 3, S32 4, S64 5,
    // U8 6, U16 7, U32 8, U64 9, F16 10, F32 11, F64 12, BF16 16.
    static const std::vector<AttrTypeInfo> table = {
        {AttrType::Bool, "bool", "bool", 1},
        {AttrType::Int8, "int8", "int8_t", 2},
        {AttrType::UInt8, "uint8", "uint8_t", 6},
        {AttrType::Int16, "int16", "int16_t", 3},
        {AttrType::UInt16, "uint16", "uint16_t", 7},
        {AttrType::Int32, "int32", "int32_t", 4},
        {AttrType::UInt32, "uint32", "uint32_t", 8},
        {AttrType::Int64, "int64", "int64_t", 5},
        {AttrType::UInt64, "uint64", "uint64_t", 9},
        {AttrType::Float32, "float32", "float", 11},
        {AttrType::Float64, "float64", "double", 12},
        // XLA converts only 32- and 64-bit float scalars, so half-precision
        // attributes travel as their raw bits, a U16 scalar (SPEC §1.2).
        {AttrType::Float16, "float16", "uint16_t", 7},
        {AttrType::BFloat16, "bfloat16", "uint16_t", 7},
    };
    return table;
}

const AttrTypeInfo& attr_type_info(AttrType t) {
    return attr_types()[static_cast<size_t>(t)];
}

std::optional<AttrType> attr_type_from_name(std::string_view name) {
    for (const auto& row : attr_types())
        if (row.name == name) return row.type;
    return std::nullopt;
}

namespace {

struct CxxSpelling {
    std::string_view spelling;
    AttrType type;
};

// C++ spellings accepted for inference (SPEC §1.2), after `const` is dropped and
// white space is folded to single spaces.
constexpr CxxSpelling kCxxSpellings[] = {
    {"bool", AttrType::Bool},
    {"int8_t", AttrType::Int8},
    {"std::int8_t", AttrType::Int8},
    {"char", AttrType::Int8},
    {"signed char", AttrType::Int8},
    {"uint8_t", AttrType::UInt8},
    {"std::uint8_t", AttrType::UInt8},
    {"unsigned char", AttrType::UInt8},
    {"int16_t", AttrType::Int16},
    {"std::int16_t", AttrType::Int16},
    {"short", AttrType::Int16},
    {"uint16_t", AttrType::UInt16},
    {"std::uint16_t", AttrType::UInt16},
    {"unsigned short", AttrType::UInt16},
    {"int32_t", AttrType::Int32},
    {"std::int32_t", AttrType::Int32},
    {"int", AttrType::Int32},
    {"uint32_t", AttrType::UInt32},
    {"std::uint32_t", AttrType::UInt32},
    {"unsigned int", AttrType::UInt32},
    {"unsigned", AttrType::UInt32},
    {"int64_t", AttrType::Int64},
    {"std::int64_t", AttrType::Int64},
    {"long long", AttrType::Int64},
    {"uint64_t", AttrType::UInt64},
    {"std::uint64_t", AttrType::UInt64},
    {"unsigned long long", AttrType::UInt64},
    {"float", AttrType::Float32},
    {"double", AttrType::Float64},
    // The same types spelled out in full, as some code bases do.
    {"short int", AttrType::Int16},
    {"signed short", AttrType::Int16},
    {"signed short int", AttrType::Int16},
    {"unsigned short int", AttrType::UInt16},
    {"signed", AttrType::Int32},
    {"signed int", AttrType::Int32},
    {"long long int", AttrType::Int64},
    {"signed long long", AttrType::Int64},
    {"signed long long int", AttrType::Int64},
    {"unsigned long long int", AttrType::UInt64},
};

}  // namespace

std::optional<AttrType> attr_type_from_cxx(std::string_view cxx) {
    std::string s = fold_spaces(cxx);
    // Leading and trailing `const` (`const float`, `float const`) do not change
    // the value the handler passes.
    if (s.rfind("const ", 0) == 0) s.erase(0, 6);
    if (s.size() > 6 && s.compare(s.size() - 6, 6, " const") == 0) s.resize(s.size() - 6);
    for (const auto& row : kCxxSpellings)
        if (row.spelling == s) return row.type;
    return std::nullopt;
}

std::string Token::canonical() const {
    switch (kind) {
        case TokenKind::Arg:
            return "arg";
        case TokenKind::Ret:
            return "ret";
        case TokenKind::Stream:
            return "stream";
        case TokenKind::Attr:
            return "attr." + attr_name + ":" + std::string(attr_type_info(attr_type).name);
    }
    return {};
}

int FunctionSpec::num_args() const {
    return static_cast<int>(std::count_if(tokens.begin(), tokens.end(),
                                          [](const Token& t) { return t.kind == TokenKind::Arg; }));
}

int FunctionSpec::num_rets() const {
    return static_cast<int>(std::count_if(tokens.begin(), tokens.end(),
                                          [](const Token& t) { return t.kind == TokenKind::Ret; }));
}

bool FunctionSpec::has_stream() const {
    return std::any_of(tokens.begin(), tokens.end(),
                       [](const Token& t) { return t.kind == TokenKind::Stream; });
}

std::vector<std::string> FunctionSpec::canonical_tokens() const {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    for (const auto& t : tokens) out.push_back(t.canonical());
    return out;
}

bool is_cxx_identifier(std::string_view s) {
    if (s.empty()) return false;
    auto alpha = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    };
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (!alpha(s[0])) return false;
    for (char c : s)
        if (!alpha(c) && !digit(c)) return false;
    return !is_cxx_keyword(s);
}

std::string identifier_problem(std::string_view s) {
    if (is_cxx_identifier(s)) return {};
    return is_cxx_keyword(s) ? "is a C++ keyword" : "is not an ASCII C++ identifier";
}

bool is_cxx_keyword(std::string_view s) {
    static constexpr std::string_view kKeywords[] = {
        "alignas",       "alignof",     "and",
        "and_eq",        "asm",         "auto",
        "bitand",        "bitor",       "bool",
        "break",         "case",        "catch",
        "char",          "char8_t",     "char16_t",
        "char32_t",      "class",       "compl",
        "concept",       "const",       "consteval",
        "constexpr",     "constinit",   "const_cast",
        "continue",      "co_await",    "co_return",
        "co_yield",      "decltype",    "default",
        "delete",        "do",          "double",
        "dynamic_cast",  "else",        "enum",
        "explicit",      "export",      "extern",
        "false",         "float",       "for",
        "friend",        "goto",        "if",
        "inline",        "int",         "long",
        "mutable",       "namespace",   "new",
        "noexcept",      "not",         "not_eq",
        "nullptr",       "operator",    "or",
        "or_eq",         "private",     "protected",
        "public",        "register",    "reinterpret_cast",
        "requires",      "return",      "short",
        "signed",        "sizeof",      "static",
        "static_assert", "static_cast", "struct",
        "switch",        "template",    "this",
        "thread_local",  "throw",       "true",
        "try",           "typedef",     "typeid",
        "typename",      "union",       "unsigned",
        "using",         "virtual",     "void",
        "volatile",      "wchar_t",     "while",
        "xor",           "xor_eq",
    };
    // Sorted once, then searched: every name in a spec is checked here.
    static const std::vector<std::string_view> sorted = [] {
        std::vector<std::string_view> v(std::begin(kKeywords), std::end(kKeywords));
        std::sort(v.begin(), v.end());
        return v;
    }();
    return std::binary_search(sorted.begin(), sorted.end(), s);
}

}  // namespace bekc
