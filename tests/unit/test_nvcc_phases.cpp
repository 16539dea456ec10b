// nvcc's pipeline as graph steps (lib/plan/nvcc_phases): what `nvcc
// --dryrun` prints read into phases, and one CUDA compile of a build graph
// replaced by them. Pure, so no nvcc is needed: the dry run is the shape
// nvcc 13.0 prints for two architectures and PTX.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "../helpers/plan_unit.hpp"
#include "graph/nvcc_split.hpp"
#include "plan/nvcc_phases.hpp"

using namespace bekc;

namespace {

const std::string B = test::kPlanBuild;  // the build directory
const std::string O = B + "/0_k.bekc.cu.o";

// Two architectures, sm_90 also as PTX, as nvcc 13.0 prints it for
// `-objtemp -c 0_k.bekc.cu -o 0_k.bekc.cu.o` (arguments shortened).
std::string dryrun() {
    return "#$ _NVVM_BRANCH_=nvvm\n"
           "#$ _SPACE_= \n"
           "#$ _HERE_=/cuda/bin\n"
           "#$ TOP=/cuda/bin/..\n"
           "#$ CICC_PATH=/cuda/bin/../nvvm/bin\n"
           "#$ NVVMIR_LIBRARY_DIR=/cuda/bin/../nvvm/libdevice\n"
           "#$ PATH=/cuda/bin/../nvvm/bin:/cuda/bin:/usr/bin\n"
           "#$ INCLUDES=\"-I/cuda/bin/../targets/x86_64-linux/include\"  \n"
           "#$ \"/usr/bin\"/c++ -std=c++17 -D__CUDA_ARCH_LIST__=800,900 -E -x c++ -O3 \"" +
           B + "/0_k.bekc.cu\" -o \"" + O +
           ".cpp4.ii\" > /tmp/tmpxft_1_stdout 2>/tmp/tmpxft_1_stderr\n"
           "#$ cudafe++ --c++17 --orig_src_file_name \"" +
           B + "/0_k.bekc.cu\" --orig_src_path_name \"" + B +
           "/0_k.bekc.cu\" --gen_c_file_name \"" + O +
           ".compute_90.cudafe1.cpp\" --stub_file_name \"0_k.bekc.cu.o.compute_90.cudafe1.stub.c\" "
           "--gen_module_id_file --module_id_file_name \"" +
           O + ".module_id\" \"" + O +
           ".cpp4.ii\"\n"
           "#$ \"/usr/bin\"/c++ -std=c++17 -D__CUDA_ARCH__=800 -D__CUDA_ARCH_LIST__=800,900 -E -x "
           "c++ "
           "\"" +
           B + "/0_k.bekc.cu\" -o \"" + O +
           ".compute_80.cpp1.ii\"\n"
           "#$ \"$CICC_PATH/cicc\" --c++17 --orig_src_file_name \"" +
           B + "/0_k.bekc.cu\" --orig_src_path_name \"" + B +
           "/0_k.bekc.cu\" -arch compute_80 --include_file_name \"0_k.bekc.cu.o.fatbin.c\" "
           "--module_id_file_name \"" +
           O + ".module_id\" --gen_c_file_name \"" + O +
           ".compute_80.cudafe1.c\" --stub_file_name \"" + O +
           ".compute_80.cudafe1.stub.c\" --gen_device_file_name \"" + O +
           ".compute_80.cudafe1.gpu\" \"" + O + ".compute_80.cpp1.ii\" -o \"" + O +
           ".compute_80.ptx\"\n"
           "#$ ptxas -arch=sm_80 -m64 \"" +
           O + ".compute_80.ptx\" -o \"" + O +
           ".compute_80.cubin\" > /tmp/tmpxft_2_stdout 2>/tmp/tmpxft_2_stderr\n"
           "#$ \"/usr/bin\"/c++ -std=c++17 -D__CUDA_ARCH__=900 -D__CUDA_ARCH_LIST__=800,900 -E -x "
           "c++ "
           "\"" +
           B + "/0_k.bekc.cu\" -o \"" + O +
           ".compute_90.cpp1.ii\"\n"
           "#$ \"$CICC_PATH/cicc\" --c++17 --orig_src_file_name \"" +
           B + "/0_k.bekc.cu\" --orig_src_path_name \"" + B +
           "/0_k.bekc.cu\" -arch compute_90 --include_file_name \"0_k.bekc.cu.o.fatbin.c\" "
           "--module_id_file_name \"" +
           O + ".module_id\" --gen_c_file_name \"" + O +
           ".compute_90.cudafe1.c\" --stub_file_name \"" + O +
           ".compute_90.cudafe1.stub.c\" --gen_device_file_name \"" + O +
           ".compute_90.cudafe1.gpu\" \"" + O + ".compute_90.cpp1.ii\" -o \"" + O +
           ".compute_90.ptx\"\n"
           "#$ ptxas -arch=sm_90 -m64 \"" +
           O + ".compute_90.ptx\" -o \"" + O +
           ".compute_90.sm_90.cubin\"\n"
           "#$ fatbinary --create=\"" +
           O + ".fatbin\" -64 \"--image3=kind=elf,sm=80,file=" + O +
           ".compute_80.cubin\" \"--image3=kind=ptx,sm=90,file=" + O +
           ".compute_90.ptx\" \"--image3=kind=elf,sm=90,file=" + O +
           ".compute_90.sm_90.cubin\" --embedded-fatbin=\"" + O +
           ".fatbin.c\"\n"
           "#$ \"/usr/bin\"/c++ -std=c++17 -D__CUDA_ARCH__=900 -D__CUDA_ARCH_LIST__=800,900 -c -x "
           "c++ "
           "-O3 \"" +
           O + ".compute_90.cudafe1.cpp\" -o \"" + O +
           "\"\n"
           "#$ rm " +
           O + ".fatbin\n";
}

NvccPipeline parsed(const std::string& text = dryrun()) {
    auto p = parse_nvcc_dryrun(text);
    REQUIRE(p);
    for (auto& ph : p->phases)
        if (ph.argv[0].find('/') == std::string::npos) ph.argv[0] = "/cuda/bin/" + ph.argv[0];
    return *p;
}

// A graph of one CUDA input and the entry points.
BuildGraph graph() {
    GraphRequest g;
    g.plan = test::plan_request({test::plan_unit(B, "0_k.bekc.cu", true)}, {{80, ""}, {90, ""}});
    g.wrapper_texts = {"// wrapper"};
    g.handlers_text = "// handlers";
    return make_build_graph(g);
}

size_t compile_of_unit(const BuildGraph& g) {
    for (size_t i = 0; i < g.steps.size(); ++i)
        if (g.steps[i].kind == StepKind::Compile && g.steps[i].unit) return i;
    FAIL("no compile of an input");
    return 0;
}

const Step& step_named(const BuildGraph& g, const std::string& description) {
    for (const auto& s : g.steps)
        if (s.command.description == description) return s;
    FAIL("no step " << description);
    return g.steps.front();
}

size_t index_named(const BuildGraph& g, const std::string& description) {
    return static_cast<size_t>(&step_named(g, description) - g.steps.data());
}

bool comes_after(const BuildGraph& g, const std::string& later, const std::string& earlier) {
    const Step& s = step_named(g, later);
    size_t e = index_named(g, earlier);
    return std::find(s.after.begin(), s.after.end(), e) != s.after.end();
}

}  // namespace

