// classify_dependencies (lib/driver/keys): what a build's full key and direct
// record hold besides the inputs. Real files in a temporary directory; no
// compiler runs: the "reported" lists stand for the depfiles.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "../helpers/temp_dir.hpp"
#include "driver/keys.hpp"
#include "util/error.hpp"

using namespace bekc;
using test::write_file;

namespace {

struct Fixture {
    test::TempDir tmp;
    BuildInputs in;
    fs::path runtime_include, build_dir;

    Fixture() {
        runtime_include = tmp / "cache/runtime/h/include";
        build_dir = tmp / "build";
        fs::create_directories(runtime_include);
        fs::create_directories(build_dir);
        in.name = in.target_prefix = "k";
        in.cxx = Tool{"/usr/bin/g++", "/usr/bin/g++", 1, 2};
    }

    // The one input, src/k.cpp, with `text`.
    fs::path source(const std::string& text) {
        fs::path p = tmp / "src/k.cpp";
        write_file(p, text);
        in.files = {SourceFile{p, false, text, {}}};
        return p;
    }

    DependencySet classify(std::vector<std::string> compile,
                           std::vector<LinkerDependency> link = {}, bool link_reported = true) {
        return classify_dependencies({std::move(compile), std::move(link), link_reported}, in,
                                     runtime_include, build_dir);
    }
};

bool absent(const DependencySet& d, const fs::path& p) {
    const auto& m = d.direct.must_not_exist;
    return std::find(m.begin(), m.end(), p.lexically_normal()) != m.end();
}

bool keyed(const DependencySet& d, const fs::path& p) {
    for (const auto& [path, sha] : d.hashed)
        if (path == p.lexically_normal().string()) return true;
    return false;
}

bool in_depfile(const DependencySet& d, const fs::path& p) {
    return std::find(d.user_headers.begin(), d.user_headers.end(), p.string()) !=
           d.user_headers.end();
}

LinkerDependency link(const fs::path& p) {
    return {p.string(), p.string()};
}

}  // namespace

TEST_CASE("keys: a quoted __has_include that found nothing lists every place it looked",
          "[keys][has_include]") {
    Fixture f;
    fs::create_directories(f.tmp / "a");
    fs::create_directories(f.tmp / "b");
    f.in.flags.include_dirs = {(f.tmp / "a").string(), (f.tmp / "b").string()};
    f.source("#if __has_include(\"opt.h\")\n#include \"opt.h\"\n#endif\n");
    auto d = f.classify({});
    CHECK(absent(d, f.tmp / "src/opt.h"));  // beside the source first
    CHECK(absent(d, f.tmp / "a/opt.h"));
    CHECK(absent(d, f.tmp / "b/opt.h"));
    CHECK(absent(d, "/usr/include/opt.h"));
    CHECK(d.hashed.empty());
}

TEST_CASE("keys: an angled __has_include does not look beside the file", "[keys][has_include]") {
    Fixture f;
    fs::create_directories(f.tmp / "a");
    f.in.flags.include_dirs = {(f.tmp / "a").string()};
    f.source("#if __has_include(<opt.h>)\n#endif\n");
    auto d = f.classify({});
    CHECK_FALSE(absent(d, f.tmp / "src/opt.h"));
    CHECK(absent(d, f.tmp / "a/opt.h"));
}

TEST_CASE("keys: a __has_include that found a file keys it and stops there",
          "[keys][has_include]") {
    Fixture f;
    f.in.flags.include_dirs = {(f.tmp / "a").string(), (f.tmp / "b").string(),
                               (f.tmp / "c").string()};
    fs::create_directories(f.tmp / "a");
    write_file(f.tmp / "b/opt.h", "#define OPT 1\n");
    f.source("#if __has_include(<opt.h>)\n#endif\n");
    auto d = f.classify({});
    CHECK(absent(d, f.tmp / "a/opt.h"));
    CHECK_FALSE(absent(d, f.tmp / "b/opt.h"));
    CHECK_FALSE(absent(d, f.tmp / "c/opt.h"));  // after the one found: cannot matter
    CHECK(keyed(d, f.tmp / "b/opt.h"));         // deleting or editing it must miss
    CHECK_FALSE(in_depfile(d, f.tmp / "b/opt.h"));
}

