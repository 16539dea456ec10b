// GPU architecture lists (lib/plan/arch): what `--arch` accepts, how it is
// normalised, and the -gencode options nvcc receives.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "plan/arch.hpp"
#include "util/error.hpp"

using namespace bekc;

namespace {

std::vector<Arch> parse_ok(const std::string& list) {
    auto archs = parse_arch_list(list);
    INFO("--arch " << list << ": " << (archs ? std::string() : archs.error().render()));
    REQUIRE(archs.has_value());
    return *archs;
}

// The refusal of `list` as bekc prints it: the error, then its notes.
std::string arch_error(const std::string& list) {
    auto archs = parse_arch_list(list);
    INFO("--arch " << list);
    REQUIRE_FALSE(archs.has_value());
    CHECK(archs.error().kind == ErrorKind::Usage);
    REQUIRE_FALSE(archs.error().message.empty());
    return archs.error().render();
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
    const std::string known =
        "\nnote: the architectures bekc knows: sm_50, sm_52, sm_53, sm_60, sm_61, sm_62, sm_70, "
        "sm_72, sm_75, sm_80, sm_86, sm_87, sm_88, sm_89, sm_90, sm_100, sm_103, sm_110, sm_120, "
        "sm_121, and their arch-specific variants with an 'a' or 'f' suffix (sm_90a, sm_100f); "
        "`nvcc --list-gpu-code` names those your nvcc compiles for";
    // The spelling, and what bekc prints before the list of known architectures.
    const std::vector<std::pair<const char*, const char*>> table = {
        // brainevent raises UnsupportedArchError for these: major version below 2.
        {"1.0",
         "'1.0' (sm_10) names no GPU: no CUDA GPU has a major version below 2\n"
         "note: did you mean sm_100?"},
        {"sm_10",
         "'sm_10' names no GPU: no CUDA GPU has a major version below 2\n"
         "note: did you mean sm_100?"},
        {"0.0", "'0.0' (sm_00) names no GPU: no CUDA GPU has a major version below 2"},
        {"019", "'019' (sm_019) names no GPU: no CUDA GPU has a major version below 2"},
        // brainevent passes these on, and nvcc refuses them.
        {"sm_35", "nvcc does not compile for 'sm_35': bekc takes sm_50 and newer"},
        {"sm_75x",
         "nvcc does not compile for 'sm_75x': 'x' is not an architecture suffix (nvcc's are "
         "'a' and 'f')\nnote: did you mean sm_75?"},
        {"9.0b",
         "nvcc does not compile for '9.0b' (sm_90b): 'b' is not an architecture suffix (nvcc's "
         "are 'a' and 'f')\nnote: did you mean sm_90?"},
        {"086",
         "nvcc does not compile for '086' (sm_086): the number has a leading zero\n"
         "note: did you mean sm_86?"},
    };
    for (const auto& [spelling, said] : table) {
        INFO(spelling);
        CHECK(arch_error(spelling) == "bekc: error: --arch: " + std::string(said) + known);
    }
    CHECK(arch_error("8.0,sm_90b").find("'sm_90b'") != std::string::npos);
}

TEST_CASE("a spelling bekc cannot read says how to write one, and guesses when it can", "[arch]") {
    CHECK(arch_error("ampere") ==
          "bekc: error: --arch: 'ampere' is not a GPU architecture (write sm_90, 90, 9.0 or "
          "sm_90a; or native, auto)");
    CHECK(arch_error("sm86") ==
          "bekc: error: --arch: 'sm86' is not a GPU architecture (write sm_90, 90, 9.0 or "
          "sm_90a; or native, auto)\nnote: did you mean sm_86?");
    CHECK(arch_error("SM-120") ==
          "bekc: error: --arch: 'SM-120' is not a GPU architecture (write sm_90, 90, 9.0 or "
          "sm_90a; or native, auto)\nnote: did you mean sm_120?");
    // No architecture of those digits: no guess.
    CHECK(arch_error("sm_86x1").find("did you mean") == std::string::npos);
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

TEST_CASE("nvcc's own architecture options in the CUDA flags count as a choice", "[arch]") {
    for (const std::vector<std::string>& flags :
         std::vector<std::vector<std::string>>{{"-arch=sm_86"},
                                               {"-arch", "sm_86"},
                                               {"-lineinfo", "--gpu-architecture=compute_86"},
                                               {"-gencode", "arch=compute_86,code=sm_86"},
                                               {"--generate-code=arch=compute_86,code=sm_86"},
                                               {"-code=sm_86"},
                                               {"--gpu-code", "sm_86"},
                                               {"-arch=native"}}) {
        INFO(flags.front());
        CHECK(flags_name_gpu_archs(flags));
    }
    // Options that only start like one, and flags that choose nothing.
    for (const std::vector<std::string>& flags :
         std::vector<std::vector<std::string>>{{},
                                               {"-lineinfo", "--use_fast_math"},
                                               {"--archive-options=x"},
                                               {"-codegen"},
                                               {"-Xcompiler", "-march=native"}}) {
        INFO((flags.empty() ? std::string("(none)") : flags.front()));
        CHECK_FALSE(flags_name_gpu_archs(flags));
    }
}

TEST_CASE("arch_union: both lists, sorted and de-duplicated", "[arch]") {
    CHECK(sms(arch_union(parse_ok("sm_90,sm_80"), parse_ok("sm_86,sm_80"))) ==
          std::vector<std::string>{"sm_80", "sm_86", "sm_90"});
    CHECK(sms(arch_union({}, parse_ok("sm_75"))) == std::vector<std::string>{"sm_75"});
    CHECK(arch_union({}, {}).empty());
}
