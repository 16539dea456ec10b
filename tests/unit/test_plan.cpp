// The compile plan and the build graph (lib/plan/compile_plan, build_graph):
// which commands a build runs, in which order, with which arguments, and how
// compiler-written depfiles are read back. Both are pure, so these tests
// need no compiler.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "../helpers/plan_unit.hpp"
#include "plan/build_graph.hpp"

using namespace bekc;
using Argv = std::vector<std::string>;

namespace {

const std::string& kNvcc = test::kPlanNvcc;
const std::string& kCxx = test::kPlanCxx;
const std::string& kBuild = test::kPlanBuild;
const std::string& kRuntime = test::kPlanRuntime;
using test::index_of;

PlanRequest request(std::vector<PlanUnit> units, std::vector<Arch> archs = {Arch{90, ""}}) {
    return test::plan_request(std::move(units), std::move(archs));
}

PlanUnit unit(const std::string& file, bool cuda) {
    return test::plan_unit(kBuild, file, cuda);
}
PlanUnit cu(const std::string& stem) {
    return unit(stem + ".bekc.cu", true);
}
PlanUnit cpp(const std::string& stem) {
    return unit(stem + ".bekc.cpp", false);
}

bool has(const Argv& a, const std::string& s) {
    return std::find(a.begin(), a.end(), s) != a.end();
}

// `flag` immediately followed by `value`.
bool has_pair(const Argv& a, const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < a.size(); ++i)
        if (a[i] == flag && a[i + 1] == value) return true;
    return false;
}

// `seq` appears contiguously in `a`.
bool has_sequence(const Argv& a, const Argv& seq) {
    return std::search(a.begin(), a.end(), seq.begin(), seq.end()) != a.end();
}

std::string joined(const Argv& a) {
    std::string s;
    for (const auto& x : a) s += "[" + x + "] ";
    return s;
}

}  // namespace

// ---------------------------------------------------------------- plan shapes

TEST_CASE("plan: one .cpp input compiles beside the entry points, then the host compiler links",
          "[plan]") {
    BuildPlan plan = make_build_plan(request({cpp("0_k")}));
    REQUIRE(plan.compiles.size() == 1);
    const Argv& a = plan.compiles[0].command.argv;
    INFO(joined(a));
    CHECK(a.at(0) == kCxx);
    CHECK(has(a, "-c"));
    CHECK_FALSE(has(a, "-shared"));
    CHECK(has(a, "-fPIC"));
    CHECK(has(a, "-std=c++17"));
    CHECK(has(a, "-O3"));
    CHECK(has(a, "-I" + kRuntime));
    CHECK(has(a, kBuild + "/0_k.bekc.cpp"));
    CHECK(has_pair(a, "-o", kBuild + "/0_k.bekc.cpp.o"));
    // Nothing of nvcc's.
    CHECK_FALSE(has(a, "-gencode"));
    CHECK_FALSE(has(a, "-ccbin"));
    CHECK_FALSE(has(a, "-Xcompiler"));
    CHECK_FALSE(has(a, kNvcc));
    const Argv& l = plan.link.argv;
    INFO(joined(l));
    CHECK(l.at(0) == kCxx);
    CHECK(has(l, "-shared"));
    CHECK(has_pair(l, "-o", kBuild + "/libmod.so"));
    CHECK(plan.link.inputs ==
          std::vector<std::string>{kBuild + "/0_k.bekc.cpp.o", kBuild + "/bekc_handlers.cpp.o"});
}

TEST_CASE("plan: the entry points compile with bekc's flags only, none of the user's", "[plan]") {
    PlanRequest r = request({cu("0_a"), cpp("1_b")});
    r.flags.opt_level = 0;
    r.flags.include_dirs = {"/user/inc"};
    r.flags.defines = {"FOO"};
    r.flags.cxx_flags = {"-Wall"};
    r.flags.cxx_std = "c++20";
    BuildPlan plan = make_build_plan(r);
    const Command& h = plan.handlers.command;
    INFO(joined(h.argv));
    CHECK(h.argv.at(0) == kCxx);
    CHECK(has_sequence(h.argv, {"-std=c++20", "-O2", "-fPIC", "-fvisibility=hidden"}));
    CHECK(has(h.argv, "-I" + kRuntime));
    CHECK(has_pair(h.argv, "-MF", kBuild + "/bekc_handlers.cpp.d"));
    CHECK(has_pair(h.argv, "-c", kBuild + "/bekc_handlers.cpp"));
    CHECK(has_pair(h.argv, "-o", kBuild + "/bekc_handlers.cpp.o"));
    for (const char* user : {"-I/user/inc", "-DFOO", "-Wall", "-O0"})
        CHECK_FALSE(has(h.argv, user));
    CHECK(h.slots == 1);
    CHECK(plan.handlers.depfile == kBuild + "/bekc_handlers.cpp.d");
}

