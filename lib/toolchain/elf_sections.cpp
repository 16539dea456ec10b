#include "toolchain/elf_sections.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "util/le_bytes.hpp"

namespace bekc {

namespace {

// ELF64's file header and section header fields that are read here (the
// System V gABI's offsets).
constexpr uint64_t kFileHeaderSize = 64;
constexpr uint64_t kSectionHeaderSize = 64;
constexpr unsigned char kClass64 = 2;
constexpr unsigned char kLittleEndian = 1;
constexpr uint64_t kSectionIndexEscape = 0xffff;  // SHN_XINDEX: the real index is in section 0
constexpr uint64_t kNoBits = 8;                   // SHT_NOBITS: no bytes in the file

struct SectionHeader {
    uint64_t name = 0;
    uint64_t type = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
    uint64_t link = 0;
};

struct SectionTable {
    std::string_view elf;
    uint64_t offset = 0;
    uint64_t entry_size = 0;
    uint64_t count = 0;
    uint64_t names_index = 0;
};

Error bad_elf(const std::string& file, const std::string& what) {
    return Error::at(ErrorKind::Usage, file, 0, what);
}

SectionHeader header_at(std::string_view elf, uint64_t at) {
    // The caller checked that the whole header lies inside the file.
    return {*read_le(elf, at, 4), *read_le(elf, at + 4, 4), *read_le(elf, at + 0x18, 8),
            *read_le(elf, at + 0x20, 8), *read_le(elf, at + 0x28, 4)};
}

std::expected<void, Error> check_ident(std::string_view elf, const std::string& file) {
    if (elf.size() < kFileHeaderSize || elf.substr(0, 4) !=
                                            "\x7f"
                                            "ELF")
        return std::unexpected(bad_elf(file, "not an ELF file"));
    if (static_cast<unsigned char>(elf[4]) != kClass64)
        return std::unexpected(bad_elf(file, "not a 64-bit ELF file"));
    if (static_cast<unsigned char>(elf[5]) != kLittleEndian)
        return std::unexpected(bad_elf(file, "not a little-endian ELF file"));
    return {};
}

// The section header table, with the escapes ELF uses for a count or a
// name-table index too large for the file header (both then in section 0).
std::expected<SectionTable, Error> section_table(std::string_view elf, const std::string& file) {
    if (auto ok = check_ident(elf, file); !ok) return std::unexpected(ok.error());
    SectionTable t{elf, *read_le(elf, 0x28, 8), *read_le(elf, 0x3a, 2), *read_le(elf, 0x3c, 2),
                   *read_le(elf, 0x3e, 2)};
    if (t.offset == 0)
        return std::unexpected(bad_elf(file, "the ELF file has no section header table"));
    if (t.entry_size < kSectionHeaderSize || !span_fits(t.offset, t.entry_size, elf.size()))
        return std::unexpected(
            bad_elf(file, fmt::format("the ELF section header table at offset {:#x} (entries of {} "
                                      "bytes) lies outside the file of {} bytes",
                                      t.offset, t.entry_size, elf.size())));
    const SectionHeader first = header_at(elf, t.offset);
    if (t.count == 0) t.count = first.size;
    if (t.names_index == kSectionIndexEscape) t.names_index = first.link;
    if (t.count == 0) return std::unexpected(bad_elf(file, "the ELF file has no sections"));
    if (t.count > (elf.size() - t.offset) / t.entry_size)
        return std::unexpected(bad_elf(
            file, fmt::format("the ELF file claims {} section headers at offset {:#x}, more "
                              "than its {} bytes hold",
                              t.count, t.offset, elf.size())));
    if (t.names_index >= t.count)
        return std::unexpected(
            bad_elf(file, fmt::format("the ELF section name table is section {}, of {}",
                                      t.names_index, t.count)));
    return t;
}

std::expected<std::string_view, Error> section_bytes(const SectionTable& t, uint64_t index,
                                                     const std::string& file) {
    const SectionHeader h = header_at(t.elf, t.offset + index * t.entry_size);
    if (h.type == kNoBits)
        return std::unexpected(
            bad_elf(file, fmt::format("ELF section {} holds no bytes in the file", index)));
    if (!span_fits(h.offset, h.size, t.elf.size()))
        return std::unexpected(bad_elf(
            file, fmt::format("ELF section {} ({} bytes at offset {:#x}) lies outside the file "
                              "of {} bytes",
                              index, h.size, h.offset, t.elf.size())));
    return t.elf.substr(h.offset, h.size);
}

std::expected<std::string_view, Error> section_name(const SectionTable& t, std::string_view names,
                                                    uint64_t index, const std::string& file) {
    const uint64_t at = header_at(t.elf, t.offset + index * t.entry_size).name;
    const size_t end = at < names.size() ? names.find('\0', at) : std::string_view::npos;
    if (end == std::string_view::npos)
        return std::unexpected(bad_elf(
            file,
            fmt::format("the name of ELF section {} lies outside the section name table", index)));
    return names.substr(at, end - at);
}

}  // namespace

std::expected<std::vector<std::string_view>, Error> elf_sections_named(std::string_view elf,
                                                                       std::string_view section,
                                                                       const std::string& file) {
    auto table = section_table(elf, file);
    if (!table) return std::unexpected(table.error());
    auto names = section_bytes(*table, table->names_index, file);
    if (!names) return std::unexpected(names.error());
    std::vector<std::string_view> found;
    for (uint64_t i = 0; i < table->count; ++i) {
        auto name = section_name(*table, *names, i, file);
        if (!name) return std::unexpected(name.error());
        if (*name != section) continue;
        if (found.size() == kMaxSectionsOfOneName)
            return std::unexpected(
                bad_elf(file, fmt::format("the ELF file has more than {} sections named {}",
                                          kMaxSectionsOfOneName, section)));
        auto bytes = section_bytes(*table, i, file);
        if (!bytes) return std::unexpected(bytes.error());
        found.push_back(*bytes);
    }
    return found;
}

}  // namespace bekc
