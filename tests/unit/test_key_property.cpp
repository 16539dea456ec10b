// The direct key follows the build: every option and environment setting
// that changes a command of the build graph changes the key, and the options
// that only change how bekc reports or where it copies the result do not.
// The key is derived from the graph (graph/keys.cpp), so these hold for
// options added later too, as long as they reach a command.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

#include "../helpers/driver_fixture.hpp"
#include "graph/keys.hpp"
#include "graph/recipe.hpp"
#include "toolchain/compiler_env.hpp"

using namespace bekc;
using test::DriverFixture;

namespace {

using Change = std::function<void(DriverFixture&)>;

// Every command line and written file of the planned graph, whose
// directories are placeholders.
std::vector<std::string> graph_of(DriverFixture& f) {
    BuildContext c = f.context();
    std::vector<std::string> out;
    for (const auto& s : plan_build(prepare_build(f.o, c), f.o).graph.steps) {
        std::string line = describe_step(s);
        out.push_back(s.runs() ? line : line + "\n" + s.content);
    }
    return out;
}

// The fixture as it was, for each change to start from.
struct Reset {
    DriverFixture& f;
    BuildOptions o = f.o;
    std::map<std::string, std::string> env = f.env, tool_env = f.tool_env;
    void operator()() const {
        f.o = o;
        f.env = env;
        f.tool_env = tool_env;
    }
};

// The options that decide the library: each changes the direct key and the
// portable key alike.
std::vector<std::pair<std::string, Change>> library_option_changes() {
    return {
        {"--name", [](auto& f) { f.o.name = "other"; }},
        {"--target-prefix", [](auto& f) { f.o.target_prefix = "pkg.ops"; }},
        {"-O", [](auto& f) { f.o.flags.opt_level = 2; }},
        {"--fast-math", [](auto& f) { f.o.flags.fast_math = true; }},
        {"--std", [](auto& f) { f.o.flags.cxx_std = "c++20"; }},
        {"-I", [](auto& f) { f.o.flags.include_dirs = {"inc"}; }},
        {"-D", [](auto& f) { f.o.flags.defines = {"N=4"}; }},
        {"--cuda-flag", [](auto& f) { f.o.flags.cuda_flags = {"-lineinfo"}; }},
        {"--cxx-flag", [](auto& f) { f.o.flags.cxx_flags = {"-g"}; }},
        {"--ldflag", [](auto& f) { f.o.flags.ldflags = {"-lm"}; }},
        {"--linker-arg", [](auto& f) { f.o.flags.linker_args = {"--no-undefined"}; }},
    };
}

}  // namespace

TEST_CASE("key: every option that changes a command changes the key", "[key][property]") {
    std::vector<std::pair<std::string, Change>> changes = library_option_changes();
    changes.insert(
        changes.end(),
        {
            {"--arch", [](auto& f) { f.o.arch = "sm_80,sm_90"; }},
            {"--xla-include", [](auto& f) { f.o.xla_include = (f.tmp / "xla").string(); }},
            {"--function", [](auto& f) { f.o.functions = {"extra"}; }},
            {"--cxx", [](auto& f) { f.o.cxx = (f.tmp / "bin/clang++").string(); }},
            {"--nvcc", [](auto& f) { f.o.nvcc = (f.tmp / "bin/nvcc-other").string(); }},
            {"input order", [](auto& f) { std::swap(f.o.inputs[0], f.o.inputs[1]); }},
            {"one input fewer", [](auto& f) { f.o.inputs.pop_back(); }},
        });
    DriverFixture f;
    const Reset reset{f};
    const std::string base_key = f.key();
    const auto base_graph = graph_of(f);
    for (const auto& [what, change] : changes) {
        DYNAMIC_SECTION(what) {
            reset();
            change(f);
            CHECK(graph_of(f) != base_graph);  // the option reaches a command...
            CHECK(f.key() != base_key);        // ...and so the key
        }
    }
}

TEST_CASE("key: an input's bytes and a tool's binary change the key", "[key][property]") {
    DriverFixture f;
    const std::string base_key = f.key();
    SECTION("input bytes") {
        test::write_file(f.tmp / "src/b.cpp", read_file(f.tmp / "src/b.cpp").value() + "// x\n");
        CHECK(f.key() != base_key);
    }
    SECTION("the host compiler's binary, same path") {
        test::write_file(f.tmp / "bin/g++", "a rebuilt fake host compiler");
        CHECK(f.key() != base_key);
    }
}

TEST_CASE("key: every environment variable the tools read changes the key", "[key][property]") {
    DriverFixture f;
    const Reset reset{f};
    const std::string base_key = f.key();
    for (const auto& var : kCompilerEnv) {
        DYNAMIC_SECTION(var.name) {
            reset();
            f.tool_env[std::string(var.name)] = "/opt/elsewhere";
            CHECK(f.key() != base_key);
        }
    }
}

