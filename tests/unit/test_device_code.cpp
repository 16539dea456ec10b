// The GPU code of a built library (lib/toolchain/device_code): the SASS and
// PTX architectures of the fat binaries in its `.nv_fatbin` section, read
// from ELF files built here byte by byte; and an Error, never a crash or an
// over-read, for a file that is not ELF64 or whose headers lie.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../helpers/temp_dir.hpp"
#include "toolchain/device_code.hpp"
#include "util/fs.hpp"

using namespace bekc;

namespace {

constexpr uint64_t kPtx = 1, kCubin = 2;
constexpr uint64_t kArchSpecific = 0x100000, kFamily = 0x200000;
// The flags nvcc 13 sets on every entry (64-bit, Linux) and on a compressed one.
constexpr uint64_t kPlain = 0x11, kCompressed = 0x8000;

void put(std::string& out, uint64_t at, uint64_t value, unsigned width) {
    if (out.size() < at + width) out.resize(at + width, '\0');
    for (unsigned i = 0; i < width; ++i) out[at + i] = static_cast<char>(value >> (8 * i));
}

struct FatEntry {
    uint64_t kind = kCubin;
    uint64_t arch = 80;
    uint64_t flags = kPlain;
    uint64_t payload = 24;  // bytes of code after the header
    uint64_t header_size = 0x40;
};

std::string entry(const FatEntry& e) {
    std::string out(e.header_size + e.payload, 'x');
    put(out, 0, e.kind, 2);
    put(out, 2, 0x101, 2);
    put(out, 4, e.header_size, 4);
    put(out, 8, e.payload, 8);
    put(out, 0x1c, e.arch, 4);
    put(out, 0x28, e.flags, 8);
    return out;
}

std::string container(const std::vector<FatEntry>& entries, uint64_t version = 1) {
    std::string body;
    for (const auto& e : entries) body += entry(e);
    std::string out;
    put(out, 0, 0xBA55ED50, 4);
    put(out, 4, version, 2);
    put(out, 6, 16, 2);
    put(out, 8, body.size(), 8);
    return out + body;
}

using Sections = std::vector<std::pair<std::string, std::string>>;

// An ELF64 little-endian shared object: the file header, each section's
// bytes, the section name table, then the section header table.
std::string elf(const Sections& sections) {
    std::string out(64, '\0');
    out.replace(0, 7,
                "\x7f"
                "ELF\x02\x01\x01");
    put(out, 0x10, 3, 2);  // ET_DYN
    std::string names(1, '\0');
    std::vector<std::pair<uint64_t, uint64_t>> placed;  // name offset, file offset
    for (const auto& [name, bytes] : sections) {
        placed.push_back({names.size(), out.size()});
        names += name + '\0';
        out += bytes;
    }
    placed.push_back({names.size(), out.size()});
    names += std::string(".shstrtab") + '\0';
    out += names;
    out.resize((out.size() + 7) / 8 * 8, '\0');
    const uint64_t table = out.size();
    out.resize(table + 64 * (placed.size() + 1), '\0');  // section 0 stays null
    for (size_t i = 0; i < placed.size(); ++i) {
        const uint64_t at = table + 64 * (i + 1);
        const uint64_t size = i < sections.size() ? sections[i].second.size() : names.size();
        put(out, at, placed[i].first, 4);
        put(out, at + 4, i < sections.size() ? 1 : 3, 4);  // PROGBITS, STRTAB
        put(out, at + 0x18, placed[i].second, 8);
        put(out, at + 0x20, size, 8);
    }
    put(out, 0x28, table, 8);
    put(out, 0x3a, 64, 2);
    put(out, 0x3c, placed.size() + 1, 2);
    put(out, 0x3e, placed.size(), 2);
    return out;
}

std::string fatbin_elf(const std::string& fatbin) {
    return elf({{".text", "code"}, {".nv_fatbin", fatbin}});
}

std::vector<std::string> sm(const std::vector<Arch>& archs) {
    std::vector<std::string> out;
    for (const auto& a : archs) out.push_back(a.sm());
    return out;
}

std::vector<std::string> compute(const std::vector<Arch>& archs) {
    std::vector<std::string> out;
    for (const auto& a : archs) out.push_back(a.compute());
    return out;
}

DeviceCode parse_ok(const std::string& bytes) {
    auto code = parse_device_code(bytes, "libk.so");
    INFO((code ? std::string() : code.error().render()));
    REQUIRE(code.has_value());
    return *code;
}

// The rendered error; it always names the file.
std::string parse_error(const std::string& bytes) {
    auto code = parse_device_code(bytes, "libk.so");
    REQUIRE_FALSE(code.has_value());
    CHECK(code.error().kind == ErrorKind::Usage);
    const std::string text = code.error().render();
    CHECK(text.rfind("libk.so: error: ", 0) == 0);
    return text;
}

}  // namespace

