// The cache choice bekc's Python package asks for (config/cache_choice.hpp):
// the settings over the environment, the cache a miss builds into, and the
// variables the answer read.
#include <catch2/catch.hpp>

#include <algorithm>

#include "../helpers/env.hpp"
#include "../helpers/temp_dir.hpp"
#include "config/cache_choice.hpp"

using namespace bekc;
namespace fs = std::filesystem;

using test::env_of;

namespace {

bool has(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("cache choice: cache_dir in the user's bekc.conf names the cache", "[cache_choice]") {
    test::TempDir dir;
    test::write_file(dir / "h/.config/bekc/bekc.conf",
                     "cache_dir = " + (dir / "c").string() + "\n");
    auto choice = choose_cache(std::nullopt, env_of({{"HOME", (dir / "h").string()}}));
    REQUIRE(choice);
    CHECK(choice->dir == dir / "c");
    CHECK(choice->own == dir / "c");
    CHECK_FALSE(choice->demoted);
    // Every variable that could have changed the answer, and no other.
    CHECK(has(choice->variables, "HOME"));
    CHECK(has(choice->variables, "BEKC_CACHE_DIR"));
    CHECK(has(choice->variables, "XDG_CONFIG_HOME"));
    CHECK_FALSE(has(choice->variables, "PATH"));
    CHECK(std::is_sorted(choice->variables.begin(), choice->variables.end()));
}

TEST_CASE("cache choice: --cache-dir wins over the environment and the files", "[cache_choice]") {
    test::TempDir dir;
    auto choice = choose_cache(
        (dir / "flag").string(),
        env_of({{"HOME", (dir / "h").string()}, {"BEKC_CACHE_DIR", (dir / "env").string()}}));
    REQUIRE(choice);
    CHECK(choice->dir == dir / "flag");
    const auto json = cache_choice_json(*choice);
    CHECK(json["dir"] == (dir / "flag").string());
    CHECK(json["demoted"].is_null());
}

TEST_CASE("cache choice: a bekc.conf with an error is a usage error naming its line",
          "[cache_choice]") {
    test::TempDir dir;
    test::write_file(dir / "h/.config/bekc/bekc.conf", "max_sise = 1G\n");
    auto choice = choose_cache(std::nullopt, env_of({{"HOME", (dir / "h").string()}}));
    REQUIRE_FALSE(choice);
    CHECK(choice.error().kind == ErrorKind::Usage);
    CHECK(choice.error().message.find("bekc.conf:1: error: unknown key 'max_sise'") !=
          std::string::npos);
}