TEST_CASE("plan: every compile writes a depfile next to its wrapper", "[plan]") {
    BuildPlan plan = make_build_plan(request({cu("0_a"), cpp("1_b")}));
    REQUIRE(plan.compiles.size() == 2);
    for (const auto& s : plan.compiles) {
        const Argv& a = s.command.argv;
        INFO(joined(a));
        CHECK(has(a, "-MD"));
        CHECK(has_pair(a, "-MF", s.depfile.string()));
    }
    CHECK(plan.compiles[0].depfile == kBuild + "/0_a.bekc.cu.d");
    CHECK(plan.compiles[1].depfile == kBuild + "/1_b.bekc.cpp.d");
}

TEST_CASE("plan: one .cu input is an nvcc -c with the host compiler as -ccbin, then an nvcc link",
          "[plan]") {
    auto archs = std::vector<Arch>{{80, ""}, {90, ""}};
    BuildPlan plan = make_build_plan(request({cu("0_k")}, archs));
    REQUIRE(plan.compiles.size() == 1);
    const Argv& a = plan.compiles[0].command.argv;
    INFO(joined(a));
    CHECK(a.at(0) == kNvcc);
    CHECK(has_pair(a, "-ccbin", kCxx));
    CHECK(has(a, "-c"));
    CHECK_FALSE(has(a, "-shared"));
    long xc = index_of(a, "-Xcompiler");
    REQUIRE(xc >= 0);
    CHECK(a.at(xc + 1).find("-fPIC") != std::string::npos);
    CHECK(has_sequence(a, gencode_flags(archs)));
    CHECK(has_sequence(a, {"-gencode", "arch=compute_90,code=compute_90"}));
    CHECK(has(a, "-std=c++17"));
    CHECK(has(a, "-O3"));
    CHECK(has(a, "-I" + kRuntime));
    CHECK(has_pair(a, "-o", kBuild + "/0_k.bekc.cu.o"));
    CHECK(plan.link.argv.at(0) == kNvcc);
    CHECK(has_pair(plan.link.argv, "-ccbin", kCxx));
    CHECK(has_pair(plan.link.argv, "-o", kBuild + "/libmod.so"));
}

TEST_CASE("plan: mixed .cu and .cpp compile separately, then nvcc links", "[plan]") {
    BuildPlan plan = make_build_plan(request({cu("0_a"), cpp("1_b")}));
    REQUIRE(plan.compiles.size() == 2);
    const Argv& nv = plan.compiles[0].command.argv;
    const Argv& cx = plan.compiles[1].command.argv;
    INFO(joined(nv) << "\n" << joined(cx));
    CHECK(nv.at(0) == kNvcc);
    CHECK(cx.at(0) == kCxx);
    for (const Argv* a : {&nv, &cx}) {
        CHECK(has(*a, "-c"));
        CHECK_FALSE(has(*a, "-shared"));
    }
    CHECK(has_pair(nv, "-o", kBuild + "/0_a.bekc.cu.o"));
    CHECK(has_pair(cx, "-o", kBuild + "/1_b.bekc.cpp.o"));
    CHECK(has(cx, "-fPIC"));
    CHECK_FALSE(has(cx, "-gencode"));

    const Argv& l = plan.link.argv;
    INFO(joined(l));
    CHECK(l.at(0) == kNvcc);
    CHECK(has(l, "-shared"));
    CHECK(has_pair(l, "-ccbin", kCxx));
    long o1 = index_of(l, kBuild + "/0_a.bekc.cu.o");
    long o2 = index_of(l, kBuild + "/1_b.bekc.cpp.o");
    CHECK(o1 >= 0);
    CHECK(o2 > o1);
    CHECK(has_pair(l, "-o", kBuild + "/libmod.so"));
    CHECK(plan.link.inputs == std::vector<std::string>{kBuild + "/0_a.bekc.cu.o",
                                                       kBuild + "/1_b.bekc.cpp.o",
                                                       kBuild + "/bekc_handlers.cpp.o"});
    CHECK(plan.link.outputs == std::vector<std::string>{kBuild + "/libmod.so"});
}

TEST_CASE("plan: several .cpp inputs link with the host compiler, no nvcc anywhere", "[plan]") {
    BuildPlan plan = make_build_plan(request({cpp("0_a"), cpp("1_b"), cpp("2_c")}));
    REQUIRE(plan.compiles.size() == 3);
    CHECK(plan.link.argv.at(0) == kCxx);
    CHECK(has(plan.link.argv, "-shared"));
    for (const auto& s : plan.compiles) CHECK(s.command.argv.at(0) == kCxx);
    // Each compile writes its own object: they can run in parallel.
    std::vector<std::string> outs;
    for (const auto& s : plan.compiles)
        outs.insert(outs.end(), s.command.outputs.begin(), s.command.outputs.end());
    std::sort(outs.begin(), outs.end());
    CHECK(std::adjacent_find(outs.begin(), outs.end()) == outs.end());
}

