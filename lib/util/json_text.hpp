// JSON text of any bytes: the one place where bekc turns JSON values into
// text and back.
//
// JSON strings are Unicode, but much of what bekc writes into them is bytes: a
// Linux file name need not be UTF-8 (a Latin-1 directory b"caf\xe9"), nor
// need a compiler's version line. nlohmann's dump() throws on such a string,
// and replacing the bytes would hand back another path. So each byte that is
// not part of a UTF-8 sequence is written as the escape of a lone surrogate,
// "\udc80" to "\udcff" (U+DC00 plus the byte): Python's spelling of such a
// byte ("surrogateescape"), so that json.loads reads it into a str that
// os.fsencode, open() and every os function turn back into the same bytes.
// parse_json reads those escapes back into the bytes, so a path that bekc
// writes and reads again (a manifest's, a direct record's, a memo's key) is
// the same path. Everything else is nlohmann's text, and a string that is
// valid UTF-8 is written exactly as nlohmann writes it.
//
// Every JSON text bekc writes goes through dump_json, and every one it reads
// back through parse_json.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace bekc {

// `value` as JSON text, nlohmann's dump(indent) but for the bytes above.
// Never throws for a string's bytes.
template <typename Json>
std::string dump_json(const Json& value, int indent = -1);

// The value of `text`, with the escapes above turned back into their bytes;
// nlohmann's message (which says where) when `text` is not JSON.
template <typename Json = nlohmann::json>
std::expected<Json, std::string> parse_json(std::string_view text);

// The code point of the four hex digits of a JSON escape "\uXXXX" (either
// case), or nullopt when `digits` are not that.
std::optional<uint32_t> escape_digits(std::string_view digits);

// The byte a JSON escape of the lone surrogate `code_point` stands for
// (U+DC80..U+DCFF, as above), or nullopt for any other code point.
std::optional<char> escaped_byte(uint32_t code_point);

}  // namespace bekc