TEST_CASE("nvcc phases: the dry run reads as nvcc's phases in its order", "[nvcc_phases]") {
    auto p = parse_nvcc_dryrun(dryrun());
    REQUIRE(p);
    std::vector<std::string> kinds;
    for (const auto& ph : p->phases) kinds.emplace_back(nvcc_phase_name(ph.kind));
    CHECK(kinds == std::vector<std::string>{"host-preprocess", "cudafe++", "device-preprocess",
                                            "cicc", "ptxas", "device-preprocess", "cicc", "ptxas",
                                            "fatbinary", "host-compile"});
    const auto& cicc = p->phases[3];
    CHECK(cicc.argv[0] == "/cuda/bin/../nvvm/bin/cicc");  // $CICC_PATH expanded
    CHECK(cicc.arch == "compute_80");
    CHECK(cicc.inputs == std::vector<std::string>{O + ".compute_80.cpp1.ii", O + ".module_id"});
    CHECK(cicc.outputs.front() == O + ".compute_80.ptx");
    CHECK(p->phases[4].arch == "sm_80");
    CHECK(p->phases[2].arch == "compute_80");
    // The redirections are gone: bekc reads the output itself.
    CHECK(p->phases[4].argv.back() == O + ".compute_80.cubin");
    CHECK(p->phases[1].outputs ==
          std::vector<std::string>{O + ".compute_90.cudafe1.cpp", O + ".module_id"});
    CHECK(p->phases[8].inputs.size() == 3);
    // nvcc's variables for its tools, without its own _NAME_ helpers.
    std::vector<std::string> names;
    for (const auto& [name, value] : p->env) names.push_back(name);
    CHECK(names ==
          std::vector<std::string>{"TOP", "CICC_PATH", "NVVMIR_LIBRARY_DIR", "PATH", "INCLUDES"});
    CHECK(p->env[4].second == "-I/cuda/bin/../targets/x86_64-linux/include");
}

