// `bekc build`'s command line both ways (prep/build_args): the arguments
// `to_argv` writes for a BuildOptions value parse, through the CLI's own
// option definitions, back to that value, for every field and for values
// that look like options, hold '=', ',' or spaces; and the package prebuild's
// child commands are such arguments.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../helpers/temp_dir.hpp"
#include "package/package_build.hpp"
#include "prep/build_args.hpp"

using namespace bekc;

namespace {

// What `bekc build ARGS` fills in, parsed as the CLI parses it.
BuildOptions parsed_by_cli(const std::vector<std::string>& args) {
    CLI::App app{"bekc"};
    BuildOptions parsed;
    add_build_options(*app.add_subcommand("build"), parsed);
    std::vector<const char*> argv = {"bekc", "build"};
    for (const auto& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
    return parsed;
}

// Text values a user may pass: options-looking, with '=', ',', spaces, UTF-8.
const std::vector<std::string> kArgTexts = {"a",        "-lineinfo", "--expt-relaxed-constexpr",
                                            "x=y",      "a,b",       "with space",
                                            "/abs/dir", "rel/dir",   "-Xptxas=-v",
                                            "ünï",      "--",        "-",
                                            "=lead",    "trail="};

// One setter per field of BuildOptions: each gives its field a value other
// than the default, drawn from `pick`.
using TextPick = std::function<std::string()>;
using OptionSetter = std::function<void(BuildOptions&, std::mt19937&, const TextPick&)>;

std::vector<std::string> some_texts(std::mt19937& rng, const TextPick& pick) {
    std::vector<std::string> out(1 + rng() % 3);
    for (auto& s : out) s = pick();
    return out;
}

const std::vector<std::pair<const char*, OptionSetter>>& option_setters() {
    static const std::vector<std::pair<const char*, OptionSetter>> all = {
        {"inputs",
         [](BuildOptions& o, std::mt19937& r, const TextPick& p) { o.inputs = some_texts(r, p); }},
        {"name", [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.name = p(); }},
        {"target_prefix",
         [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.target_prefix = p(); }},
        {"opt_level", [](BuildOptions& o, std::mt19937& r,
                         const TextPick&) { o.flags.opt_level = int(r() % 3); }},
        {"fast_math",
         [](BuildOptions& o, std::mt19937&, const TextPick&) { o.flags.fast_math = true; }},
        {"cxx_std",
         [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.flags.cxx_std = p(); }},
        {"include_dirs", [](BuildOptions& o, std::mt19937& r,
                            const TextPick& p) { o.flags.include_dirs = some_texts(r, p); }},
        {"defines", [](BuildOptions& o, std::mt19937& r,
                       const TextPick& p) { o.flags.defines = some_texts(r, p); }},
        {"cuda_flags", [](BuildOptions& o, std::mt19937& r,
                          const TextPick& p) { o.flags.cuda_flags = some_texts(r, p); }},
        {"cxx_flags", [](BuildOptions& o, std::mt19937& r,
                         const TextPick& p) { o.flags.cxx_flags = some_texts(r, p); }},
        {"ldflags", [](BuildOptions& o, std::mt19937& r,
                       const TextPick& p) { o.flags.ldflags = some_texts(r, p); }},
        {"linker_args", [](BuildOptions& o, std::mt19937& r,
                           const TextPick& p) { o.flags.linker_args = some_texts(r, p); }},
        {"arch",
         [](BuildOptions& o, std::mt19937& r, const TextPick& p) {
             const std::vector<std::string> archs = {"native", "sm_90,80", "8.6", "sm_90a"};
             o.arch = r() % 2 ? archs[r() % archs.size()] : p();
         }},
        {"xla_include",
         [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.xla_include = p(); }},
        {"functions", [](BuildOptions& o, std::mt19937& r,
                         const TextPick& p) { o.functions = some_texts(r, p); }},
        {"functions_json",
         [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.functions_json = p(); }},
        {"no_cuda_graph",
         [](BuildOptions& o, std::mt19937&, const TextPick&) { o.no_cuda_graph = true; }},
        {"force", [](BuildOptions& o, std::mt19937&, const TextPick&) { o.force = true; }},
        {"allow_default_stream",
         [](BuildOptions& o, std::mt19937&, const TextPick&) { o.allow_default_stream = true; }},
        {"cache_dir", [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.cache_dir = p(); }},
        {"output_dir",
         [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.output_dir = p(); }},
        {"depfile", [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.depfile = p(); }},
        {"compile_commands",
         [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.compile_commands = p(); }},
        {"nvcc", [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.nvcc = p(); }},
        {"cxx", [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.cxx = p(); }},
        {"nvcc_prefer",
         [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.nvcc_prefer = p(); }},
        {"brainevent_nvcc",
         [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.brainevent_nvcc = p(); }},
        {"python_sites", [](BuildOptions& o, std::mt19937& r,
                            const TextPick& p) { o.python_sites = some_texts(r, p); }},
        {"launcher", [](BuildOptions& o, std::mt19937&, const TextPick& p) { o.launcher = p(); }},
        // The one option whose empty value means something: no remote cache.
        {"remote_cache", [](BuildOptions& o, std::mt19937& r,
                            const TextPick& p) { o.remote_cache = r() % 3 ? p() : std::string(); }},
        {"read_only_caches",
         [](BuildOptions& o, std::mt19937& r, const TextPick& p) {
             o.read_only_caches = r() % 3 ? p() : std::string();
         }},
        {"remote_read_only",
         [](BuildOptions& o, std::mt19937&, const TextPick&) { o.remote_read_only = true; }},
        {"jobs",
         [](BuildOptions& o, std::mt19937& r, const TextPick&) { o.jobs = 1 + int(r() % 64); }},
        {"json", [](BuildOptions& o, std::mt19937&, const TextPick&) { o.json = true; }},
        {"verbose", [](BuildOptions& o, std::mt19937&, const TextPick&) { o.verbose = true; }},
        {"quiet", [](BuildOptions& o, std::mt19937&, const TextPick&) { o.quiet = true; }},
        {"dry_run", [](BuildOptions& o, std::mt19937&, const TextPick&) { o.dry_run = true; }},
        {"explain_key",
         [](BuildOptions& o, std::mt19937&, const TextPick&) { o.explain_key = true; }},
    };
    return all;
}

std::string shown_argv(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) out += (out.empty() ? "'" : " '") + a + "'";
    return out;
}

}  // namespace