TEST_CASE("plan: several .cu inputs get the same arch flags each", "[plan]") {
    auto archs = std::vector<Arch>{{80, ""}, {90, "a"}};
    BuildPlan plan = make_build_plan(request({cu("0_a"), cu("1_b")}, archs));
    REQUIRE(plan.compiles.size() == 2);
    for (const auto& s : plan.compiles) CHECK(has_sequence(s.command.argv, gencode_flags(archs)));
    CHECK(plan.link.argv.at(0) == kNvcc);
}

// ---------------------------------------------------------------------- flags

TEST_CASE("plan: -O0..-O3 reach both compilers", "[plan][flags]") {
    for (int level = 0; level <= 3; ++level) {
        PlanRequest r = request({cu("0_a"), cpp("1_b")});
        r.flags.opt_level = level;
        BuildPlan plan = make_build_plan(r);
        std::string want = "-O" + std::to_string(level);
        for (const auto& s : plan.compiles) {
            INFO(joined(s.command.argv));
            CHECK(has(s.command.argv, want));
            for (int other = 0; other <= 3; ++other)
                if (other != level) CHECK_FALSE(has(s.command.argv, "-O" + std::to_string(other)));
        }
    }
}

TEST_CASE("plan: --fast-math is --use_fast_math for nvcc and -ffast-math for C++",
          "[plan][flags]") {
    PlanRequest r = request({cu("0_a"), cpp("1_b")});
    BuildPlan off = make_build_plan(r);
    CHECK_FALSE(has(off.compiles[0].command.argv, "--use_fast_math"));
    CHECK_FALSE(has(off.compiles[1].command.argv, "-ffast-math"));
    r.flags.fast_math = true;
    BuildPlan on = make_build_plan(r);
    CHECK(has(on.compiles[0].command.argv, "--use_fast_math"));
    CHECK_FALSE(has(on.compiles[0].command.argv, "-ffast-math"));
    CHECK(has(on.compiles[1].command.argv, "-ffast-math"));
    CHECK_FALSE(has(on.compiles[1].command.argv, "--use_fast_math"));
}

TEST_CASE("plan: include dirs and defines reach both compilers, in order", "[plan][flags]") {
    PlanRequest r = request({cu("0_a"), cpp("1_b")});
    r.flags.include_dirs = {"/inc/first", "/inc/with space"};
    r.flags.defines = {"FOO", "BAR=1", "MSG=\"hello world\""};
    BuildPlan plan = make_build_plan(r);
    for (const auto& s : plan.compiles) {
        const Argv& a = s.command.argv;
        INFO(joined(a));
        long first = index_of(a, "-I/inc/first");
        long second = index_of(a, "-I/inc/with space");  // one argument, no quoting
        CHECK(first >= 0);
        CHECK(second > first);
        CHECK(has(a, "-DFOO"));
        CHECK(has(a, "-DBAR=1"));
        CHECK(has(a, "-DMSG=\"hello world\""));
        CHECK(index_of(a, "-DFOO") < index_of(a, "-DBAR=1"));
    }
    // Preprocessor flags are for compiles, not for the link.
    CHECK_FALSE(has(plan.link.argv, "-DFOO"));
}

TEST_CASE("plan: --cuda-flag goes to nvcc compiles only, --cxx-flag to C++ compiles only",
          "[plan][flags]") {
    PlanRequest r = request({cu("0_a"), cpp("1_b")});
    r.flags.cuda_flags = {"-lineinfo", "--expt-relaxed-constexpr"};
    r.flags.cxx_flags = {"-Wall", "-march=x86-64-v2"};
    BuildPlan plan = make_build_plan(r);
    const Argv& nv = plan.compiles[0].command.argv;
    const Argv& cx = plan.compiles[1].command.argv;
    INFO(joined(nv) << "\n" << joined(cx));
    CHECK(has_sequence(nv, {"-lineinfo", "--expt-relaxed-constexpr"}));
    CHECK_FALSE(has(nv, "-Wall"));
    CHECK(has_sequence(cx, {"-Wall", "-march=x86-64-v2"}));
    CHECK_FALSE(has(cx, "-lineinfo"));
    CHECK_FALSE(has(plan.link.argv, "-lineinfo"));
    CHECK_FALSE(has(plan.link.argv, "-Wall"));
}

