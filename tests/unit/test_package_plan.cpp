// What `bekc build <package dir>` builds (package/package_plan): the module
// name of each kernel file and the flags of its load, from the package's own
// Python source, why a file is only checked or not built, and what below the
// package cannot be read.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../helpers/temp_dir.hpp"
#include "package/package_build.hpp"
#include "package/package_plan.hpp"

using namespace bekc;

namespace {

// A package directory: include/brainevent/common.h, then the given files.
struct FakePackage {
    test::TempDir tmp;
    fs::path root;

    explicit FakePackage(const std::vector<std::pair<std::string, std::string>>& files) {
        root = tmp / "site" / "pkg";
        test::write_file(root / "include/brainevent/common.h", "#pragma once\n");
        for (const auto& [rel, text] : files) test::write_file(root / rel, text);
        root = resolved_path(root);
    }

    // "rel as name" for each module, "rel not built" for each skipped file.
    std::vector<std::string> modules(const PackagePlan& plan) const {
        std::vector<std::string> out;
        for (const auto& m : plan.modules)
            out.push_back(m.source.lexically_relative(root).generic_string() + " as " + m.name +
                          (m.load_site.empty() ? " (checked)" : " (" + m.load_site + ")"));
        for (const auto& s : plan.skipped)
            out.push_back(s.source.lexically_relative(root).generic_string() + " not built");
        return out;
    }
};

using Files = std::vector<std::pair<std::string, std::string>>;

const PackageModule& module_of(const PackagePlan& plan, const std::string& name) {
    auto it = std::find_if(plan.modules.begin(), plan.modules.end(),
                           [&](const PackageModule& m) { return m.name == name; });
    REQUIRE(it != plan.modules.end());
    return *it;
}

}  // namespace

TEST_CASE("package plan: each file under the name the package loads it by", "[package]") {
    FakePackage pkg(Files{
        {"_tcsr/dt2t.py",
         "load_cuda_file(Path(__file__).with_suffix(\".cu\"), name=\"tcsr_dt2t\")\n"},
        {"_tcsr/dt2t.cu", ""},
        {"_tcsr/bpsa/bpsa.py",
         "m = load_cuda_file(\n    Path(__file__).with_name(\"bpsa_mm.cu\"),\n"
         "    name=\"tcsr_bpsa\",\n    allow_cuda_graph=False,\n)\n"},
        {"_tcsr/bpsa/bpsa_mm.cu", ""},
        // No name: brainevent's default, the file's stem.
        {"_event/compact.py", "load_cpp_file(Path(__file__).parent / 'compact.cpp')\n"},
        {"_event/compact.cpp", ""},
        {"_event/compact_test.py",
         "load_cpp_file(Path(__file__).parent / 'compact.cpp', "
         "name='from_a_test')\n"},
    });
    PackagePlan plan = plan_package(pkg.root);
    CHECK(pkg.modules(plan) ==
          std::vector<std::string>{"_event/compact.cpp as compact (_event/compact.py:1)",
                                   "_tcsr/bpsa/bpsa_mm.cu as tcsr_bpsa (_tcsr/bpsa/bpsa.py:1)",
                                   "_tcsr/dt2t.cu as tcsr_dt2t (_tcsr/dt2t.py:1)"});
    CHECK(plan.files == 3);
    CHECK(plan.summary() == "bekc: package " + pkg.root.string() +
                                ": 3 kernel files, 3 modules as the package loads them, 0 only "
                                "checked (their first use compiles)");
    CHECK(plan.notes().empty());
}