TEST_CASE("keys: a directory of the header's name is not a header", "[keys][has_include]") {
    Fixture f;
    f.in.flags.include_dirs = {(f.tmp / "a").string(), (f.tmp / "b").string()};
    fs::create_directories(f.tmp / "a/opt.h");
    fs::create_directories(f.tmp / "b");
    f.source("#if __has_include(<opt.h>)\n#endif\n");
    auto d = f.classify({});
    CHECK_FALSE(absent(d, f.tmp / "a/opt.h"));  // it exists: never a must-not-exist
    CHECK(absent(d, f.tmp / "b/opt.h"));
}

TEST_CASE("keys: __has_include in a recorded user header counts, next to that header",
          "[keys][has_include]") {
    Fixture f;
    f.in.flags.include_dirs = {(f.tmp / "inc").string()};
    write_file(f.tmp / "inc/sub/cfg.h", "#if __has_include(\"local.h\")\n#endif\n");
    f.source("#include \"sub/cfg.h\"\n");
    auto d = f.classify({(f.tmp / "inc/sub/cfg.h").string()});
    CHECK(keyed(d, f.tmp / "inc/sub/cfg.h"));
    CHECK(absent(d, f.tmp / "inc/sub/local.h"));  // the header's own directory
    CHECK(absent(d, f.tmp / "inc/local.h"));
}

TEST_CASE("keys: __has_include_next starts after the file's own directory", "[keys][has_include]") {
    Fixture f;
    f.in.flags.include_dirs = {(f.tmp / "a").string(), (f.tmp / "b").string(),
                               (f.tmp / "c").string()};
    write_file(f.tmp / "b/wrap.h", "#if __has_include_next(<next.h>)\n#endif\n");
    fs::create_directories(f.tmp / "a");
    fs::create_directories(f.tmp / "c");
    f.source("#include <wrap.h>\n");
    auto d = f.classify({(f.tmp / "b/wrap.h").string()});
    CHECK_FALSE(absent(d, f.tmp / "a/next.h"));  // before b: never searched by _next
    CHECK_FALSE(absent(d, f.tmp / "b/next.h"));
    CHECK(absent(d, f.tmp / "c/next.h"));
    CHECK(absent(d, "/usr/include/next.h"));
    CHECK(absent(d, f.tmp / "a/wrap.h"));  // the #include's own shadowing, as ever
}

TEST_CASE("keys: a header found through CPATH is shadowed by -I and the includer's dir",
          "[keys][env]") {
    Fixture f;
    fs::create_directories(f.tmp / "i");
    write_file(f.tmp / "cpath/cfg.h", "#define CFG 1\n");
    f.in.flags.include_dirs = {(f.tmp / "i").string()};
    f.in.env.include_dirs = {f.tmp / "cpath"};
    f.source("#include \"cfg.h\"\n");
    auto d = f.classify({(f.tmp / "cpath/cfg.h").string()});
    CHECK(keyed(d, f.tmp / "cpath/cfg.h"));
    CHECK(absent(d, f.tmp / "i/cfg.h"));
    CHECK(absent(d, f.tmp / "src/cfg.h"));
    CHECK(absent(d, f.runtime_include / "cfg.h"));
}

TEST_CASE("keys: CPATH comes after -I, CPLUS_INCLUDE_PATH after CPATH", "[keys][env]") {
    Fixture f;
    write_file(f.tmp / "i/a.h", "");
    write_file(f.tmp / "sys/b.h", "");
    fs::create_directories(f.tmp / "cpath");
    f.in.flags.include_dirs = {(f.tmp / "i").string()};
    f.in.env.include_dirs = {f.tmp / "cpath"};
    f.in.env.system_include_dirs = {f.tmp / "sys"};
    f.source("#include <a.h>\n#include <b.h>\n");
    auto d = f.classify({(f.tmp / "i/a.h").string(), (f.tmp / "sys/b.h").string()});
    // a.h, found in an -I dir, cannot be shadowed by the later CPATH dir.
    CHECK_FALSE(absent(d, f.tmp / "cpath/a.h"));
    // b.h, found through CPLUS_INCLUDE_PATH, can be by all before it.
    CHECK(absent(d, f.tmp / "cpath/b.h"));
    CHECK(absent(d, f.tmp / "i/b.h"));
}