TEST_CASE("plan: nvcc's front ends name a CUDA unit by its source path, before the user's flags",
          "[plan][flags]") {
    PlanUnit named = cu("0_a");
    named.source_path = "/src/0_a.bekc.cu";
    PlanRequest r = request({named, cu("1_b"), cpp("2_c")});
    r.flags.cuda_flags = {"-lineinfo"};
    BuildPlan plan = make_build_plan(r);
    const Argv& a = plan.compiles[0].command.argv;
    INFO(joined(a));
    CHECK(has_sequence(a, {"-Xcudafe", "--orig_src_path_name=/src/0_a.bekc.cu", "-lineinfo"}));
    // Without one, nvcc's own.
    CHECK_FALSE(has(plan.compiles[1].command.argv, "-Xcudafe"));
    CHECK_FALSE(has(plan.compiles[2].command.argv, "-Xcudafe"));
}

TEST_CASE("plan: --ldflag goes to the link, after the objects", "[plan][flags]") {
    PlanRequest r = request({cu("0_a"), cpp("1_b")});
    r.flags.ldflags = {"-L/opt/lib", "-lcublas"};
    BuildPlan plan = make_build_plan(r);
    for (const auto& s : plan.compiles) CHECK_FALSE(has(s.command.argv, "-lcublas"));
    const Argv& l = plan.link.argv;
    INFO(joined(l));
    CHECK(has_sequence(l, {"-L/opt/lib", "-lcublas"}));
    // Libraries after the objects that need them, or the linker drops them.
    CHECK(index_of(l, "-lcublas") > index_of(l, kBuild + "/1_b.bekc.cpp.o"));
}

TEST_CASE("plan: a pip toolkit's directories reach nvcc's compiles and its link, after the user's",
          "[plan][flags]") {
    PlanRequest r = request({cu("0_a"), cpp("1_b")});
    r.flags.include_dirs = {"/src/inc"};
    r.flags.ldflags = {"-L/opt/lib", "-lcublas"};
    r.toolkit_includes = {"/venv/site/nvidia/cu13/include"};
    r.toolkit_system_includes = {"/venv/site/nvidia/cu13/include/cccl"};
    r.toolkit_libs = {"/venv/site/nvidia/cu13/lib/stubs", "/venv/site/nvidia/cu13/lib"};
    BuildPlan plan = make_build_plan(r);
    const Argv& nv = plan.compiles[0].command.argv;
    const Argv& cx = plan.compiles[1].command.argv;
    INFO(joined(nv) << "\n" << joined(cx));
    CHECK(index_of(nv, "-I/venv/site/nvidia/cu13/include") > index_of(nv, "-I/src/inc"));
    CHECK(has_pair(nv, "-isystem", "/venv/site/nvidia/cu13/include/cccl"));
    CHECK_FALSE(has(cx, "-I/venv/site/nvidia/cu13/include"));
    CHECK_FALSE(has(cx, "-isystem"));
    const Argv& l = plan.link.argv;
    INFO(joined(l));
    CHECK(has_sequence(l, {"-L/venv/site/nvidia/cu13/lib/stubs", "-L/venv/site/nvidia/cu13/lib"}));
    CHECK(index_of(l, "-L/venv/site/nvidia/cu13/lib") > index_of(l, "-L/opt/lib"));
    // A C++-only library links with the host compiler: no toolkit there.
    PlanRequest cpu = request({cpp("0_b")});
    cpu.toolkit_libs = r.toolkit_libs;
    CHECK_FALSE(has(make_build_plan(cpu).link.argv, "-L/venv/site/nvidia/cu13/lib"));
}

TEST_CASE("plan: --ldflag reaches a single input's link, after the objects", "[plan][flags]") {
    for (PlanUnit u : {cu("0_k"), cpp("0_k")}) {
        PlanRequest r = request({u});
        r.flags.ldflags = {"-lm"};
        BuildPlan plan = make_build_plan(r);
        CHECK_FALSE(has(plan.compiles.at(0).command.argv, "-lm"));
        const Argv& l = plan.link.argv;
        INFO(joined(l));
        CHECK(index_of(l, "-lm") > index_of(l, u.wrapper.string() + ".o"));
        CHECK(index_of(l, "-lm") > index_of(l, kBuild + "/bekc_handlers.cpp.o"));
    }
}

TEST_CASE("plan: the handler support object is linked into the library, once", "[plan]") {
    const std::string rt = "/cache/runtime/abc/obj/0123/bekc_rt.o";
    for (auto units :
         {std::vector<PlanUnit>{cu("0_k")}, std::vector<PlanUnit>{cu("0_a"), cpp("1_b")}}) {
        PlanRequest r = request(units);
        r.runtime_object = rt;
        BuildPlan plan = make_build_plan(r);
        for (const auto& s : plan.compiles) CHECK_FALSE(has(s.command.argv, rt));
        CHECK_FALSE(has(plan.handlers.command.argv, rt));
        const Argv& l = plan.link.argv;
        INFO(joined(l));
        CHECK(index_of(l, rt) > index_of(l, units.back().wrapper.string() + ".o"));
        CHECK(index_of(l, rt) > index_of(l, kBuild + "/bekc_handlers.cpp.o"));
        CHECK(std::count(l.begin(), l.end(), rt) == 1);
        CHECK(has(plan.link.inputs, rt));
    }
}