TEST_CASE("package plan: two files never share a module name", "[package]") {
    FakePackage pkg(Files{
        // brainevent 0.3.0: the same stems in _csr and _tcsr, loaded under
        // computed names with extra flags, or not at all.
        {"_csr/binary.py",
         "load_cuda_file(Path(__file__).parent.joinpath('hybrid.cu'),\n"
         "    name=_mod, extra_cuda_cflags=flags(cfg))\n"},
        {"_csr/hybrid.cu", ""},
        {"_csr/csr_to_csc.cu", ""},
        {"_misc.py",
         "load_cuda_file(Path(__file__).resolve().parent / '_csr' / "
         "'csr_to_csc.cu', name='csr_to_csc')\n"},
        {"_tcsr/binary.py",
         "load_cuda_file(Path(__file__).parent.joinpath(\n"
         "    'hybrid.cu' if homo else 'other.cu'), name=m)\n"},
        {"_tcsr/hybrid.cu", ""},
        {"_tcsr/csr_to_csc.cu", ""},
        // Two files loaded under one literal name: neither is built under it.
        {"_a/x.py", "load_cpp_file(Path(__file__).parent / 'k.cpp', name='same')\n"},
        {"_a/k.cpp", ""},
        {"_b/x.py", "load_cpp_file(Path(__file__).parent / 'k.cpp', name='same')\n"},
        {"_b/k.cpp", ""},
        // A check name that a literal load already takes.
        {"_c/d.py", "load_cpp_file(Path(__file__).parent / 'e.cpp', name='c_d')\n"},
        {"_c/e.cpp", ""},
        {"_c/d.cpp", ""},
    });
    PackagePlan plan = plan_package(pkg.root);
    CHECK(pkg.modules(plan) == std::vector<std::string>{
                                   "_a/k.cpp as a_k (checked)",
                                   "_b/k.cpp as b_k (checked)",
                                   "_c/e.cpp as c_d (_c/d.py:1)",
                                   "_csr/csr_to_csc.cu as csr_to_csc (_misc.py:1)",
                                   "_csr/hybrid.cu as csr_hybrid (checked)",
                                   "_tcsr/csr_to_csc.cu as tcsr_csr_to_csc (checked)",
                                   "_tcsr/hybrid.cu as tcsr_hybrid (checked)",
                                   "_c/d.cpp not built",
                               });
    std::vector<std::string> names;
    for (const auto& m : plan.modules) names.push_back(m.name);
    std::sort(names.begin(), names.end());
    CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());

    CHECK(module_of(plan, "csr_hybrid").why_check ==
          "the package loads it only in ways a prebuild cannot reproduce (_csr/binary.py:1: a "
          "computed name and extra_cuda_cflags)");
    CHECK(module_of(plan, "tcsr_hybrid").why_check ==
          "the package loads it only in ways a prebuild cannot reproduce (_tcsr/binary.py:1: a "
          "computed path and a computed name)");
    CHECK(module_of(plan, "tcsr_csr_to_csc").why_check ==
          "no load_cuda_file or load_cpp_file call of the package names it by a path bekc can "
          "evaluate");
    CHECK(module_of(plan, "a_k").why_check ==
          "the package loads it only in ways a prebuild cannot reproduce (the package loads "
          "_a/k.cpp (_a/x.py:1), _b/k.cpp (_b/x.py:1) all as same)");
    REQUIRE(plan.skipped.size() == 1);
    CHECK(plan.skipped[0].reason ==
          "no load_cuda_file or load_cpp_file call of the package names it by a path bekc can "
          "evaluate; and its check name c_d is taken by another module");
    CHECK(plan.summary() == "bekc: package " + pkg.root.string() +
                                ": 8 kernel files, 2 modules as the package loads them, 5 only "
                                "checked (their first use compiles), 1 not built");
    CHECK(plan.notes().size() == 6);
    CHECK(plan.notes().back() == "bekc: note: _c/d.cpp is not built: " + plan.skipped[0].reason);
}

TEST_CASE("package plan: check names", "[package]") {
    CHECK(check_module_name("_tcsr/csr_to_csc.cu") == "tcsr_csr_to_csc");
    CHECK(check_module_name("_tcsr/tile_mm/binary_csrmm_tile.cu") ==
          "tcsr_tile_mm_binary_csrmm_tile");
    CHECK(check_module_name("a-b/c.d.cu") == "a_b_c_d");
    CHECK(check_module_name("9/x.cu") == "m_9_x");
    CHECK(check_module_name("__/___.cu") == "m_");
}

TEST_CASE("package defect: a quoted header the package does not ship", "[package]") {
    test::TempDir tmp;
    const fs::path pkg = tmp / "pkg";
    test::write_file(pkg / "include/brainevent/common.h", "#pragma once\n");
    test::write_file(
        pkg / "_t/tile.cu",
        "#include \"brainevent/common.h\"\n#include <vector>\n#include \"bn_tile.cuh\"\n");
    test::write_file(pkg / "_t/shipped.cu", "#include \"elsewhere.cuh\"\n");
    test::write_file(pkg / "_u/elsewhere.cuh", "");
    const std::string gcc = "tile.cu:3:10: fatal error: bn_tile.cuh: No such file or directory\n";
    CHECK(package_defect(pkg, pkg / "_t/tile.cu", {pkg / "include"}, gcc) ==
          "the package's defect: it includes \"bn_tile.cuh\" (line 3), which the package does "
          "not ship, so the package's own loader cannot build it either");
    // The output does not name the header: another failure.
    CHECK(package_defect(pkg, pkg / "_t/tile.cu", {pkg / "include"}, "error: x undeclared\n")
              .empty());
    // The package has the header, somewhere its loader may add with -I.
    CHECK(package_defect(pkg, pkg / "_t/shipped.cu", {pkg / "include"},
                         "fatal error: elsewhere.cuh: No such file or directory")
              .empty());
}

