// classify_dependencies (lib/graph/dependencies): what a build's full key and direct
// record hold besides the inputs. Real files in a temporary directory; no
// compiler runs: the "reported" lists stand for the depfiles.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "../helpers/temp_dir.hpp"
#include "graph/keys.hpp"
#include "graph/search_order.hpp"
#include "util/error.hpp"

using namespace bekc;
using test::write_file;

namespace {

struct Fixture {
    test::TempDir tmp;
    BuildInputs in;
    fs::path runtime_include, build_dir;
    std::string multiarch;  // the host compiler's triplet: none

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

    // The one input, proj/src/k.cpp with `text`, where proj/src is a link
    // to ../real/src. Returns the temporary directory's real path.
    fs::path linked_source(const std::string& text) {
        const fs::path t = fs::canonical(tmp.path());
        write_file(t / "real/src/k.cpp", text);
        fs::create_directories(t / "proj");
        fs::create_directory_symlink("../real/src", t / "proj/src");
        in.files = {SourceFile{t / "proj/src/k.cpp", false, text, {}}};
        return t;
    }

    std::expected<DependencySet, Error> classified(std::vector<std::string> compile,
                                                   std::vector<LinkerDependency> link = {},
                                                   bool link_reported = true) {
        return classify_dependencies({std::move(compile), std::move(link), link_reported}, in,
                                     multiarch, runtime_include, build_dir);
    }
    DependencySet classify(std::vector<std::string> compile,
                           std::vector<LinkerDependency> link = {}, bool link_reported = true) {
        return classified(std::move(compile), std::move(link), link_reported).value();
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
    auto gone = f.classified({}, {link(f.tmp / "gone/libx.a")});
    REQUIRE_FALSE(gone);
    CHECK(gone.error().kind == ErrorKind::Source);
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

TEST_CASE("keys: a header reached by '..' after a linked directory is the file the kernel opens",
          "[keys][symlink]") {
    Fixture f;
    const fs::path t = f.linked_source("#include \"../common/x.h\"\n");
    write_file(t / "real/common/x.h", "#define X 1\n");
    // As g++ writes them: the input as the wrapper names it, the header
    // beside it as "<its directory>/../common/x.h".
    std::vector<std::string> reported = {(t / "proj/src/k.cpp").string(),
                                         (t / "proj/src/../common/x.h").string()};
    SECTION("nothing where the path leads lexically") {
        auto d = f.classify(reported);
        CHECK(keyed(d, t / "real/common/x.h"));
        CHECK(in_depfile(d, t / "real/common/x.h"));
        CHECK(d.hashed.size() == 1);  // the input itself is not a dependency
    }
    SECTION("another file where the path leads lexically") {
        write_file(t / "proj/common/x.h", "#define X 2\n");
        auto d = f.classify(reported);
        CHECK(keyed(d, t / "real/common/x.h"));
        CHECK_FALSE(keyed(d, t / "proj/common/x.h"));
        CHECK_FALSE(in_depfile(d, t / "proj/common/x.h"));
        // The record checks the file, and the path as the compiler wrote it,
        // which leads elsewhere once the link is pointed elsewhere.
        REQUIRE(d.direct.dependencies.size() == 2);
        CHECK(d.direct.dependencies[0].path == t / "real/common/x.h");
        CHECK(d.direct.dependencies[1].path == t / "proj/src/../common/x.h");
        CHECK(d.direct.dependencies[1].sha256 == d.direct.dependencies[0].sha256);
    }
}

TEST_CASE("keys: a __has_include of '../x.h' after a linked directory looks where the kernel does",
          "[keys][symlink][has_include]") {
    Fixture f;
    const fs::path t = f.linked_source("#if __has_include(\"../common/opt.h\")\n#endif\n");
    fs::create_directories(t / "real/common");
    fs::create_directories(t / "proj/common");
    auto d = f.classify({});
    CHECK(absent(d, t / "real/common/opt.h"));
    CHECK_FALSE(absent(d, t / "proj/common/opt.h"));
}

TEST_CASE("keys: include directories in --cxx-flag are guarded like -I's, in the compiler's order",
          "[keys][search_order]") {
    Fixture f;
    for (const char* d : {"q", "i", "a", "b", "s", "after", "cpath"})
        fs::create_directories(f.tmp / d);
    write_file(f.tmp / "after/x.h", "");
    f.in.flags.include_dirs = {(f.tmp / "i").string()};
    f.in.flags.cxx_flags = {"-I",
                            (f.tmp / "a").string(),
                            "-I" + (f.tmp / "b").string(),
                            "-iquote",
                            (f.tmp / "q").string(),
                            "-isystem",
                            (f.tmp / "s").string(),
                            "-idirafter",
                            (f.tmp / "after").string()};
    f.in.env.include_dirs = {f.tmp / "cpath"};
    f.source("#include \"x.h\"\n");
    auto d = f.classify({(f.tmp / "after/x.h").string()});
    CHECK(keyed(d, f.tmp / "after/x.h"));
    for (const char* before : {"src", "q", "i", "a", "b", "cpath", "s"}) {
        INFO(before);
        CHECK(absent(d, f.tmp / before / "x.h"));
    }
    CHECK(absent(d, "/usr/include/x.h"));
}

TEST_CASE("keys: an angled __has_include skips the -iquote directories", "[keys][search_order]") {
    Fixture f;
    write_file(f.tmp / "q/opt.h", "");  // found only by a quoted include
    fs::create_directories(f.tmp / "a");
    f.in.flags.cxx_flags = {"-iquote", (f.tmp / "q").string(), "-I", (f.tmp / "a").string()};
    f.source("#if __has_include(<opt.h>)\n#endif\n");
    auto d = f.classify({});
    CHECK_FALSE(keyed(d, f.tmp / "q/opt.h"));
    CHECK(absent(d, f.tmp / "a/opt.h"));  // searched, found nothing: must stay so
}

TEST_CASE("search order: each compiler's chains as it searches them", "[keys][search_order]") {
    using Dirs = std::vector<fs::path>;
    BuildInputs in;
    in.files = {SourceFile{"/w/k.cpp", false, "", {}}, SourceFile{"/w/k.cu", true, "", {}}};
    const std::string multiarch = "x86_64-linux-gnu";
    in.flags.include_dirs = {"/w/i"};
    in.flags.xla_include = "/w/xla";
    in.env.include_dirs = {"/w/cpath"};
    in.env.system_include_dirs = {"/w/cplus"};
    const Dirs system = {"/usr/local/include", "/usr/include/x86_64-linux-gnu", "/usr/include"};
    auto with_system = [&](Dirs head, const Dirs& tail) {
        head.insert(head.end(), system.begin(), system.end());
        head.insert(head.end(), tail.begin(), tail.end());
        return head;
    };
    PhysicalPaths paths;
    SECTION("the host compiler's for .cpp, nvcc's for .cu, -Xcompiler's before bekc's -I") {
        in.flags.cxx_flags = {"-isystem", "/w/cs",      "-I",    "/w/ca",  "-iquote",
                              "/w/cq",    "-idirafter", "/w/cd", "-I/w/cb"};
        in.flags.cuda_flags = {"-I", "/w/na", "-isystem=/w/ns", "-Xcompiler",
                               "-I/w/xa,-isystem,/w/xs,-iquote,/w/xq,-idirafter,/w/xd"};
        auto orders = search_orders(in, multiarch, "/cache/rt", paths);
        REQUIRE(orders.size() == 2);
        CHECK_FALSE(orders[0].cuda);
        CHECK(orders[0].dirs == with_system({"/w/cq", "/w/i", "/cache/rt", "/w/xla", "/w/ca",
                                             "/w/cb", "/w/cpath", "/w/cs", "/w/cplus"},
                                            {"/w/cd"}));
        CHECK(orders[0].quote_only == 1);
        CHECK(orders[1].cuda);
        CHECK(orders[1].dirs == with_system({"/w/xq", "/w/xa", "/w/i", "/cache/rt", "/w/xla",
                                             "/w/na", "/w/cpath", "/w/xs", "/w/ns", "/w/cplus"},
                                            {"/w/xd"}));
        CHECK(orders[1].quote_only == 1);
    }
    SECTION("a directory named twice counts where it is searched last") {
        in.files.pop_back();
        in.flags.cxx_flags = {"-I/usr/include", "-iquote", "/w/i/", "-I", "/w/x/../i"};
        auto orders = search_orders(in, multiarch, "/cache/rt", paths);
        REQUIRE(orders.size() == 1);
        CHECK(orders[0].dirs ==
              with_system({"/cache/rt", "/w/xla", "/w/i", "/w/cpath", "/w/cplus"}, {}));
        CHECK(orders[0].quote_only == 0);
    }
}