TEST_CASE("nvcc phases: a line bekc would not run as nvcc does is refused with its number",
          "[nvcc_phases]") {
    auto refused = [](const std::string& line) {
        auto p = parse_nvcc_dryrun("#$ _HERE_=/cuda/bin\n" + line + "\n");
        REQUIRE_FALSE(p);
        CHECK(p.error().starts_with("line 2: "));
        return p.error();
    };
    CHECK(refused("#$ nvlink -arch=sm_80 a.o -o b.o").find("nvlink") != std::string::npos);
    CHECK(refused("#$ ptxas 'a b.ptx' -o x").find("'") != std::string::npos);
    CHECK(refused("#$ ptxas a.ptx -o x; rm -rf /").find(";") != std::string::npos);
    CHECK(refused("#$ ptxas $NOPE/a.ptx -o x").find("NOPE") != std::string::npos);
    CHECK(refused("#$ ptxas \"a.ptx -o x").find("quote") != std::string::npos);
    CHECK(refused("#$ ptxas a*.ptx -o x").find("*") != std::string::npos);
    CHECK(refused("#$ ptxas a.ptx -o").find("writes") != std::string::npos);
    CHECK(refused("compiling a.cu").find("not a command") != std::string::npos);
    // A shell would run what follows a redirection, or split a variable.
    CHECK(refused("#$ ptxas a.ptx -o x > /tmp/o; rm -rf /").find("after a redirection") !=
          std::string::npos);
    CHECK(refused("#$ ptxas a.ptx -o x > /tmp/o && rm y").find("after a redirection") !=
          std::string::npos);
    CHECK(refused("#$ ptxas $_HERE_ a.ptx -o x 2>/tmp/e extra").find("after a redirection") !=
          std::string::npos);
    // Relocatable device code, whatever asked nvcc for it (its environment,
    // nvcc.profile), is completed by nvcc's device link alone.
    CHECK(refused("#$ cicc -arch compute_80 --device-c --module_id_file_name m a.ii -o a.ptx")
              .find("--device-c") != std::string::npos);
    CHECK(refused("#$ fatbinary --create=f --image3=kind=elf,sm=80,file=x --device-c")
              .find("--device-c") != std::string::npos);
    auto spaced = parse_nvcc_dryrun("#$ V=\"a b\"\n#$ ptxas $V.ptx -o x\n");
    REQUIRE_FALSE(spaced);
    CHECK(spaced.error().find("one plain word") != std::string::npos);
    // Redirections alone, in any of nvcc's spellings, are dropped.
    CHECK(
        parse_nvcc_dryrun("#$ ptxas a.ptx -o x > /tmp/o 2>/tmp/e\n#$ fatbinary --create=f "
                          "--image3=kind=elf,sm=80,file=x >/tmp/o 2> /tmp/e\n"));
}

