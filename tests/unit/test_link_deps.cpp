// The linker's dependency list: asked for by the plan (lib/plan/compile_plan)
// and read back from what GNU ld and lld write.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "../helpers/plan_unit.hpp"
#include "../helpers/temp_dir.hpp"
#include "plan/compile_plan.hpp"
#include "prep/build_inputs.hpp"
#include "toolchain/link_search.hpp"

using namespace bekc;
using Argv = std::vector<std::string>;

namespace {

using test::index_of;
using test::kPlanBuild;

// Every shape links with user ldflags and asks for the linker's dependency list.
PlanRequest link_request(std::vector<PlanUnit> units) {
    PlanRequest r = test::plan_request(std::move(units));
    r.flags.ldflags = {"-L/user/lib", "-lfoo"};
    r.link_depfile = kPlanBuild + "/link.d";
    return r;
}

PlanUnit link_unit(const std::string& file, bool cuda) {
    return test::plan_unit(kPlanBuild, file, cuda);
}

const std::string kAsk = "--dependency-file=" + kPlanBuild + "/link.d";

std::vector<std::string> written(const std::vector<LinkerDependency>& deps) {
    std::vector<std::string> out;
    for (const auto& d : deps) out.push_back(d.as_written);
    return out;
}
std::vector<std::string> unescaped(const std::vector<LinkerDependency>& deps) {
    std::vector<std::string> out;
    for (const auto& d : deps) out.push_back(d.unescaped);
    return out;
}

}  // namespace

TEST_CASE("link deps: only the link asks the linker, after the link flags", "[plan][link_deps]") {
    for (auto units : {std::vector<PlanUnit>{link_unit("0_k.bekc.cpp", false)},
                       std::vector<PlanUnit>{link_unit("0_k.bekc.cu", true)},
                       std::vector<PlanUnit>{link_unit("0_a.bekc.cu", true),
                                             link_unit("1_b.bekc.cpp", false)}}) {
        BuildPlan plan = make_build_plan(link_request(units));
        for (const auto& s : plan.compiles) CHECK(index_of(s.command.argv, kAsk) == -1);
        CHECK(index_of(plan.handlers.command.argv, kAsk) == -1);
        long ask = index_of(plan.link.argv, kAsk);
        REQUIRE(ask > 0);
        CHECK(plan.link.argv[ask - 1] == "-Xlinker");
        CHECK(ask > index_of(plan.link.argv, "-lfoo"));
        CHECK(plan.link_depfile == fs::path(kPlanBuild + "/link.d"));
        CHECK(std::count(plan.link.outputs.begin(), plan.link.outputs.end(),
                         kPlanBuild + "/link.d") == 1);
    }
}

TEST_CASE("link deps: not asked for when the request has no path", "[plan][link_deps]") {
    PlanRequest r = link_request({link_unit("0_k.bekc.cpp", false)});
    r.link_depfile.reset();
    BuildPlan plan = make_build_plan(r);
    CHECK_FALSE(plan.link_depfile.has_value());
    for (const auto& a : plan.link.argv) CHECK(a.find("--dependency-file") == std::string::npos);
}

TEST_CASE("link deps: GNU ld's file, one path per line, spaces unescaped", "[depfile][link_deps]") {
    // As ld 2.40 writes it (a temporary object, a library in a directory with
    // a space, phony rules after a blank line).
    std::string text =
        "/b/libk.so: \\\n"
        "  /usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o \\\n"
        "  /tmp/ccRJc2pr.o \\\n"
        "  /tmp/envt/lib dir/libfoo.a \\\n"
        "  /usr/lib/gcc/x86_64-linux-gnu/12/crtendS.o\n"
        "\n"
        "/usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o:\n"
        "\n"
        "/tmp/envt/lib dir/libfoo.a:\n";
    auto deps = parse_linker_depfile(text);
    CHECK(written(deps) == Argv{"/usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o", "/tmp/ccRJc2pr.o",
                                "/tmp/envt/lib dir/libfoo.a",
                                "/usr/lib/gcc/x86_64-linux-gnu/12/crtendS.o"});
    CHECK(unescaped(deps) == written(deps));
}

TEST_CASE("link deps: lld's file, escaped like a compiler's", "[depfile][link_deps]") {
    std::string text =
        "/b/libk.so: \\\n /lib dir/libfoo.a \\\n /x/a\\#b$$c.o\n\n/lib\\ dir/libfoo.a:\n";
    auto deps = parse_linker_depfile(text);
    REQUIRE(deps.size() == 2);
    CHECK(deps[0].as_written == "/lib dir/libfoo.a");
    CHECK(deps[1].as_written == "/x/a\\#b$$c.o");
    CHECK(deps[1].unescaped == "/x/a#b$c.o");
    auto escaped = parse_linker_depfile("o: \\\n /lib\\ dir/x.a\n");
    REQUIRE(escaped.size() == 1);
    CHECK(escaped[0].unescaped == "/lib dir/x.a");
}

TEST_CASE("link deps: CRLF, no trailing newline, nothing read", "[depfile][link_deps]") {
    CHECK(written(parse_linker_depfile("o: \\\r\n  /a.o \\\r\n  /b.a\r\n")) ==
          Argv{"/a.o", "/b.a"});
    CHECK(written(parse_linker_depfile("o: \\\n  /a.o")) == Argv{"/a.o"});
    CHECK(parse_linker_depfile("o:\n").empty());
    CHECK(parse_linker_depfile("").empty());
    CHECK(parse_linker_depfile("not a rule \\\n /a\n").empty());
}

// ------------------------------------------------------------ device code in link inputs

