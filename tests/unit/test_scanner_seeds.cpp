// Regression run of the fuzz seeds (tests/fuzz/seeds), which include every
// input that once crashed or hung the scanner: each scans, as .cu and as
// .cpp, quickly and within the rules, in the ordinary unit test build.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>

#include "../helpers/temp_dir.hpp"
#include "test_scanner_util.hpp"

namespace fs = std::filesystem;

namespace {

void check_rules(const bekc::ScanResult& r, bool cuda) {
    for (const auto& fn : r.functions) {
        CHECK(bekc::is_cxx_identifier(fn.name));
        CHECK(fn.num_rets() >= 1);
        CHECK((fn.has_stream() ? cuda : true));
        std::set<std::string> attrs;
        for (const auto& t : fn.tokens)
            if (t.kind == bekc::TokenKind::Attr) {
                CHECK(bekc::is_cxx_identifier(t.attr_name));
                CHECK(attrs.insert(t.attr_name).second);
            }
    }
    for (const auto& d : r.diagnostics) CHECK_FALSE(d.render().empty());
}

}  // namespace

TEST_CASE("fuzz seeds scan within the rules and in time", "[scanner][seeds]") {
    const fs::path seeds = fs::path(BEKC_SOURCE_DIR) / "tests" / "fuzz" / "seeds";
    REQUIRE(fs::is_directory(seeds));
    int n = 0;
    for (const auto& e : fs::directory_iterator(seeds)) {
        if (!e.is_regular_file()) continue;
        const std::string text = bekc::test::read_file(e.path());
        INFO(e.path().filename().string());
        for (const char* file : {"seed.cu", "seed.cpp"}) {
            auto t0 = std::chrono::steady_clock::now();
            bekc::ScanResult r = bekc::test::scan(text, file);
            auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            check_rules(r, bekc::is_cuda_source(file));
            // The fuzzer's limit is 2 s per input (six scans, under sanitizers).
            CHECK(s < 2.0);
        }
        ++n;
    }
    CHECK(n >= 5);
}