TEST_CASE("nvcc phases: the dry run asks for the compile without -MD, -MF and --threads",
          "[nvcc_phases]") {
    Command c;
    c.argv = {"/cuda/bin/nvcc", "-O3", "--threads", "3", "-MD", "-MF", "x.d", "-c",
              "x.cu",           "-o",  "x.o"};
    CHECK(nvcc_dryrun_argv(c, {}) ==
          std::vector<std::string>{"/cuda/bin/nvcc", "--dryrun", "-O3", "-c", "x.cu", "-o", "x.o"});
    // Relocatable device code or a device link stay one nvcc process.
    CHECK(nvcc_dryrun_argv(c, {"-rdc=true"}).empty());
    CHECK(nvcc_dryrun_argv(c, {"-dlto"}).empty());
    // So does a compile behind a launcher (ccache caches whole nvcc calls).
    c.argv.insert(c.argv.begin(), "/usr/bin/ccache");
    CHECK(nvcc_dryrun_argv(c, {}).empty());
}

TEST_CASE("nvcc phases: a split compile runs each phase once the files it reads are written",
          "[nvcc_phases]") {
    BuildGraph g = graph();
    size_t at = compile_of_unit(g);
    REQUIRE(split_nvcc_compile(g, parsed(), {at, "/usr/bin/g++", "/src/0_k.bekc.cu", ""}));
    for (size_t i = 0; i < g.steps.size(); ++i)
        for (size_t a : g.steps[i].after) CHECK(a < i);
    CHECK(comes_after(g, "cudafe++ 0_k.bekc.cu", "host-preprocess 0_k.bekc.cu"));
    // Without a module id of bekc's, cicc reads the one cudafe++ writes.
    CHECK(comes_after(g, "cicc compute_80 0_k.bekc.cu", "cudafe++ 0_k.bekc.cu"));
    CHECK(
        comes_after(g, "cicc compute_80 0_k.bekc.cu", "device-preprocess compute_80 0_k.bekc.cu"));
    CHECK(comes_after(g, "ptxas sm_90 0_k.bekc.cu", "cicc compute_90 0_k.bekc.cu"));
    CHECK(comes_after(g, "fatbinary 0_k.bekc.cu", "ptxas sm_80 0_k.bekc.cu"));
    CHECK(comes_after(g, "fatbinary 0_k.bekc.cu", "cicc compute_90 0_k.bekc.cu"));  // the PTX
    // The host compile waits for the stub of the last cicc, not for ptxas.
    const Step& host = step_named(g, "nvcc 0_k.bekc.cu");
    CHECK(host.kind == StepKind::Compile);
    CHECK(host.phase == "host-compile");
    CHECK(comes_after(g, "nvcc 0_k.bekc.cu", "cudafe++ 0_k.bekc.cu"));
    // The last cicc's stub, under a name without the architecture, as
    // cudafe++'s output (also so named) includes it.
    CHECK(comes_after(g, "copy 0_k.bekc.cu.o.compute_90.cudafe1.stub.c",
                      "cicc compute_90 0_k.bekc.cu"));
    CHECK(comes_after(g, "nvcc 0_k.bekc.cu", "copy 0_k.bekc.cu.o.compute_90.cudafe1.stub.c"));
    CHECK(step_named(g, "copy 0_k.bekc.cu.o.compute_90.cudafe1.stub.c").command.outputs ==
          std::vector<std::string>{O + ".cudafe1.stub.c"});
    const Step& cudafe = step_named(g, "cudafe++ 0_k.bekc.cu");
    CHECK(test::index_of(cudafe.command.argv, O + ".cudafe1.cpp") > 0);
    CHECK(test::index_of(cudafe.command.argv, "0_k.bekc.cu.o.cudafe1.stub.c") > 0);
    CHECK(test::index_of(host.command.argv, O + ".cudafe1.cpp") > 0);
    CHECK_FALSE(comes_after(g, "nvcc 0_k.bekc.cu", "fatbinary 0_k.bekc.cu"));
    CHECK_FALSE(comes_after(g, "nvcc 0_k.bekc.cu", "ptxas sm_90 0_k.bekc.cu"));
    // The fat binary: written alone, then assembled into an object of its own.
    const Step& fatbinary = step_named(g, "fatbinary 0_k.bekc.cu");
    for (const auto& a : fatbinary.command.argv) CHECK_FALSE(a.starts_with("--embedded-fatbin"));
    CHECK(comes_after(g, "assemble 0_k.bekc.cu.o.fatbin", "fatbinary 0_k.bekc.cu"));
    const Step& fatbin_c = step_named(g, "write 0_k.bekc.cu.o.fatbin.c");
    CHECK(fatbin_c.content.find("bekc_fatbin_0") != std::string::npos);
    CHECK(fatbin_c.content.find("__fatDeviceText") != std::string::npos);
    CHECK(comes_after(g, "nvcc 0_k.bekc.cu", "write 0_k.bekc.cu.o.fatbin.c"));
    const Step& s = step_named(g, "write 0_k.bekc.cu.o.fatbin.s");
    CHECK(s.content.find(".incbin \"" + O + ".fatbin\"") != std::string::npos);
    CHECK(s.content.find(".section .nv_fatbin") != std::string::npos);
    // Without the note the linker would give the library an executable stack.
    CHECK(s.content.find(".section .note.GNU-stack") != std::string::npos);
    // The link takes the fat binary's object right after the host object.
    const Step& link = g.steps.back();
    REQUIRE(link.kind == StepKind::Link);
    long object = test::index_of(link.command.argv, O);
    REQUIRE(object > 0);
    CHECK(link.command.argv[object + 1] == O + ".fatbin.o");
    CHECK(comes_after(g, link.command.description, "assemble 0_k.bekc.cu.o.fatbin"));
    CHECK(comes_after(g, link.command.description, "nvcc 0_k.bekc.cu"));
}

