// GPU architecture lists (lib/plan/arch): what `--arch` accepts, how it is
// normalised, and the -gencode options nvcc receives.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "plan/arch.hpp"

using namespace bekc;

namespace {

std::vector<Arch> parse_ok(const std::string& list) {
    std::string err;
    auto archs = parse_arch_list(list, err);
    INFO("--arch " << list << ": " << err);
    REQUIRE(archs.has_value());
    CHECK(err.empty());
    return *archs;
}

std::string arch_error(const std::string& list) {
    std::string err;
    auto archs = parse_arch_list(list, err);
    INFO("--arch " << list);
    REQUIRE_FALSE(archs.has_value());
    REQUIRE_FALSE(err.empty());
    return err;
}

std::vector<std::string> sms(const std::vector<Arch>& archs) {
    std::vector<std::string> out;
    for (const auto& a : archs) out.push_back(a.sm());
    return out;
}

}  // namespace

TEST_CASE("every spelling of one architecture means the same thing", "[arch]") {
    for (const char* spelling : {"sm_90", "90", "9.0", "compute_90", " sm_90 "}) {
        INFO(spelling);
        auto archs = parse_ok(spelling);
        REQUIRE(archs.size() == 1);
        CHECK(archs[0].number == 90);
        CHECK(archs[0].suffix.empty());
        CHECK(archs[0].sm() == "sm_90");
        CHECK(archs[0].compute() == "compute_90");
    }
}

TEST_CASE("arch-specific feature sets keep their suffix", "[arch]") {
    auto a = parse_ok("sm_90a");
    REQUIRE(a.size() == 1);
    CHECK(a[0].number == 90);
    CHECK(a[0].suffix == "a");
    CHECK(a[0].sm() == "sm_90a");
    CHECK(a[0].compute() == "compute_90a");
    CHECK(sms(parse_ok("9.0a")) == std::vector<std::string>{"sm_90a"});
    CHECK(sms(parse_ok("100f")) == std::vector<std::string>{"sm_100f"});
    CHECK(sms(parse_ok("sm_120")) == std::vector<std::string>{"sm_120"});
    CHECK(sms(parse_ok("12.0")) == std::vector<std::string>{"sm_120"});
}

TEST_CASE("lists are sorted and de-duplicated across spellings", "[arch]") {
    CHECK(sms(parse_ok("sm_90,80,8.6")) == std::vector<std::string>{"sm_80", "sm_86", "sm_90"});
    CHECK(sms(parse_ok("sm_90,90,9.0,compute_90")) == std::vector<std::string>{"sm_90"});
    CHECK(sms(parse_ok("sm_90a,sm_90,sm_80")) ==
          std::vector<std::string>{"sm_80", "sm_90", "sm_90a"});
    // Numeric, not lexicographic: 100 is newer than 90.
    CHECK(sms(parse_ok("100,90")) == std::vector<std::string>{"sm_90", "sm_100"});
    // Stray commas and blanks are tolerated.
    CHECK(sms(parse_ok(" sm_80 , ,sm_90,")) == std::vector<std::string>{"sm_80", "sm_90"});
}

TEST_CASE("a spelling change does not change the canonical list", "[arch]") {
    CHECK(arch_list_string(parse_ok("9.0,80")) == arch_list_string(parse_ok("sm_80,sm_90")));
    CHECK(arch_list_string(parse_ok("9.0,80")) == "sm_80,sm_90");
    CHECK(arch_list_string({}) == "");
}

TEST_CASE("malformed architectures are errors that name the element and the syntax", "[arch]") {
    for (const char* bad :
         {"sm_9x", "foo", "sm_", "sm90", "9", "sm_90,bogus", "native,sm_90", "-1"}) {
        std::string err = arch_error(bad);
        INFO(bad << " -> " << err);
        CHECK(err.find("--arch") != std::string::npos);
        CHECK(err.find("sm_90") != std::string::npos);  // shows how to write one
    }
    std::string err = arch_error("sm_80,sm_9x");
    CHECK(err.find("'sm_9x'") != std::string::npos);
}

TEST_CASE("architectures too old for current CUDA are refused", "[arch]") {
    std::string err = arch_error("sm_35");
    CHECK(err.find("sm_35") != std::string::npos);
    arch_error("3.0");
    CHECK(parse_ok("sm_50").front().number == 50);
}