TEST_CASE("a fat binary's cubin and PTX entries give the SASS and PTX archs", "[device_code]") {
    const DeviceCode code =
        parse_ok(fatbin_elf(container({{kCubin, 80}, {kPtx, 80, kPlain | kCompressed, 40, 0x50}})));
    CHECK(sm(code.sass) == std::vector<std::string>{"sm_80"});
    CHECK(compute(code.ptx) == std::vector<std::string>{"compute_80"});
    CHECK(code.any());
}

TEST_CASE("every container of the section counts, sorted and without repeats, padding between",
          "[device_code]") {
    const std::string fatbin = container({}) + container({{kCubin, 90}, {kCubin, 80}}) +
                               std::string(16, '\0') +
                               container({{kCubin, 80}, {kPtx, 90}, {kCubin, 90}});
    const DeviceCode code = parse_ok(fatbin_elf(fatbin));
    CHECK(sm(code.sass) == std::vector<std::string>{"sm_80", "sm_90"});
    CHECK(compute(code.ptx) == std::vector<std::string>{"compute_90"});
}

TEST_CASE("arch-specific and family-specific entries are marked by their flags", "[device_code]") {
    const DeviceCode code = parse_ok(fatbin_elf(container({
        {kCubin, 90, kPlain | kArchSpecific},
        {kCubin, 100, kPlain | kFamily | 0x1000000},
        {kCubin, 120, kPlain | kArchSpecific | 0x1000000, 24, 0x70},
        {kPtx, 100, kPlain | kFamily | kCompressed, 8, 0x50},
        {kCubin, 90},
    })));
    CHECK(sm(code.sass) == std::vector<std::string>{"sm_90", "sm_90a", "sm_100f", "sm_120a"});
    CHECK(compute(code.ptx) == std::vector<std::string>{"compute_100f"});
}

TEST_CASE("a library without .nv_fatbin holds no GPU code, nor does __nv_relfatbin count",
          "[device_code]") {
    const DeviceCode none = parse_ok(elf({{".text", "code"}}));
    CHECK_FALSE(none.any());
    const DeviceCode linked = parse_ok(elf(
        {{".nv_fatbin", container({{kCubin, 80}})}, {"__nv_relfatbin", container({{kPtx, 90}})}}));
    CHECK(sm(linked.sass) == std::vector<std::string>{"sm_80"});
    CHECK(linked.ptx.empty());
}

TEST_CASE("entries of other kinds are skipped", "[device_code]") {
    const DeviceCode code = parse_ok(fatbin_elf(container({{4, 80}, {kCubin, 86}})));
    CHECK(sm(code.sass) == std::vector<std::string>{"sm_86"});
    CHECK(code.ptx.empty());
}

TEST_CASE("a file that is not ELF64 little-endian is an error naming it", "[device_code]") {
    CHECK_THAT(parse_error("hello, world"), Catch::Contains("not an ELF file"));
    CHECK_THAT(parse_error(""), Catch::Contains("not an ELF file"));
    std::string elf32 = fatbin_elf(container({{kCubin, 80}}));
    elf32[4] = 1;
    CHECK_THAT(parse_error(elf32), Catch::Contains("not a 64-bit ELF file"));
    std::string big = fatbin_elf(container({{kCubin, 80}}));
    big[5] = 2;
    CHECK_THAT(parse_error(big), Catch::Contains("not a little-endian ELF file"));
}

TEST_CASE("section headers, names and sections outside the file are errors", "[device_code]") {
    const std::string good = fatbin_elf(container({{kCubin, 80}}));
    std::string no_table = good;
    put(no_table, 0x28, 0, 8);
    CHECK_THAT(parse_error(no_table), Catch::Contains("no section header table"));
    std::string many = good;
    put(many, 0x3c, 0xfff0, 2);
    CHECK_THAT(parse_error(many), Catch::Contains("more than its"));
    std::string far = good;
    put(far, 0x28, UINT64_MAX - 8, 8);
    CHECK_THAT(parse_error(far), Catch::Contains("outside the file"));
    // The .nv_fatbin section (the third header) claims bytes far past the end.
    const uint64_t table = good.size() - 64 * 4;
    std::string huge = good;
    put(huge, table + 2 * 64 + 0x20, UINT64_MAX, 8);
    CHECK_THAT(parse_error(huge), Catch::Contains("lies outside the file"));
    std::string name = good;
    put(name, table + 2 * 64, 0xffffff, 4);
    CHECK_THAT(parse_error(name), Catch::Contains("outside the section name table"));
}