// nvcc 13.5 (the pip toolkit's) puts --simt-only after the input of
// cudafe++ and of cicc, so the input is not the argument before -o.
TEST_CASE("nvcc phases: cicc waits for its preprocessed input whatever flag comes before -o",
          "[nvcc_phases]") {
    std::string text = dryrun();
    for (const std::string arch : {"compute_80", "compute_90"}) {
        const std::string from = "." + arch + ".cpp1.ii\" -o";
        REQUIRE(text.find(from) != std::string::npos);
        text.replace(text.find(from), from.size(), "." + arch + ".cpp1.ii\" --simt-only -o");
    }
    BuildGraph g = graph();
    REQUIRE(split_nvcc_compile(
        g, parsed(text),
        {compile_of_unit(g), "/usr/bin/g++", "/src/0_k.bekc.cu", "_0123456789abcdef_k_cu"}));
    for (const std::string arch : {"compute_80", "compute_90"}) {
        CHECK(comes_after(g, "cicc " + arch + " 0_k.bekc.cu",
                          "device-preprocess " + arch + " 0_k.bekc.cu"));
        CHECK(test::index_of(step_named(g, "cicc " + arch + " 0_k.bekc.cu").command.inputs,
                             O + "." + arch + ".cpp1.ii") >= 0);
    }
}