TEST_CASE("plan: --std reaches both compilers", "[plan][flags]") {
    PlanRequest r = request({cu("0_a"), cpp("1_b")});
    r.flags.cxx_std = "c++20";
    BuildPlan plan = make_build_plan(r);
    for (const auto& s : plan.compiles) {
        CHECK(has(s.command.argv, "-std=c++20"));
        CHECK_FALSE(has(s.command.argv, "-std=c++17"));
    }
}

TEST_CASE("plan: the runtime include dir is always on the include path", "[plan][flags]") {
    PlanRequest r = request({cu("0_a"), cpp("1_b")});
    r.flags.include_dirs = {"/user/inc"};
    BuildPlan plan = make_build_plan(r);
    for (const auto& s : plan.compiles) CHECK(has(s.command.argv, "-I" + kRuntime));
}

// ------------------------------------------------------------------- depfiles

TEST_CASE("depfile: g++ style, one line", "[depfile]") {
    CHECK(parse_depfile("k.o: /src/k.cpp /inc/a.h\n") == Argv{"/src/k.cpp", "/inc/a.h"});
}

TEST_CASE("depfile: continuation lines", "[depfile]") {
    std::string text = "libk.so: /b/0_k.bekc.cpp \\\n /src/k.cpp \\\n  /inc/a.h \\\n  /inc/b.h\n";
    CHECK(parse_depfile(text) == Argv{"/b/0_k.bekc.cpp", "/src/k.cpp", "/inc/a.h", "/inc/b.h"});
}

TEST_CASE("depfile: CRLF continuation lines", "[depfile]") {
    CHECK(parse_depfile("k.o: /a.h \\\r\n /b.h\r\n") == Argv{"/a.h", "/b.h"});
}

TEST_CASE("depfile: nvcc style, with a space before the colon", "[depfile]") {
    std::string text =
        "0_k.bekc.cu.o : /b/0_k.bekc.cu \\\n"
        "    /usr/include/stdc-predef.h \\\n"
        "    /usr/local/cuda/bin/../targets/x86_64-linux/include/cuda_runtime.h \\\n"
        "    /src/k.cu\n";
    CHECK(parse_depfile(text) ==
          Argv{"/b/0_k.bekc.cu", "/usr/include/stdc-predef.h",
               "/usr/local/cuda/bin/../targets/x86_64-linux/include/cuda_runtime.h", "/src/k.cu"});
}

TEST_CASE("depfile: escaped spaces, hashes and dollars", "[depfile]") {
    // g++ writes `\ `, `\#` and `$$`.
    CHECK(parse_depfile("k.o: /my\\ dir/x\\#1.h /a$$b/c.h\n") == Argv{"/my dir/x#1.h", "/a$b/c.h"});
    // nvcc escapes spaces only.
    CHECK(parse_depfile("k.o : /sp\\ ace/x$y#z.h\n") == Argv{"/sp ace/x$y#z.h"});
}

TEST_CASE("depfile: non-ASCII paths pass through unchanged", "[depfile]") {
    CHECK(parse_depfile("k.o: /src/n\xc3\xa4me/\xe6\xa0\xb8.h\n") ==
          Argv{"/src/n\xc3\xa4me/\xe6\xa0\xb8.h"});
}

TEST_CASE("depfile: a target path with a colon inside", "[depfile]") {
    CHECK(parse_depfile("/tmp/a:b/k.o: /src/k.cpp\n") == Argv{"/src/k.cpp"});
}

TEST_CASE("depfile: phony rules from -MP do not add prerequisites", "[depfile]") {
    std::string text = "k.o: /src/k.cpp /inc/a.h \\\n /inc/b.h\n\n/inc/a.h:\n\n/inc/b.h:\n";
    CHECK(parse_depfile(text) == Argv{"/src/k.cpp", "/inc/a.h", "/inc/b.h"});
}

TEST_CASE("depfile: empty or target-only input gives no prerequisites", "[depfile]") {
    CHECK(parse_depfile("").empty());
    CHECK(parse_depfile("k.o:\n").empty());
    CHECK(parse_depfile("garbage without a rule").empty());
}

TEST_CASE("depfile: no trailing newline", "[depfile]") {
    CHECK(parse_depfile("k.o: /a.h /b.h") == Argv{"/a.h", "/b.h"});
}

// ---------------------------------------------------------------- the build graph

namespace {

GraphRequest graph_request(std::vector<PlanUnit> units) {
    GraphRequest g;
    g.plan = request(std::move(units));
    g.plan.runtime_object = "/cache/runtime/abc/obj/def/bekc_rt.o";
    for (const auto& u : g.plan.units) g.wrapper_texts.push_back("// " + u.wrapper.string());
    g.handlers_text = "// entry points";
    return g;
}

std::vector<StepKind> kinds(const BuildGraph& g) {
    std::vector<StepKind> out;
    for (const auto& s : g.steps) out.push_back(s.kind);
    return out;
}

}  // namespace