TEST_CASE("malformed fat binary headers are errors", "[device_code]") {
    std::string wrong_magic = container({{kCubin, 80}});
    put(wrong_magic, 0, 0x12345678, 4);
    CHECK_THAT(parse_error(fatbin_elf(wrong_magic)),
               Catch::Contains("at offset 0x0: wrong magic 0x12345678"));
    CHECK_THAT(parse_error(fatbin_elf(container({{kCubin, 80}}) + "\x50\xed\x55\xba")),
               Catch::Contains("truncated header"));
    CHECK_THAT(parse_error(fatbin_elf(container({{kCubin, 80}}, 2))),
               Catch::Contains("unknown version 2"));

    std::string huge_container = container({{kCubin, 80}});
    put(huge_container, 8, UINT64_MAX - 8, 8);
    CHECK_THAT(parse_error(fatbin_elf(huge_container)), Catch::Contains("run past the section"));

    std::string huge_payload = container({{kCubin, 80}});
    put(huge_payload, 16 + 8, UINT64_MAX, 8);
    CHECK_THAT(parse_error(fatbin_elf(huge_payload)), Catch::Contains("runs past its container"));

    std::string huge_header = container({{kCubin, 80}});
    put(huge_header, 16 + 4, 0xffffffff, 4);
    CHECK_THAT(parse_error(fatbin_elf(huge_header)), Catch::Contains("truncated entry header"));

    // A container whose size ends inside an entry header.
    std::string cut = container({{kCubin, 80}});
    put(cut, 8, 0x20, 8);
    CHECK_THAT(parse_error(fatbin_elf(cut)), Catch::Contains("truncated entry header"));

    CHECK_THAT(parse_error(fatbin_elf(container({{kCubin, 0}}))),
               Catch::Contains("architecture number 0"));
    CHECK_THAT(parse_error(fatbin_elf(container({{kCubin, 90, kArchSpecific | kFamily}}))),
               Catch::Contains("both arch-specific and family-specific"));
}

TEST_CASE("more fat binary entries than the limit are refused", "[device_code]") {
    const std::vector<FatEntry> entries(kMaxFatbinEntries + 1, FatEntry{kCubin, 80, kPlain, 0});
    CHECK_THAT(parse_error(fatbin_elf(container(entries))),
               Catch::Contains("more than " + std::to_string(kMaxFatbinEntries) + " entries"));
    const std::vector<FatEntry> at_limit(kMaxFatbinEntries, FatEntry{kCubin, 80, kPlain, 0});
    CHECK(sm(parse_ok(fatbin_elf(container(at_limit))).sass) == std::vector<std::string>{"sm_80"});
}

TEST_CASE("every truncation and every damaged byte gives an answer or an error", "[device_code]") {
    const std::string good =
        fatbin_elf(container({{kCubin, 80}, {kPtx, 90, kPlain, 16, 0x50}}) + container({}));
    for (size_t n = 0; n < good.size(); ++n) {
        auto code = parse_device_code(std::string_view(good).substr(0, n), "libk.so");
        CHECK_FALSE(code.has_value());  // the section headers are at the end
    }
    for (size_t i = 0; i < good.size(); ++i) {
        for (unsigned char b : {0x00, 0x7f, 0xff}) {
            std::string bad = good;
            bad[i] = static_cast<char>(b);
            auto code = parse_device_code(bad, "libk.so");
            if (!code) CHECK_FALSE(code.error().message.empty());
        }
    }
}

TEST_CASE("read_device_code reads the file and names it in errors", "[device_code]") {
    test::TempDir dir;
    test::write_file(dir / "libk.so", fatbin_elf(container({{kCubin, 75}})));
    auto code = read_device_code(dir / "libk.so");
    REQUIRE(code.has_value());
    CHECK(sm(code->sass) == std::vector<std::string>{"sm_75"});
    auto missing = read_device_code(dir / "libnone.so");
    REQUIRE_FALSE(missing.has_value());
    CHECK_THAT(missing.error().render(), Catch::Contains("libnone.so"));
}