TEST_CASE("nvcc phases: cudafe++ and cicc read bekc's module id, and cicc starts beside cudafe++",
          "[nvcc_phases]") {
    BuildGraph g = graph();
    const std::string id = "_0123456789abcdef_k_cu";
    REQUIRE(split_nvcc_compile(g, parsed(),
                               {compile_of_unit(g), "/usr/bin/g++", "/src/0_k.bekc.cu", id}));
    // A step writes the id into the file nvcc names, before either reads it.
    const Step& write = step_named(g, "write 0_k.bekc.cu.o.module_id");
    CHECK(write.kind == StepKind::WriteWrapper);
    CHECK(write.content == id);
    CHECK(write.command.outputs == std::vector<std::string>{O + ".module_id"});
    const Step& cudafe = step_named(g, "cudafe++ 0_k.bekc.cu");
    CHECK(test::index_of(cudafe.command.argv, "--gen_module_id_file") < 0);
    long named = test::index_of(cudafe.command.argv, "--module_id_file_name");
    REQUIRE(named > 0);
    CHECK(cudafe.command.argv[named + 1] == O + ".module_id");
    CHECK(test::index_of(cudafe.command.inputs, O + ".module_id") >= 0);
    CHECK(test::index_of(cudafe.command.outputs, O + ".module_id") < 0);
    CHECK(comes_after(g, "cudafe++ 0_k.bekc.cu", "write 0_k.bekc.cu.o.module_id"));
    for (const std::string arch : {"compute_80", "compute_90"}) {
        const std::string cicc = "cicc " + arch + " 0_k.bekc.cu";
        CHECK(comes_after(g, cicc, "write 0_k.bekc.cu.o.module_id"));
        CHECK_FALSE(comes_after(g, cicc, "cudafe++ 0_k.bekc.cu"));
        const Step& c = step_named(g, cicc);
        CHECK(c.command.argv[test::index_of(c.command.argv, "--module_id_file_name") + 1] ==
              O + ".module_id");
    }
    // Both read the same id: nothing is checked after the fact.
    for (const auto& s : g.steps) CHECK(s.command.description.find("check") == std::string::npos);
    CHECK_FALSE(comes_after(g, "fatbinary 0_k.bekc.cu", "cudafe++ 0_k.bekc.cu"));
    // The host compile still reads cudafe++'s output.
    CHECK(comes_after(g, "nvcc 0_k.bekc.cu", "cudafe++ 0_k.bekc.cu"));
    // An id that is not an identifier is refused; the compile stays whole.
    BuildGraph h = graph();
    CHECK_FALSE(split_nvcc_compile(h, parsed(), {compile_of_unit(h), "/usr/bin/g++", "", "a b"}));
    CHECK(h.steps.size() == graph().steps.size());
}

TEST_CASE(
    "nvcc phases: the preprocessors write the dependencies and the module id's path is "
    "the input's",
    "[nvcc_phases]") {
    BuildGraph g = graph();
    REQUIRE(split_nvcc_compile(g, parsed(),
                               {compile_of_unit(g), "/usr/bin/g++", "/src/0_k.bekc.cu", ""}));
    int depfiles = 0;
    for (const auto& s : g.steps) {
        if (s.phase == "host-preprocess" || s.phase == "device-preprocess") {
            REQUIRE_FALSE(s.depfile.empty());
            CHECK(test::index_of(s.command.argv, s.depfile.string()) > 0);
            ++depfiles;
        }
        if (s.phase == "cudafe++" || s.phase == "cicc") {
            long at = test::index_of(s.command.argv, "--orig_src_path_name");
            REQUIRE(at > 0);
            CHECK(s.command.argv[at + 1] == "/src/0_k.bekc.cu");
        }
        if (s.phase == "host-compile") CHECK(s.depfile.empty());
    }
    CHECK(depfiles == 3);
}