TEST_CASE("graph: every step comes after what it reads", "[plan][graph]") {
    GraphRequest r = graph_request({cu("0_a"), cpp("1_b")});
    r.write_runtime_headers = true;
    r.compile_runtime_object = kBuild + "/bekc_rt.o";
    BuildGraph g = make_build_graph(r);
    using K = StepKind;
    REQUIRE(kinds(g) == std::vector<K>{K::WriteWrapper, K::WriteWrapper, K::WriteWrapper,
                                       K::RuntimeHeaders, K::RuntimeObject, K::Compile, K::Compile,
                                       K::Compile, K::Link});
    CHECK(g.steps[0].content == "// " + kBuild + "/0_a.bekc.cu");
    CHECK(g.steps[2].content == "// entry points");
    CHECK(g.steps[2].command.outputs == std::vector<std::string>{kBuild + "/bekc_handlers.cpp"});
    CHECK(g.steps[4].after == std::vector<size_t>{3});     // the object reads the headers
    CHECK(g.steps[5].after == std::vector<size_t>{0, 3});  // its wrapper, the headers
    CHECK(g.steps[6].after == std::vector<size_t>{1, 3});
    CHECK(g.steps[7].after == std::vector<size_t>{2, 3});  // the entry points
    CHECK(g.steps[5].unit == 0u);
    CHECK(g.steps[6].unit == 1u);
    CHECK_FALSE(g.steps[7].unit.has_value());
    CHECK(g.steps[8].after == std::vector<size_t>{5, 6, 7, 4});  // the objects, bekc_rt.o
    // The object is compiled where the request says; the link reads the cache's.
    CHECK(g.steps[4].command.outputs == std::vector<std::string>{kBuild + "/bekc_rt.o"});
    CHECK(has(g.steps[8].command.argv, "/cache/runtime/abc/obj/def/bekc_rt.o"));
    // Every step's inputs are some earlier step's outputs or outside the build.
    for (size_t i = 0; i < g.steps.size(); ++i)
        for (const auto& in : g.steps[i].command.inputs) {
            if (in.rfind(kBuild, 0) != 0) continue;
            bool made_before = false;
            for (size_t a : g.steps[i].after)
                for (const auto& out : g.steps[a].command.outputs) made_before |= out == in;
            CHECK(made_before);
        }
}

TEST_CASE("graph: what the cache has is not planned again", "[plan][graph]") {
    BuildGraph g = make_build_graph(graph_request({cpp("0_k")}));
    using K = StepKind;
    REQUIRE(kinds(g) ==
            std::vector<K>{K::WriteWrapper, K::WriteWrapper, K::Compile, K::Compile, K::Link});
    CHECK(g.steps[4].after == std::vector<size_t>{2, 3});
}

TEST_CASE("graph: bekc_rt.o compiles beside the sources, the link waits for it", "[plan][graph]") {
    GraphRequest r = graph_request({cpp("0_k")});
    r.compile_runtime_object = kBuild + "/bekc_rt.o";
    BuildGraph g = make_build_graph(r);
    REQUIRE(g.steps.size() == 6);
    CHECK(g.steps[2].kind == StepKind::RuntimeObject);
    CHECK(g.steps[3].after == std::vector<size_t>{0});
    CHECK(g.steps[5].kind == StepKind::Link);
    CHECK(g.steps[5].after == std::vector<size_t>{3, 4, 2});
}

TEST_CASE("graph: the launcher goes in front of every compile, bekc_rt.o's too", "[plan][graph]") {
    GraphRequest r = graph_request({cu("0_a"), cpp("1_b")});
    r.compile_runtime_object = kBuild + "/bekc_rt.o";
    r.plan.launcher = fs::path("/usr/bin/ccache");
    BuildGraph g = make_build_graph(r);
    for (const auto& s : g.steps) {
        if (!s.runs()) continue;
        bool launched = s.command.argv.front() == "/usr/bin/ccache";
        CHECK(launched == (s.kind != StepKind::Link));
    }
}

TEST_CASE("graph: a step's line is its shell command, or a comment for bekc's writes",
          "[plan][graph]") {
    GraphRequest r = graph_request({cpp("0_k")});
    r.write_runtime_headers = true;
    BuildGraph g = make_build_graph(r);
    CHECK(describe_step(g.steps[0]) == "# write-wrapper: " + kBuild + "/0_k.bekc.cpp");
    CHECK(describe_step(g.steps[1]) == "# write-wrapper: " + kBuild + "/bekc_handlers.cpp");
    CHECK(describe_step(g.steps[2]) == "# runtime-headers: " + kRuntime);
    CHECK(describe_step(g.steps[3]) == display_command(g.steps[3].command));
}