TEST_CASE("key: options that leave the output alone leave the key alone", "[key][property]") {
    const std::vector<std::pair<std::string, Change>> neutral = {
        {"-v", [](auto& f) { f.o.verbose = true; }},
        {"-q", [](auto& f) { f.o.quiet = false; }},
        {"--json", [](auto& f) { f.o.json = true; }},
        {"-o", [](auto& f) { f.o.output_dir = (f.tmp / "out").string(); }},
        {"--depfile", [](auto& f) { f.o.depfile = (f.tmp / "m.d").string(); }},
        {"--no-cuda-graph", [](auto& f) { f.o.no_cuda_graph = true; }},
        {"-j", [](auto& f) { f.o.jobs = 7; }},
        {"--force", [](auto& f) { f.o.force = true; }},
        {"--dry-run", [](auto& f) { f.o.dry_run = true; }},
        {"--explain-key", [](auto& f) { f.o.explain_key = true; }},
        {"--launcher", [](auto& f) { f.o.launcher = (f.tmp / "bin/g++").string(); }},
        {"--compile-commands",
         [](auto& f) { f.o.compile_commands = (f.tmp / "cc.json").string(); }},
        {"--remote-cache", [](auto& f) { f.o.remote_cache = "http://127.0.0.1:9/x"; }},
        {"an unrelated variable", [](auto& f) { f.tool_env["HOME_OF_SOMETHING"] = "/x"; }},
    };
    DriverFixture f;
    const Reset reset{f};
    const std::string base_key = f.key();
    for (const auto& [what, change] : neutral) {
        DYNAMIC_SECTION(what) {
            reset();
            change(f);
            CHECK(f.key() == base_key);
        }
    }
}

TEST_CASE("key: the same build in another cache or build directory has the same key",
          "[key][property]") {
    DriverFixture f;
    const std::string base_key = f.key();
    f.o.cache_dir = (f.tmp / "another-cache").string();
    CHECK(f.key() == base_key);
}

TEST_CASE("key: with $BEKC_BASE_DIR, checkouts at two places have one key", "[key][property]") {
    // Two fixtures: the same files in two temporary directories.
    DriverFixture a, b;
    b.o.cxx = a.o.cxx;  // one toolchain, outside both checkouts
    b.o.nvcc = a.o.nvcc;
    CHECK(a.key() != b.key());  // the inputs' paths differ
    a.env["BEKC_BASE_DIR"] = (a.tmp / "src").string();
    b.env["BEKC_BASE_DIR"] = (b.tmp / "src").string();
    CHECK(a.key() == b.key());
    // The bytes still count.
    test::write_file(b.tmp / "src/b.cpp", read_file(b.tmp / "src/b.cpp").value() + "// x\n");
    CHECK(a.key() != b.key());
}

namespace {

// What nvcc's front ends are told to name the first input by, in `g`.
std::string nvcc_source_of(const BuildGraph& g) {
    for (const auto& s : g.steps) {
        if (s.kind != StepKind::Compile || s.unit != 0u) continue;
        const auto& a = s.command.argv;
        auto at = std::find(a.begin(), a.end(), std::string("-Xcudafe"));
        if (at != a.end() && at + 1 != a.end()) return *(at + 1);
    }
    return "";
}

}  // namespace

TEST_CASE("key: nvcc names a CUDA input by its own directory, never the build directory's",
          "[key][property]") {
    // cudafe++ derives the module id, which names the input's internal
    // device symbols, from that name.
    DriverFixture f;
    auto graph = [&f] {
        BuildContext c = f.context();
        return plan_build(prepare_build(f.o, c), f.o).graph;
    };
    const std::string own = "--orig_src_path_name=" + (f.tmp / "src/0_a.bekc.cu").string();
    CHECK(nvcc_source_of(graph()) == own);
    BuildContext c = f.context();
    BuildInputs in = prepare_build(f.o, c);
    GraphDirs elsewhere = build_dirs(in, f.tmp / "build.1234");
    CHECK(nvcc_source_of(fill_in(graph_recipe(in), elsewhere).value()) == own);
    // Relative to the base, as checkouts share it.
    f.env["BEKC_BASE_DIR"] = f.tmp.path().string();
    CHECK(nvcc_source_of(graph()) == "--orig_src_path_name=./src/0_a.bekc.cu");
    // A directory nvcc's shell could not take as it is: a digest of it.
    f.env.erase("BEKC_BASE_DIR");
    test::write_file(f.tmp / "my src/a.cu", read_file(f.tmp / "src/a.cu").value());
    f.o.inputs = {(f.tmp / "my src/a.cu").string()};
    std::string digest = nvcc_source_of(graph());
    CHECK(digest.starts_with("--orig_src_path_name=/bekc-source/"));
    CHECK(digest.ends_with("/0.cu"));
}

