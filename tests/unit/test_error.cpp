// Error, the one type of expected failures: the exit code each kind maps to,
// and the text main() prints for it.
#include <catch2/catch.hpp>

#include <set>
#include <string_view>

#include "driver/fatal.hpp"
#include "util/error.hpp"
#include "util/exit_codes.hpp"

using namespace bekc;

TEST_CASE("error: each kind exits with the code docs/cli.md gives it", "[error]") {
    CHECK(exit_code_of(ErrorKind::Source) == 1);
    CHECK(exit_code_of(ErrorKind::Usage) == 2);
    CHECK(exit_code_of(ErrorKind::Toolchain) == 3);
    CHECK(exit_code_of(ErrorKind::Cache) == 4);
    CHECK(exit_code_of(ErrorKind::Internal) == 70);
    Error interrupted = Error::make(ErrorKind::Interrupted, "interrupted by SIGINT");
    interrupted.signal = 2;
    CHECK(interrupted.exit_code() == 130);
}

TEST_CASE("error: one exit code row per kind, each code and name its own", "[error]") {
    std::set<int> codes;
    std::set<std::string_view> names;
    for (ErrorKind kind : {ErrorKind::Source, ErrorKind::Usage, ErrorKind::Toolchain,
                           ErrorKind::Cache, ErrorKind::Internal}) {
        const ExitCodeRow* row = exit_code_row(kind);
        REQUIRE(row);
        CHECK(row->code == exit_code_of(kind));
        CHECK_FALSE(row->meaning.empty());
        codes.insert(row->code);
        names.insert(row->name);
    }
    CHECK(codes.size() == std::size(kExitCodeRows));
    CHECK(names.size() == std::size(kExitCodeRows));
    CHECK(exit_code_row(ErrorKind::Interrupted) == nullptr);
}

TEST_CASE("error: rendered as bekc prints it, with its file, line and notes", "[error]") {
    CHECK(Error::make(ErrorKind::Cache, "cannot write /c/x: No space left on device").render() ==
          "bekc: error: cannot write /c/x: No space left on device");
    CHECK(Error::at(ErrorKind::Usage, "k.json", 0, "not valid JSON").render() ==
          "k.json: error: not valid JSON");
    CHECK(Error::at(ErrorKind::Source, "src/a.cpp", 9, "rename 'f'").render() ==
          "src/a.cpp:9: error: rename 'f'");
    Error e = Error::make(ErrorKind::Cache, "cannot write /c/x");
    e.within("--depfile").note("the cache is /c").note("or another");
    CHECK(e.render() ==
          "bekc: error: --depfile: cannot write /c/x\nnote: the cache is /c\nnote: or another");
    // Already printed (the scanner's diagnostics): nothing more to say.
    CHECK(Error::make(ErrorKind::Source, "").render().empty());
    CHECK(Error::make(ErrorKind::Interrupted, "interrupted by SIGTERM").render() ==
          "bekc: interrupted by SIGTERM");
}

TEST_CASE("error: seen as another kind, a failure keeps its file, line and notes", "[error]") {
    Error e = Error::at(ErrorKind::Usage, "/c/locks/stats.lock", 3, "held by pid 7");
    e.note("let it finish");
    e.as(ErrorKind::Cache).within("cache stats");
    CHECK(e.exit_code() == kExitCache);
    CHECK(e.render() ==
          "/c/locks/stats.lock:3: error: cache stats: held by pid 7\nnote: let it finish");
}

TEST_CASE("error: the driver's FatalError prints the Error and exits with its code", "[error]") {
    std::expected<int, Error> failed = fail(ErrorKind::Toolchain, "no host C++ compiler found");
    try {
        (void)or_fatal(failed, "--cxx");
        FAIL("no FatalError");
    } catch (const FatalError& e) {
        CHECK(std::string(e.what()) == "bekc: error: --cxx: no host C++ compiler found");
        CHECK(e.exit_code() == kExitToolchain);
        CHECK(e.error().kind == ErrorKind::Toolchain);
    }
    CHECK(or_fatal(std::expected<int, Error>(7)) == 7);
}