TEST_CASE("plan: nvcc compiles architectures side by side within its slots", "[plan][threads]") {
    std::vector<Arch> three = {Arch{80, ""}, Arch{90, ""}, Arch{100, ""}};
    PlanRequest r = request({cu("0_a"), cpp("1_b")}, three);
    r.device_threads = 8;  // more than it has device compilations
    BuildPlan plan = make_build_plan(r);
    const Command& nv = plan.compiles[0].command;
    CHECK(has_pair(nv.argv, "--threads", "4"));  // three archs and the PTX
    CHECK(nv.slots == 4);
    CHECK(plan.compiles[1].command.slots == 1);  // the host compiler's unit
    CHECK_FALSE(has(plan.compiles[1].command.argv, "--threads"));
    CHECK_FALSE(has(plan.link.argv, "--threads"));
    CHECK_FALSE(has(plan.handlers.command.argv, "--threads"));

    r.device_threads = 2;
    CHECK(has_pair(make_build_plan(r).compiles[0].command.argv, "--threads", "2"));
    r.device_threads = 1;  // one at a time: nvcc's default, no flag
    BuildPlan serial = make_build_plan(r);
    CHECK_FALSE(has(serial.compiles[0].command.argv, "--threads"));
    CHECK(serial.compiles[0].command.slots == 1);
    CHECK(device_compilations(three) == 4);
    CHECK(device_compilations({}) == 0);
}

TEST_CASE("plan: nvcc 12.4 and later names its temporaries after the object", "[plan]") {
    CHECK(nvcc_takes_objtemp("13.0.88"));
    CHECK(nvcc_takes_objtemp("12.4.131"));
    CHECK_FALSE(nvcc_takes_objtemp("12.3.107"));
    CHECK_FALSE(nvcc_takes_objtemp("11.8"));
    CHECK_FALSE(nvcc_takes_objtemp(""));
    CHECK_FALSE(nvcc_takes_objtemp("unknown"));
    PlanRequest r = request({cu("0_a"), cpp("1_b")});
    CHECK_FALSE(has(make_build_plan(r).compiles[0].command.argv, "-objtemp"));
    r.nvcc_objtemp = true;
    BuildPlan plan = make_build_plan(r);
    CHECK(has(plan.compiles[0].command.argv, "-objtemp"));
    CHECK_FALSE(has(plan.compiles[1].command.argv, "-objtemp"));  // the host compiler's
    CHECK_FALSE(has(plan.link.argv, "-objtemp"));
}

