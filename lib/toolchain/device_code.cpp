#include "toolchain/device_code.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "toolchain/elf_sections.hpp"
#include "util/le_bytes.hpp"

namespace bekc {

namespace {

// A fat binary is a container header followed by its entries:
//   container: u32 magic 0xBA55ED50, u16 version (1), u16 header size (16),
//              u64 size of the entries that follow the header;
//   entry:     u16 kind (1 PTX, 2 cubin), u16 version, u32 header size,
//              u64 payload size (the payload follows the header), ...,
//              u32 architecture number at 0x1c (90 for sm_90), u64 flags at
//              0x28, in which 0x100000 marks an arch-specific (sm_90a) and
//              0x200000 a family-specific (sm_100f) code.
// A library holds one container per translation unit and one for nvcc's
// device link, back to back (each 8-byte aligned), so zero bytes may pad
// between them. A compressed payload keeps its entry header as it is.
constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint64_t kFatbinVersion = 1;
constexpr uint64_t kContainerHeaderSize = 16;
constexpr uint64_t kEntryFieldsEnd = 0x30;  // the last field read is the flags, at 0x28
constexpr uint64_t kKindPtx = 1;
constexpr uint64_t kKindCubin = 2;
constexpr uint64_t kArchSpecificFlag = 0x100000;
constexpr uint64_t kFamilySpecificFlag = 0x200000;
constexpr uint64_t kHighestArchNumber = 9999;
constexpr uint64_t kPadding = 8;

struct FatbinWalk {
    std::string_view section;
    const std::string& file;
    size_t entries = 0;
    DeviceCode code;
};

Error malformed(const FatbinWalk& w, uint64_t at, const std::string& what) {
    return Error::at(
        ErrorKind::Usage, w.file, 0,
        fmt::format("malformed fat binary in section .nv_fatbin at offset {:#x}: {}", at, what));
}

std::expected<Arch, std::string> entry_arch(uint64_t number, uint64_t flags) {
    if (number == 0 || number > kHighestArchNumber)
        return std::unexpected(fmt::format("architecture number {} is not sm_XX's", number));
    const bool specific = flags & kArchSpecificFlag, family = flags & kFamilySpecificFlag;
    if (specific && family)
        return std::unexpected("the entry is marked both arch-specific and family-specific");
    return Arch{static_cast<int>(number), specific ? "a" : family ? "f" : ""};
}

// Reads the entry at `at`, which must end by `end`; returns where the next begins.
std::expected<uint64_t, Error> read_entry(FatbinWalk& w, uint64_t at, uint64_t end) {
    const std::string_view s = w.section.substr(0, end);
    const auto header_size = read_le(s, at + 4, 4), payload = read_le(s, at + 8, 8);
    if (!header_size || *header_size < kEntryFieldsEnd || !span_fits(at, *header_size, end))
        return std::unexpected(malformed(w, at, "truncated entry header"));
    if (!span_fits(at + *header_size, *payload, end))
        return std::unexpected(malformed(
            w, at, fmt::format("entry payload of {} bytes runs past its container", *payload)));
    if (++w.entries > kMaxFatbinEntries)
        return std::unexpected(
            malformed(w, at, fmt::format("more than {} entries", kMaxFatbinEntries)));
    const uint64_t kind = *read_le(s, at, 2);
    if (kind == kKindPtx || kind == kKindCubin) {
        auto arch = entry_arch(*read_le(s, at + 0x1c, 4), *read_le(s, at + 0x28, 8));
        if (!arch) return std::unexpected(malformed(w, at, arch.error()));
        (kind == kKindPtx ? w.code.ptx : w.code.sass).push_back(*arch);
    }
    return at + *header_size + *payload;
}

// Reads the container at `at` and its entries; returns where the next begins.
std::expected<uint64_t, Error> read_container(FatbinWalk& w, uint64_t at) {
    const auto magic = read_le(w.section, at, 4), version = read_le(w.section, at + 4, 2),
               header_size = read_le(w.section, at + 6, 2), size = read_le(w.section, at + 8, 8);
    if (!magic || *magic != kFatbinMagic)
        return std::unexpected(
            malformed(w, at,
                      magic ? fmt::format("wrong magic {:#x} (a fat binary starts with {:#x})",
                                          *magic, kFatbinMagic)
                            : std::string("truncated header")));
    if (!size) return std::unexpected(malformed(w, at, "truncated header"));
    if (*version != kFatbinVersion)
        return std::unexpected(malformed(w, at, fmt::format("unknown version {}", *version)));
    if (*header_size < kContainerHeaderSize || !span_fits(at, *header_size, w.section.size()) ||
        !span_fits(at + *header_size, *size, w.section.size()))
        return std::unexpected(
            malformed(w, at,
                      fmt::format("a header of {} bytes and entries of {} bytes run past the "
                                  "section's {} bytes",
                                  *header_size, *size, w.section.size())));
    const uint64_t end = at + *header_size + *size;
    for (uint64_t entry = at + *header_size; entry < end;) {
        auto next = read_entry(w, entry, end);
        if (!next) return std::unexpected(next.error());
        entry = *next;
    }
    return end;
}

// Zero padding after `at`, in whole 8-byte words.
uint64_t skip_padding(std::string_view section, uint64_t at) {
    while (read_le(section, at, kPadding) == uint64_t{0}) at += kPadding;
    return at;
}

void sort_unique(std::vector<Arch>& archs) {
    std::sort(archs.begin(), archs.end());
    archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
}

}  // namespace

std::expected<DeviceCode, Error> parse_device_code(std::string_view elf_bytes,
                                                   const std::string& name_for_errors) {
    auto sections = elf_sections_named(elf_bytes, ".nv_fatbin", name_for_errors);
    if (!sections) return std::unexpected(sections.error());
    FatbinWalk w{{}, name_for_errors, 0, {}};
    for (std::string_view section : *sections) {
        w.section = section;
        for (uint64_t at = skip_padding(section, 0); at < section.size();) {
            auto next = read_container(w, at);
            if (!next) return std::unexpected(next.error());
            at = skip_padding(section, *next);
        }
    }
    sort_unique(w.code.sass);
    sort_unique(w.code.ptx);
    return w.code;
}

std::expected<DeviceCode, Error> read_device_code(const fs::path& library) {
    auto bytes = read_file(library);
    if (!bytes) return std::unexpected(bytes.error());
    return parse_device_code(*bytes, library.string());
}

}  // namespace bekc
