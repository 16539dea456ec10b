// The exported-function model shared by every stage: what the scanner finds,
// what codegen renders, what the manifest records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diag/location.hpp"

namespace bekc {

// Scalar attribute types of SPEC §1.2, in the order the spec lists them.
enum class AttrType : uint8_t {
    Bool,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float32,
    Float64,
    Float16,
    BFloat16,
};

// One row of knowledge about an attribute type: its spec name, the C++ type the
// handler passes to the user function, and the XLA FFI dtype code it arrives as.
struct AttrTypeInfo {
    AttrType type;
    std::string_view name;      // "float32"
    std::string_view cxx_type;  // "float"
    int32_t xla_dtype;          // XLA_FFI_DataType value
};

// The whole table, one row per AttrType, in enum order.
const std::vector<AttrTypeInfo>& attr_types();
const AttrTypeInfo& attr_type_info(AttrType t);
std::optional<AttrType> attr_type_from_name(std::string_view name);
// Maps a C++ scalar spelling ("unsigned int", "int64_t", "const float") to its
// attribute type; nullopt for pointers, references and unknown types.
std::optional<AttrType> attr_type_from_cxx(std::string_view cxx);

enum class TokenKind : uint8_t { Arg, Ret, Stream, Attr };

// One canonical arg_spec token.
struct Token {
    TokenKind kind = TokenKind::Arg;
    std::string attr_name;                 // Attr only
    AttrType attr_type = AttrType::Int32;  // Attr only
    bool by_reference = false;             // Arg only: parameter is `const BE::Tensor&`

    std::string canonical() const;  // "arg", "ret", "stream", "attr.name:type"
    bool operator==(const Token&) const = default;
};

struct FunctionSpec {
    std::string name;
    std::vector<Token> tokens;
    Location annotation;  // the `// @BE` comment, or the signature for --function specs

    int num_args() const;
    int num_rets() const;
    bool has_stream() const;
    std::vector<std::string> canonical_tokens() const;
};

bool is_cxx_identifier(std::string_view s);
// Why `s` cannot be a name in generated code ("is a C++ keyword", "is not an
// ASCII C++ identifier"); empty when it can.
std::string identifier_problem(std::string_view s);
bool is_cxx_keyword(std::string_view s);

}  // namespace bekc