TEST_CASE("keys: a user library the linker read is keyed, with the -L dirs before it",
          "[keys][link]") {
    Fixture f;
    write_file(f.tmp / "l2/libfoo.a", "archive");
    fs::create_directories(f.tmp / "l1");
    f.in.flags.ldflags = {"-L" + (f.tmp / "l1").string(), "-L", (f.tmp / "l2").string(), "-lfoo"};
    f.source("int x;\n");
    auto d = f.classify(
        {}, {link(f.tmp / "l2/libfoo.a"), link("/usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o")});
    CHECK(keyed(d, f.tmp / "l2/libfoo.a"));
    CHECK(in_depfile(d, f.tmp / "l2/libfoo.a"));
    CHECK_FALSE(keyed(d, "/usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o"));  // the toolchain's
    CHECK(absent(d, f.tmp / "l1/libfoo.so"));
    CHECK(absent(d, f.tmp / "l1/libfoo.a"));
    CHECK(absent(d, f.tmp / "l2/libfoo.so"));  // preferred to the .a in the same directory
    CHECK_FALSE(absent(d, f.tmp / "l2/libfoo.a"));
}

TEST_CASE("keys: LIBRARY_PATH directories are searched after -L", "[keys][link][env]") {
    Fixture f;
    write_file(f.tmp / "envlib/libbar.so", "so");
    fs::create_directories(f.tmp / "l1");
    f.in.flags.linker_args = {"-L" + (f.tmp / "l1").string(), "-lbar"};
    f.in.env.library_dirs = {f.tmp / "envlib"};
    f.source("int x;\n");
    auto d = f.classify({}, {link(f.tmp / "envlib/libbar.so")});
    CHECK(keyed(d, f.tmp / "envlib/libbar.so"));
    CHECK(absent(d, f.tmp / "l1/libbar.so"));
}

TEST_CASE("keys: the driver's deleted temporaries are skipped, other missing files are not",
          "[keys][link]") {
    Fixture f;
    f.source("int x;\n");
    auto d = f.classify({}, {link("/tmp/ccBEKCnone.o"), link(f.build_dir / "0_k.bekc.cpp.o")});
    CHECK(d.hashed.empty());
    CHECK_THROWS_AS(f.classify({}, {link(f.tmp / "gone/libx.a")}), FatalError);
}

TEST_CASE("keys: the ld and lld spellings of a path with a space", "[keys][link]") {
    Fixture f;
    write_file(f.tmp / "lib dir/libfoo.a", "archive");
    f.source("int x;\n");
    std::string path = (f.tmp / "lib dir/libfoo.a").string();
    std::string escaped = (f.tmp / "lib\\ dir/libfoo.a").string();
    auto bfd = f.classify({}, {{path, path}});
    auto lld = f.classify({}, {{escaped, path}});
    CHECK(keyed(bfd, f.tmp / "lib dir/libfoo.a"));
    CHECK(keyed(lld, f.tmp / "lib dir/libfoo.a"));
}

TEST_CASE("keys: without the linker's list, the link flags name the inputs", "[keys][link]") {
    Fixture f;
    write_file(f.tmp / "abs/libbar.a", "archive");
    write_file(f.tmp / "l/libfoo.so", "so");
    f.in.flags.ldflags = {(f.tmp / "abs/libbar.a").string(), "-Wl,-L," + (f.tmp / "l").string(),
                          "-lfoo", "-Wl,-soname,libk.so"};
    f.source("int x;\n");
    auto d = f.classify({}, {}, /*link_reported=*/false);
    CHECK(keyed(d, f.tmp / "abs/libbar.a"));
    CHECK(keyed(d, f.tmp / "l/libfoo.so"));
    CHECK(d.hashed.size() == 2);
}