TEST_CASE(
    "plan: nvcc's link skips the device link when no input can hold relocatable "
    "device code",
    "[plan][dlink]") {
    CHECK(nvcc_takes_nodlink("13.0.88"));
    CHECK(nvcc_takes_nodlink("12.0.76"));
    CHECK_FALSE(nvcc_takes_nodlink("11.8"));
    CHECK_FALSE(nvcc_takes_nodlink("unknown"));
    const std::vector<Arch> archs = {Arch{80, ""}, Arch{90, ""}};
    const Argv sm80 = {"-gencode", "arch=compute_80,code=sm_80"};
    PlanRequest base = request({cu("0_a"), cpp("1_b")}, archs);
    base.nvcc_nodlink = true;
    base.flags.ldflags = {"-L/opt/lib", "-lcublas", "-Wl,-rpath,/opt/lib"};
    base.flags.linker_args = {"--as-needed"};
    {
        // Whole-program device code registers itself: the device link would
        // only add an empty image (nvlink, fatbinary and a host compile).
        const Argv& l = make_build_plan(base).link.argv;
        INFO(joined(l));
        CHECK(has(l, "-nodlink"));
        CHECK_FALSE(has(l, "-gencode"));
    }
    {
        PlanRequest old = base;  // an nvcc without the option links as before
        old.nvcc_nodlink = false;
        const Argv& l = make_build_plan(old).link.argv;
        CHECK_FALSE(has(l, "-nodlink"));
        CHECK_FALSE(has(l, "-gencode"));
    }
    // Relocatable device code or device LTO asked of the compiles, in each
    // spelling nvcc takes: the device link runs, for the build's
    // architectures (nvlink's default is none of them).
    const std::vector<Argv> relocatable = {
        {"-rdc=true"},
        {"-rdc", "true"},
        {"-rdc=1"},
        {"--relocatable-device-code=true"},
        {"--relocatable-device-code", "true"},
        {"-dc"},
        {"--device-c"},
        {"-dlto"},
        {"--dlink-time-opt"},
        {"-lto"},
        {"-gencode=arch=compute_90,code=lto_90"},
        {"-ewp"},
        {"--extensible-whole-program"},
        {"-Xnvlink", "-v"},
        {"--options-file", "more.txt"},
    };
    for (const auto& flags : relocatable) {
        PlanRequest r = base;
        r.flags.cuda_flags = flags;
        const Argv& l = make_build_plan(r).link.argv;
        INFO(joined(flags) << " -> " << joined(l));
        CHECK_FALSE(has(l, "-nodlink"));
        CHECK(has_sequence(l, sm80));
        CHECK(has_sequence(l, {"-gencode", "arch=compute_90,code=compute_90"}));
    }
    // Device LTO happens in the device link, which must be asked for it,
    // however the compiles were.
    for (const Argv& flags : std::vector<Argv>{{"-dlto", "-lineinfo"},
                                               {"-lto", "-lineinfo"},
                                               {"-gencode=arch=compute_90,code=lto_90"}}) {
        PlanRequest r = base;
        r.flags.cuda_flags = flags;
        const Argv& l = make_build_plan(r).link.argv;
        INFO(joined(l));
        CHECK(std::count(l.begin(), l.end(), "-dlto") == 1);
        CHECK_FALSE(has(l, "-lineinfo"));  // other compile flags stay with the compiles
    }
    for (const Argv& flags : std::vector<Argv>{{"-rdc=false"}, {"-rdc", "false"}}) {
        PlanRequest r = base;
        r.flags.cuda_flags = flags;
        CHECK(has(make_build_plan(r).link.argv, "-nodlink"));
    }
    {
        // Link inputs bekc cannot see into (toolchain/link_search.hpp decides).
        PlanRequest r = base;
        r.link_reads_opaque_code = true;
        const Argv& l = make_build_plan(r).link.argv;
        INFO(joined(l));
        CHECK_FALSE(has(l, "-nodlink"));
        CHECK(has_sequence(l, sm80));
    }
    // nvcc options in --ldflag that only the device link takes.
    for (const Argv& ldflags : std::vector<Argv>{{"-Xnvlink", "-v"}, {"-rdc=true"}}) {
        PlanRequest r = base;
        r.flags.ldflags = ldflags;
        CHECK_FALSE(has(make_build_plan(r).link.argv, "-nodlink"));
    }
    {
        // No CUDA input: the host compiler links, nvcc's options stay out.
        PlanRequest r = request({cpp("0_a")});
        r.nvcc_nodlink = true;
        const Argv& l = make_build_plan(r).link.argv;
        CHECK(l.at(0) == kCxx);
        CHECK_FALSE(has(l, "-nodlink"));
    }
}

TEST_CASE("plan: --cudart decides which CUDA runtime nvcc's link names", "[plan]") {
    PlanRequest r = request({cu("0_k")});
    SECTION(
        "shared: the toolkit's libcudart.so.N itself, its directory as the RUNPATH, after "
        "the user's link flags") {
        r.flags.cudart = "shared";
        r.flags.ldflags = {"-Xlinker", "-rpath=/opt/user"};
        r.cudart_library = "/opt/cuda/lib64/libcudart.so.13";
        const Argv& l = make_build_plan(r).link.argv;
        INFO(joined(l));
        CHECK(has_pair(l, "-cudart", "none"));
        CHECK(has_pair(l, "-Xlinker", "/opt/cuda/lib64/libcudart.so.13"));
        CHECK(has_sequence(l, {"-Xlinker", "-rpath", "-Xlinker", "/opt/cuda/lib64"}));
        CHECK(index_of(l, "-rpath=/opt/user") < index_of(l, "-rpath"));
    }
    SECTION("shared with nvcc's device link: -cudart shared, which the device link needs") {
        r.flags.cudart = "shared";
        r.flags.cuda_flags = {"-rdc=true"};
        r.cudart_library = "/opt/cuda/lib64/libcudart.so.13";
        const Argv& l = make_build_plan(r).link.argv;
        INFO(joined(l));
        CHECK(has_pair(l, "-cudart", "shared"));
        CHECK(has(l, "-L/opt/cuda/lib64"));
        CHECK(has_sequence(l, {"-Xlinker", "-rpath", "-Xlinker", "/opt/cuda/lib64"}));
        CHECK_FALSE(has(l, "/opt/cuda/lib64/libcudart.so.13"));
    }
    SECTION("static: nvcc's own option") {
        r.flags.cudart = "static";
        const Argv& l = make_build_plan(r).link.argv;
        INFO(joined(l));
        CHECK(has_pair(l, "-cudart", "static"));
        CHECK_FALSE(has(l, "-rpath"));
    }
    SECTION("unset: nothing, nvcc's default") {
        CHECK_FALSE(has(make_build_plan(r).link.argv, "-cudart"));
    }
    SECTION("a C++-only library links no CUDA runtime") {
        PlanRequest c = request({cpp("0_k")}, {});
        c.flags.cudart = "shared";
        c.cudart_library = "/opt/cuda/lib64/libcudart.so.13";
        CHECK_FALSE(has(make_build_plan(c).link.argv, "-cudart"));
    }
}