namespace {

// Makes `parts` directories, each inside the one before, below `dir`,
// relative to descriptors, so the whole path may be longer than PATH_MAX;
// removes them again in the same way.
struct NestedDirs {
    fs::path dir;
    std::vector<std::string> parts;

    NestedDirs(fs::path at, std::vector<std::string> names)
        : dir(std::move(at)), parts(std::move(names)) {
        fs::create_directories(dir);
        int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
        for (const auto& p : parts) {
            REQUIRE(::mkdirat(fd, p.c_str(), 0755) == 0);
            int next = ::openat(fd, p.c_str(), O_RDONLY | O_DIRECTORY);
            ::close(fd);
            fd = next;
        }
        REQUIRE(fd >= 0);
        int file = ::openat(fd, "x.cpp", O_WRONLY | O_CREAT, 0644);
        ::close(file);
        ::close(fd);
    }
    ~NestedDirs() { remove(::open(dir.c_str(), O_RDONLY | O_DIRECTORY), 0); }

    void remove(int fd, size_t level) {
        if (level == parts.size()) {
            ::unlinkat(fd, "x.cpp", 0);
        } else {
            remove(::openat(fd, parts[level].c_str(), O_RDONLY | O_DIRECTORY), level + 1);
            ::unlinkat(fd, parts[level].c_str(), AT_REMOVEDIR);
        }
        ::close(fd);
    }
};

// The process may hold at most `n` descriptors at once while this lives.
struct OpenFilesLimit {
    struct rlimit old {};
    explicit OpenFilesLimit(rlim_t n) {
        REQUIRE(::getrlimit(RLIMIT_NOFILE, &old) == 0);
        struct rlimit lower = old;
        lower.rlim_cur = n;
        REQUIRE(::setrlimit(RLIMIT_NOFILE, &lower) == 0);
    }
    ~OpenFilesLimit() { ::setrlimit(RLIMIT_NOFILE, &old); }
};

}  // namespace

TEST_CASE("package plan: a directory that cannot be read is named, and the rest is read",
          "[package]") {
    FakePackage pkg(Files{{"_a/one.cpp", ""}, {"_c/three.cpp", ""}});
    // A path longer than PATH_MAX below _b: that directory cannot be opened.
    NestedDirs deep(pkg.root / "_b", std::vector<std::string>(20, std::string(250, 'n')));
    PackagePlan plan = plan_package(pkg.root);
    CHECK(pkg.modules(plan) == std::vector<std::string>{"_a/one.cpp as a_one (checked)",
                                                        "_c/three.cpp as c_three (checked)"});
    REQUIRE(plan.unread.size() == 1);
    const std::string unread = plan.unread[0].path.lexically_relative(pkg.root).generic_string();
    CHECK(unread.rfind("_b/nnn", 0) == 0);
    CHECK(plan.unread[0].reason.find("File name too long") != std::string::npos);
    CHECK(plan.summary() == "bekc: package " + pkg.root.string() +
                                ": 2 kernel files, 0 modules as the package loads them, 2 only "
                                "checked (their first use compiles), 1 path bekc cannot read");
    CHECK(plan.notes().back() == "bekc: note: " + unread + " cannot be read (" +
                                     plan.unread[0].reason +
                                     "): what is below it is neither built nor checked");
}

TEST_CASE("package plan: directories nested deeper than the open files limit are read whole",
          "[package]") {
    FakePackage pkg(Files{{"_a/one.cpp", ""}, {"_c/three.cpp", ""}});
    NestedDirs deep(pkg.root / "_b", std::vector<std::string>(100, "d"));
    OpenFilesLimit limit(64);
    auto found = files_below(pkg.root, [](const fs::path& p) { return p.extension() == ".cpp"; });
    CHECK(found.files.size() == 3);
    CHECK(found.unread.empty());
}