// brainevent's normalize_arch (0.2.1 and 0.3.0), element by element: the
// spelling, and the architecture it gives ("" where it raises ValueError).
// bekc's Python loaders pass compute_capability through unchanged, so the
// binary must read every spelling the same way.
TEST_CASE("every spelling brainevent accepts gives brainevent's architecture", "[arch]") {
    const std::vector<std::pair<const char*, const char*>> table = {
        {"8.6", "sm_86"},
        {"86", "sm_86"},
        {"sm_86", "sm_86"},
        {"SM_86", "sm_86"},
        {"Sm_86", "sm_86"},
        {"compute_86", "sm_86"},
        {"COMPUTE_86", "sm_86"},
        {" 8.6 ", "sm_86"},
        {"9.0a", "sm_90a"},
        {"90a", "sm_90a"},
        {"sm_90a", "sm_90a"},
        {"9.0A", "sm_90a"},
        {"compute_90a", "sm_90a"},
        {"12.0", "sm_120"},
        {"120", "sm_120"},
        {"sm_100f", "sm_100f"},
        {"10.0f", "sm_100f"},
        {"8.6.", "sm_86"},
        {".86", "sm_86"},
        {"sm_8.6", "sm_86"},
        {"8..6", "sm_86"},
        {"compute_8.6", "sm_86"},
        {"8.6.a", "sm_86a"},
        {"12.1", "sm_121"},
        {"9.0.1", "sm_901"},
        // refused by both
        {"all", ""},
        {"all-major", ""},
        {"ampere", ""},
        {"8", ""},
        {"sm_", ""},
        {"..", ""},
        {"sm_1234", ""},
        {"8.6ab", ""},
        {"sm_86x1", ""},
        {"sm90", ""},
        {"compute_sm_86", ""},
        {"sm_ 86", ""},
        {"a", ""},
        {"-86", ""},
        {"native", ""},
    };
    for (const auto& [spelling, want] : table) {
        INFO(spelling);
        if (*want == '\0') {
            CHECK(arch_error(spelling).find("is not a GPU architecture") != std::string::npos);
            continue;
        }
        CHECK(sms(parse_ok(spelling)) == std::vector<std::string>{want});
    }
}

TEST_CASE("a list in brainevent's spellings gives the canonical list", "[arch]") {
    CHECK(arch_list_string(parse_ok("SM_86, 8.0,.90,compute_8.6")) == "sm_80,sm_86,sm_90");
}

TEST_CASE("spellings brainevent accepts but no GPU or nvcc has are refused, saying why", "[arch]") {
    // brainevent raises UnsupportedArchError for these: major version below 2.
    CHECK(arch_error("1.0") ==
          "--arch: '1.0' is sm_10, and no CUDA GPU has a major version below 2");
    CHECK(arch_error("sm_10") ==
          "--arch: 'sm_10' is sm_10, and no CUDA GPU has a major version below 2");
    CHECK(arch_error("0.0").find("is sm_00, and no CUDA GPU") != std::string::npos);
    CHECK(arch_error("019").find("is sm_019, and no CUDA GPU") != std::string::npos);
    // brainevent passes these on, and nvcc refuses them.
    const std::string nvcc_refuses =
        ", which nvcc does not compile for (bekc takes sm_50 and newer, with an 'a' or 'f' "
        "suffix at most)";
    CHECK(arch_error("sm_35") == "--arch: 'sm_35' is sm_35" + nvcc_refuses);
    CHECK(arch_error("sm_90b") == "--arch: 'sm_90b' is sm_90b" + nvcc_refuses);
    CHECK(arch_error("086") == "--arch: '086' is sm_086" + nvcc_refuses);
    CHECK(arch_error("8.0,sm_90b").find("'sm_90b'") != std::string::npos);
}

TEST_CASE("an empty list is an error", "[arch]") {
    CHECK(arch_error("").find("empty") != std::string::npos);
    CHECK(arch_error(" , ").find("empty") != std::string::npos);
}

TEST_CASE("gencode: SASS for every arch and PTX for the highest", "[arch]") {
    CHECK(gencode_flags(parse_ok("sm_90")) ==
          std::vector<std::string>{"-gencode", "arch=compute_90,code=sm_90", "-gencode",
                                   "arch=compute_90,code=compute_90"});
    CHECK(gencode_flags(parse_ok("90,80,86")) ==
          std::vector<std::string>{"-gencode", "arch=compute_80,code=sm_80", "-gencode",
                                   "arch=compute_86,code=sm_86", "-gencode",
                                   "arch=compute_90,code=sm_90", "-gencode",
                                   "arch=compute_90,code=compute_90"});
    // PTX goes with the numerically highest, not the last one typed.
    auto flags = gencode_flags(parse_ok("sm_100,sm_90"));
    REQUIRE(flags.size() == 6);
    CHECK(flags.back() == "arch=compute_100,code=compute_100");
    CHECK(gencode_flags({}).empty());
}

TEST_CASE("gencode keeps arch-specific suffixes", "[arch]") {
    auto flags = gencode_flags(parse_ok("sm_90a"));
    REQUIRE(flags.size() == 4);
    CHECK(flags[1] == "arch=compute_90a,code=sm_90a");
}

TEST_CASE("nvidia-smi compute capabilities become a sorted arch list", "[arch]") {
    CHECK(sms(parse_compute_caps("9.0\n8.6\n9.0\n")) == std::vector<std::string>{"sm_86", "sm_90"});
    CHECK(sms(parse_compute_caps("  8.0 \r\n")) == std::vector<std::string>{"sm_80"});
    CHECK(parse_compute_caps("").empty());
    CHECK(parse_compute_caps("No devices were found\n").empty());
}