TEST_CASE(
    "nvcc phases: a pipeline that writes outside the build directory leaves the graph as "
    "it was",
    "[nvcc_phases]") {
    BuildGraph g = graph();
    const BuildGraph before = g;
    NvccPipeline p = parsed();
    p.phases[4].outputs = {"/tmp/tmpxft_00001_x.cubin"};
    auto split = split_nvcc_compile(g, p, {compile_of_unit(g), "/usr/bin/g++", "", ""});
    REQUIRE_FALSE(split);
    CHECK(split.error().find("outside the build directory") != std::string::npos);
    REQUIRE(g.steps.size() == before.steps.size());
    for (size_t i = 0; i < g.steps.size(); ++i)
        CHECK(g.steps[i].command.argv == before.steps[i].command.argv);
    // A stub named with a directory would be written outside it.
    p = parsed();
    for (auto& a : p.phases[1].argv)
        if (a == "0_k.bekc.cu.o.compute_90.cudafe1.stub.c") a = "../escape.stub.c";
    CHECK_FALSE(split_nvcc_compile(g, p, {compile_of_unit(g), "/usr/bin/g++", "", ""}));
    CHECK(g.steps.size() == before.steps.size());
    // And one without a cicc per preprocessing.
    p = parsed();
    p.phases.erase(p.phases.begin() + 3);
    CHECK_FALSE(split_nvcc_compile(g, p, {compile_of_unit(g), "/usr/bin/g++", "", ""}));
    CHECK(g.steps.size() == before.steps.size());
}

TEST_CASE("nvcc phases: the last architecture leaves nvcc's names for cudafe++'s output",
          "[nvcc_phases]") {
    CHECK(replace_cudafe_arch("/b/x.o.compute_90.cudafe1.stub.c", "") == "/b/x.o.cudafe1.stub.c");
    CHECK(replace_cudafe_arch("/b/x.o.compute_100.cudafe1.cpp", "") == "/b/x.o.cudafe1.cpp");
    // One architecture: nvcc names carry none, and nothing changes.
    CHECK(replace_cudafe_arch("x.o.cudafe1.stub.c", "") == "x.o.cudafe1.stub.c");
    CHECK(replace_cudafe_arch(
              "# 1 \"/b/x.o.compute_90.cudafe1.stub.c\"\n# 2 \"/b/y.sm_80.cudafe1.c\"", ".$LAST") ==
          "# 1 \"/b/x.o.$LAST.cudafe1.stub.c\"\n# 2 \"/b/y.$LAST.cudafe1.c\"");
    // Another word before .cudafe1. is not an architecture.
    CHECK(replace_cudafe_arch("a.stub.cudafe1.c", "") == "a.stub.cudafe1.c");
}

TEST_CASE("nvcc phases: an input's module id follows its module and place, not its bytes",
          "[nvcc_phases]") {
    const fs::path input = "/home/u/k/binary-fcn.mm.cu";
    const std::string orig = "./k/0_binary-fcn.mm.bekc.cu";
    const std::string id = nvcc_module_id("fcn", orig, input);
    CHECK(is_module_id(id));
    CHECK(id.starts_with("_"));
    CHECK(id.ends_with("_binary_fcn_mm_cu"));
    CHECK(nvcc_module_id("fcn", orig, input) == id);  // every build, edited or not, alike
    // Another directory, another place among the inputs, another module: another id.
    CHECK(nvcc_module_id("fcn", "./j/0_binary-fcn.mm.bekc.cu", input) != id);
    CHECK(nvcc_module_id("fcn", "./k/1_binary-fcn.mm.bekc.cu", input) != id);
    CHECK(nvcc_module_id("fcn2", orig, input) != id);
    // The file name is cut short; the id stays an identifier.
    const std::string other = nvcc_module_id("m", "./x/0_a.bekc.cu", "/x/" + std::string(300, 'a'));
    CHECK(is_module_id(other));
    CHECK(other.size() < 100);
    CHECK_FALSE(is_module_id(""));
    CHECK_FALSE(is_module_id("a b"));
    CHECK_FALSE(is_module_id(std::string(kMaxModuleId + 1, 'a')));
}