TEST_CASE(
    "graph: a build fills the planned graph in with its own directories, the launcher and the "
    "runtime steps the cache lacks, and changes nothing else",
    "[key][property]") {
    DriverFixture f;
    f.o.inputs = {(f.tmp / "src/b.cpp").string()};
    f.o.launcher = (f.tmp / "bin/g++").string();
    BuildContext c = f.context();
    const BuildInputs in = prepare_build(f.o, c);
    const PlannedBuild p = plan_build(in, f.o);
    const std::string build = (f.tmp / "build.x1").string(), rt = (f.tmp / "rt").string();
    GraphDirs dirs = placeholder_dirs();
    dirs.build_dir = build;
    dirs.runtime_include = rt + "/include";
    dirs.runtime_object = rt + "/obj/bekc_rt.o";
    // The directories alone: the same steps, each with the build's paths.
    auto planned_text = [&](std::string text) {
        using Swap = std::pair<std::string, std::string>;
        for (const auto& [real, placeholder] :
             {Swap{build, "/$BEKC_BUILD"}, Swap{rt, "/$BEKC_RUNTIME"}})
            for (size_t at; (at = text.find(real)) != std::string::npos;)
                text.replace(at, real.size(), placeholder);
        return text;
    };
    const BuildGraph filled = fill_in(p.recipe, dirs).value();
    REQUIRE(filled.steps.size() == p.graph.steps.size());
    auto planned_list = [&](std::vector<std::string> list) {
        for (auto& item : list) item = planned_text(item);
        return list;
    };
    for (size_t i = 0; i < filled.steps.size(); ++i) {
        const Step &built = filled.steps[i], &planned = p.graph.steps[i];
        CHECK(built.kind == planned.kind);
        CHECK(planned_list(built.command.argv) == planned.command.argv);
        CHECK(planned_list(built.command.inputs) == planned.command.inputs);
        CHECK(planned_list(built.command.outputs) == planned.command.outputs);
        CHECK(planned_text(built.depfile.string()) == planned.depfile.string());
        CHECK(planned_text(built.content) == planned.content);
        CHECK(built.after == planned.after);
    }
    // The launcher goes in front of the compiles; the runtime the cache
    // holds is not made again; nothing else changes.
    dirs.launcher = true;
    dirs.runtime_headers_ready = dirs.runtime_object_ready = true;
    const BuildGraph launched = fill_in(p.recipe, dirs).value();
    REQUIRE(launched.steps.size() == p.graph.steps.size() - 2);
    size_t compiles = 0;
    for (const Step& s : launched.steps) {
        CHECK(s.kind != StepKind::RuntimeHeaders);
        CHECK(s.kind != StepKind::RuntimeObject);
        if (s.kind != StepKind::Compile) continue;
        ++compiles;
        CHECK(s.command.argv.front() == *f.o.launcher);
    }
    CHECK(compiles == 2);
}

namespace {

// The portable key (graph/keys.hpp) of the fixture's build.
std::string portable_key_of(DriverFixture& f) {
    BuildContext c = f.context();
    BuildInputs in = prepare_build(f.o, c);
    return portable_key_builder(in, f.o).digest();
}

}  // namespace

TEST_CASE("portable key: the library's options change it; the toolchain, archs and caches do not",
          "[key][property][portable]") {
    std::vector<std::pair<std::string, Change>> changing = library_option_changes();
    changing.insert(changing.end(),
                    {
                        {"--cudart", [](auto& f) { f.o.flags.cudart = "static"; }},
                        {"--function", [](auto& f) { f.o.functions = {"extra"}; }},
                        {"input order", [](auto& f) { std::swap(f.o.inputs[0], f.o.inputs[1]); }},
                        {"an environment variable the tools read",
                         [](auto& f) { f.tool_env["CPATH"] = "/opt/elsewhere"; }},
                    });
    const std::vector<std::pair<std::string, Change>> neutral = {
        {"--arch", [](auto& f) { f.o.arch = "sm_80,sm_90"; }},
        {"--cxx", [](auto& f) { f.o.cxx = (f.tmp / "bin/clang++").string(); }},
        {"--nvcc", [](auto& f) { f.o.nvcc = (f.tmp / "bin/nvcc-other").string(); }},
        {"--xla-include", [](auto& f) { f.o.xla_include = (f.tmp / "xla").string(); }},
        {"-j", [](auto& f) { f.o.jobs = 7; }},
        {"--json", [](auto& f) { f.o.json = true; }},
        {"--remote-cache", [](auto& f) { f.o.remote_cache = "http://127.0.0.1:9/x"; }},
    };
    DriverFixture f;
    const Reset reset{f};
    const std::string base = portable_key_of(f);
    for (const auto& [what, change] : changing) {
        DYNAMIC_SECTION("changes: " << what) {
            reset();
            change(f);
            CHECK(portable_key_of(f) != base);
        }
    }
    for (const auto& [what, change] : neutral) {
        DYNAMIC_SECTION("leaves alone: " << what) {
            reset();
            change(f);
            CHECK(portable_key_of(f) == base);
        }
    }
    SECTION("the host compiler's binary, same path") {
        test::write_file(f.tmp / "bin/g++", "a rebuilt fake host compiler");
        CHECK(portable_key_of(f) == base);
    }
}
