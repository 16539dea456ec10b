// The sections of an ELF64 little-endian file held in memory, found by name
// through the section header table. Every offset and size the file states is
// checked against its length, so a truncated or hostile file gives an Error,
// never a read outside the bytes.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace bekc {

// More sections of one name than this is not a file a linker wrote.
inline constexpr size_t kMaxSectionsOfOneName = 64;

// The bytes of every section called `section` in `elf`, in table order (none
// when the file has no such section). `file` names the file in errors, which
// are ErrorKind::Usage: not ELF64 little-endian, no section header table, or
// a header, name or section outside the file.
std::expected<std::vector<std::string_view>, Error> elf_sections_named(std::string_view elf,
                                                                       std::string_view section,
                                                                       const std::string& file);

}  // namespace bekc