TEST_CASE("package plan: links are not followed, in or out of the package", "[package]") {
    FakePackage pkg(Files{{"_a/one.cpp", ""}});
    test::write_file(pkg.tmp / "outside" / "k.cpp", "");
    fs::create_directory_symlink(pkg.tmp / "outside", pkg.root / "_out");
    fs::create_symlink(pkg.tmp / "outside" / "k.cpp", pkg.root / "_a" / "link.cpp");
    PackagePlan plan = plan_package(pkg.root);
    CHECK(pkg.modules(plan) == std::vector<std::string>{"_a/one.cpp as a_one (checked)"});
    CHECK(plan.unread.empty());
}

TEST_CASE("package plan: flags a load passes as literals are the module's", "[package]") {
    FakePackage pkg(Files{
        {"_c/load.py",
         "load_cpp_file(Path(__file__).parent / 'c.cpp', name='c',\n"
         "    extra_cflags=['-DSCALE=2', \"-O1\"], extra_ldflags=('-lm',))\n"},
        {"_c/c.cpp", ""},
        {"_g/load.py",
         "load_cuda_file(Path(__file__).parent / 'g.cu', name='g', extra_cuda_cflags='-lineinfo',\n"
         "    extra_ldflags=['-lcublas'], verbose=False)\n"
         // What the loader refuses, or does not take, is not reproduced.
         "load_cuda_file(Path(__file__).parent / 'h.cu', extra_ldflags=['-Wl,-rpath,/x'])\n"
         "load_cuda_file(Path(__file__).parent / 'i.cu', extra_cflags=['-DX'])\n"
         "load_cpp_file(Path(__file__).parent / 'j.cpp', extra_cflags=['-DX', flag])\n"},
        {"_g/g.cu", ""},
        {"_g/h.cu", ""},
        {"_g/i.cu", ""},
        {"_g/j.cpp", ""},
    });
    PackagePlan plan = plan_package(pkg.root);
    CHECK(pkg.modules(plan) == std::vector<std::string>{
                                   "_c/c.cpp as c (_c/load.py:1)",
                                   "_g/g.cu as g (_g/load.py:1)",
                                   "_g/h.cu as g_h (checked)",
                                   "_g/i.cu as g_i (checked)",
                                   "_g/j.cpp as g_j (checked)",
                               });
    const PackageModule& c = module_of(plan, "c");
    CHECK(c.flags.cxx_flags == std::vector<std::string>{"-DSCALE=2", "-O1"});
    CHECK(c.flags.ldflags == std::vector<std::string>{"-lm"});
    const PackageModule& g = module_of(plan, "g");
    CHECK(g.flags.cuda_flags == std::vector<std::string>{"-lineinfo"});
    CHECK(g.flags.linker_args == std::vector<std::string>{"-lcublas"});
    CHECK(module_of(plan, "g_h").why_check ==
          "the package loads it only in ways a prebuild cannot reproduce (_g/load.py:3: "
          "extra_ldflags entry '-Wl,-rpath,/x', which the loader refuses)");
    CHECK(module_of(plan, "g_i").why_check ==
          "the package loads it only in ways a prebuild cannot reproduce (_g/load.py:4: "
          "extra_cflags)");
    CHECK(module_of(plan, "g_j").why_check ==
          "the package loads it only in ways a prebuild cannot reproduce (_g/load.py:5: "
          "extra_cflags)");

    // The builds: the load's flags; a file only checked links without
    // --no-undefined, so a library its load would link cannot fail it.
    BuildOptions o;
    o.inputs = {pkg.root.string()};
    o.cache_dir = (pkg.tmp / "cache").string();
    auto env = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
    auto commands = package_commands(o, plan.modules, "/bin/bekc", 2, std::nullopt, env);
    REQUIRE(commands.size() == 5);
    auto has = [](const Command& cmd, const std::string& arg) {
        return std::count(cmd.argv.begin(), cmd.argv.end(), arg) > 0;
    };
    CHECK(has(commands[0], "--cxx-flag=-DSCALE=2"));
    CHECK(has(commands[0], "--ldflag=-lm"));
    CHECK_FALSE(has(commands[0], "--linker-arg=-zundefs"));
    CHECK(has(commands[1], "--cuda-flag=-lineinfo"));
    CHECK(has(commands[1], "--linker-arg=-lcublas"));
    for (size_t i = 2; i < 5; ++i) CHECK(has(commands[i], "--linker-arg=-zundefs"));
}