TEST_CASE("every field of BuildOptions survives to_argv and the CLI's parse alone",
          "[build_args]") {
    std::mt19937 rng(29);
    const TextPick pick = [&rng] { return kArgTexts[rng() % kArgTexts.size()]; };
    for (const auto& [field, set] : option_setters()) {
        for (int round = 0; round < 8; ++round) {
            BuildOptions o;
            o.inputs = {"k.cu"};  // required
            set(o, rng, pick);
            const auto argv = to_argv(o);
            INFO(field << ": " << shown_argv(argv));
            // The setter changed the field (else the test proves nothing for it).
            BuildOptions untouched;
            untouched.inputs = o.inputs;
            if (std::string(field) != "inputs") CHECK_FALSE(o == untouched);
            CHECK(parsed_by_cli(argv) == o);
        }
    }
}

TEST_CASE("many combinations of options survive to_argv and the CLI's parse", "[build_args]") {
    std::mt19937 rng(2029);
    const TextPick pick = [&rng] { return kArgTexts[rng() % kArgTexts.size()]; };
    for (int round = 0; round < 400; ++round) {
        BuildOptions o;
        o.inputs = {"k.cu"};
        for (const auto& [field, set] : option_setters())
            if (rng() % 2) set(o, rng, pick);
        const auto argv = to_argv(o);
        INFO(shown_argv(argv));
        CHECK(parsed_by_cli(argv) == o);
        // parse_build_args, which the replay and the in-process lookup use,
        // reads the arguments as the CLI does.
        CHECK(bekc::parse_build_args(argv) == o);
    }
}

TEST_CASE("parse_build_args gives CLI11's message for arguments bekc build does not take",
          "[build_args]") {
    auto unknown = bekc::parse_build_args({"k.cu", "--no-such-option"});
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().find("--no-such-option") != std::string::npos);
    CHECK_FALSE(bekc::parse_build_args({}));  // no input
}

TEST_CASE("to_argv writes defaults as nothing and values in the --option=VALUE form",
          "[build_args]") {
    BuildOptions o;
    o.inputs = {"/src/k.cu"};
    CHECK(to_argv(o) == std::vector<std::string>{"/src/k.cu"});
    o.name = "my-kernels";
    o.flags.include_dirs = {"/inc"};
    o.flags.cuda_flags = {"-lineinfo"};
    o.remote_cache = "";
    o.jobs = 2;
    CHECK(to_argv(o) == std::vector<std::string>{"/src/k.cu", "--name=my-kernels", "-I/inc",
                                                 "--cuda-flag=-lineinfo", "--remote-cache", "",
                                                 "-j2"});
    // An input that looks like an option comes after `--`.
    o = BuildOptions{};
    o.inputs = {"-k.cu", "b.cu"};
    o.force = true;
    CHECK(to_argv(o) == std::vector<std::string>{"--force", "--", "-k.cu", "b.cu"});
}

TEST_CASE("the package prebuild's child commands parse to the options each module builds with",
          "[build_args]") {
    test::TempDir tmp;
    const fs::path package = tmp / "pkg";
    test::write_file(package / "include/brainevent/common.h", "#pragma once\n");
    test::write_file(package / "ops.cu", "");
    BuildOptions o;
    o.inputs = {package.string()};
    o.arch = "8.6,sm_90";
    o.flags.opt_level = 2;
    o.flags.include_dirs = {"/extra/inc"};
    o.flags.cuda_flags = {"-lineinfo"};
    o.xla_include = (tmp / "xla").string();
    fs::create_directories(tmp / "xla/xla/ffi/api");
    test::write_file(tmp / "xla/xla/ffi/api/ffi.h", "");
    o.cache_dir = (tmp / "cache").string();
    o.remote_cache = "";
    o.force = true;
    o.depfile = "ignored.d";  // per build, not passed to the children
    const std::vector<PackageModule> modules = {{package / "ops.cu", "my-ops", "ops.py:3", "", {}}};
    const auto commands = package_commands(o, modules, "/bin/bekc", 3, std::nullopt, system_env());
    REQUIRE(commands.size() == 1);
    const auto& argv = commands[0].argv;
    REQUIRE(argv.size() > 2);
    CHECK(argv[0] == "/bin/bekc");
    CHECK(argv[1] == "build");
    BuildOptions want;
    want.inputs = {(package / "ops.cu").string()};
    want.name = "my-ops";
    want.arch = o.arch;
    want.flags = o.flags;
    want.flags.include_dirs = {"/extra/inc", resolved_path(package / "include").string()};
    want.xla_include = resolved_path(tmp / "xla").string();
    want.cache_dir = resolved_path(tmp / "cache").string();
    want.remote_cache = "";
    want.force = true;
    want.json = true;
    want.quiet = true;
    want.jobs = 3;
    INFO(shown_argv(argv));
    CHECK(parsed_by_cli({argv.begin() + 2, argv.end()}) == want);
    CHECK(commands[0].slots == 1);  // further slots come from the shared jobserver
    CHECK(commands[0].env_overrides.empty());
}