TEST_CASE("a pip toolkit's lib/ is where nvcc finds its -l libraries", "[link][dlink]") {
    // nvcc.profile of the nvidia-cuda-nvcc wheel: -L$(TOP)/lib/stubs -L$(TOP)/lib.
    test::TempDir tmp;
    const fs::path root = tmp / "site-packages/nvidia/cu13";
    test::write_file(root / "bin/nvcc", "fake nvcc");
    test::write_file(root / "lib/libnvrtc.so",
                     "\x7f"
                     "ELF\x02\x01\x01");
    test::write_file(root / "lib/stubs/libcuda.so",
                     "\x7f"
                     "ELF\x02\x01\x01");
    test::write_file(root / "lib/libcudadevrt.a", "!<arch>\n");
    BuildInputs in;
    in.nvcc = Tool{root / "bin/nvcc", root / "bin/nvcc", 1, 2};
    auto opaque = [&](std::vector<std::string> ldflags) {
        in.flags.ldflags = std::move(ldflags);
        return link_reads_opaque_code(in.flags, in.env, in.nvcc, "");
    };
    CHECK_FALSE(opaque({"-lnvrtc"}));  // a shared library of the toolkit: no device link
    CHECK_FALSE(opaque({"-lcuda"}));   // the driver's stub
    CHECK(opaque({"-lcudadevrt"}));    // an archive may hold device code
}

TEST_CASE("link inputs that may hold device code keep nvcc's device link", "[link][dlink]") {
    test::TempDir tmp;
    const fs::path cuda = tmp / "cuda";
    test::write_file(cuda / "bin/nvcc", "fake nvcc");
    const std::string elf =
        "\x7f"
        "ELF\x02\x01\x01";  // what a shared library starts with
    test::write_file(cuda / "targets/x86_64-linux/lib/libcublas.so", elf);
    test::write_file(cuda / "targets/x86_64-linux/lib/libcufft_static.a", "!<arch>\n");
    test::write_file(tmp / "lib/libkern.a", "!<arch>\n");
    test::write_file(tmp / "lib/libshared.so", elf);
    test::write_file(tmp / "lib/libboth.so", elf);
    test::write_file(tmp / "lib/libboth.a", "!<arch>\n");
    // A linker script in a shared library's place, as Debian's libc.so is.
    test::write_file(tmp / "lib/libscript.so", "/* GNU ld script */\nINPUT(libkern.a)\n");
    test::write_file(tmp / "obj/extra.o", elf);
    test::write_file(tmp / "obj/libx.so.1", elf);
    fs::create_directories(tmp / "rpath");
    BuildInputs in;
    in.nvcc = Tool{cuda / "bin/nvcc", cuda / "bin/nvcc", 1, 2};
    const std::string L = "-L" + (tmp / "lib").string();
    auto opaque = [&](std::vector<std::string> ldflags, std::vector<std::string> linker_args = {},
                      std::vector<std::pair<std::string, std::string>> env = {}) {
        in.flags.ldflags = std::move(ldflags);
        in.flags.linker_args = std::move(linker_args);
        in.env.values = std::move(env);
        return link_reads_opaque_code(in.flags, in.env, in.nvcc, "");
    };
    // Shared libraries, found where ld (or nvcc's own -L) finds them; a
    // directory taken apart from -Wl,-rpath,DIR is no input.
    CHECK_FALSE(opaque({}));
    CHECK_FALSE(opaque({"-lcublas"}));
    CHECK_FALSE(opaque({L, "-lshared", "-lboth"}));  // the .so comes first in a directory
    CHECK_FALSE(opaque({"-Wl,-rpath," + (tmp / "rpath").string()}));
    CHECK_FALSE(opaque({(tmp / "obj/libx.so.1").string()}));
    CHECK_FALSE(opaque({"-Wl,--as-needed"}, {"--no-undefined"}));
    CHECK_FALSE(opaque({}, {}, {{"NVCC_APPEND_FLAGS", "-lineinfo --expt-relaxed-constexpr"}}));
    // Archives, objects and what bekc cannot find or see.
    CHECK(opaque({L, "-lkern"}));            // only libkern.a there
    CHECK(opaque({"-lcufft_static"}));       // the toolkit's archive
    CHECK(opaque({L, "-l:libshared.a"}));    // not there: nvcc may know better
    CHECK(opaque({"-lnowhere_bekc_test"}));  // found nowhere bekc looks
    CHECK(opaque({L, "-lscript"}));          // a linker script may name anything
    CHECK(opaque({(tmp / "lib/libscript.so").string()}));
    CHECK(opaque({(tmp / "obj/extra.o").string()}));  // an object
    CHECK(opaque({"-Wl,--whole-archive," + (tmp / "lib/libkern.a").string()}));
    CHECK(opaque({}, {(tmp / "lib/libkern.a").string()}));
    for (const char* s : {"-static", "-Wl,-Bstatic", "-Wl,-dn"}) CHECK(opaque({L, s, "-lshared"}));
    CHECK(opaque({}, {"-Bstatic"}));
    CHECK(opaque({"-Wl,@" + (tmp / "args.txt").string()}));
    // nvcc link options from the environment.
    CHECK(opaque({}, {}, {{"NVCC_APPEND_FLAGS", "-rdc=true"}}));
    CHECK(opaque({}, {}, {{"NVCC_PREPEND_FLAGS", "-lkern"}}));
    CHECK(opaque({}, {}, {{"LIBRARIES", "-lkern"}}));
    CHECK(opaque({}, {}, {{"NVLINK_FLAGS", "-v"}}));
    CHECK_FALSE(opaque({}, {}, {{"LIBRARIES", " "}}));
}
