// Toolchain discovery (lib/run/toolchain) with a stubbed environment, PATH
// and filesystem: the search order of SPEC §4 and the not-found errors.
//
// Found tools are identified by stat(2) (size, mtime), so every "executable"
// the stub reports is also a real file in a temporary directory.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../helpers/temp_dir.hpp"
#include "../helpers/text.hpp"
#include "run/toolchain.hpp"
#include "util/error.hpp"

using namespace bekc;
namespace fs = std::filesystem;

using test::contains;

namespace {

// A fake machine: environment variables, PATH directories and a set of
// executable files (created for real under a temporary directory).
struct FakeSystem {
    test::TempDir root;
    std::map<std::string, std::string> env;
    std::vector<fs::path> path_dirs;
    std::set<fs::path> executables;
    std::vector<std::string> looked_up;  // names passed to find(), in order

    // Creates an executable file at root/rel and returns its absolute path.
    fs::path add_exe(const std::string& rel, const std::string& content = "#!/bin/sh\n") {
        fs::path p = root / rel;
        test::write_file(p, content);
        fs::permissions(p, fs::perms::owner_all, fs::perm_options::add);
        executables.insert(p);
        return p;
    }
    fs::path dir(const std::string& rel) const { return root / rel; }

    ToolLookup lookup() {
        ToolLookup l;
        l.env = [this](std::string_view name) -> std::optional<std::string> {
            auto it = env.find(std::string(name));
            if (it == env.end()) return std::nullopt;
            return it->second;
        };
        l.executable = [this](const fs::path& p) { return executables.count(p) > 0; };
        l.find = [this](const std::string& name) -> std::optional<fs::path> {
            looked_up.push_back(name);
            for (const auto& d : path_dirs)
                if (executables.count(d / name)) return d / name;
            return std::nullopt;
        };
        return l;
    }
};

fs::path canon(const fs::path& p) {
    return fs::canonical(p);
}

// Runs `f`, which must throw FatalError; returns its message and checks the
// exit code is the toolchain one (3).
template <typename F>
std::string toolchain_error(F&& f) {
    try {
        f();
    } catch (const FatalError& e) {
        CHECK(e.exit_code() == kExitToolchain);
        return e.what();
    }
    FAIL("expected a FatalError");
    return "";
}

}  // namespace

// ----------------------------------------------------------------------- nvcc

TEST_CASE("nvcc: --nvcc wins over CUDA_HOME, CUDA_PATH and PATH", "[toolchain]") {
    FakeSystem sys;
    fs::path flag = sys.add_exe("flag/nvcc");
    sys.add_exe("home/bin/nvcc");
    sys.add_exe("cpath/bin/nvcc");
    sys.add_exe("pathdir/nvcc");
    sys.env["CUDA_HOME"] = sys.dir("home").string();
    sys.env["CUDA_PATH"] = sys.dir("cpath").string();
    sys.path_dirs = {sys.dir("pathdir")};
    Tool t = find_nvcc(flag.string(), sys.lookup());
    CHECK(t.path == canon(flag));
}

TEST_CASE("nvcc: --nvcc with a bare name is looked up on PATH", "[toolchain]") {
    FakeSystem sys;
    fs::path on_path = sys.add_exe("pathdir/nvcc-13");
    sys.path_dirs = {sys.dir("pathdir")};
    Tool t = find_nvcc(std::string("nvcc-13"), sys.lookup());
    CHECK(t.path == canon(on_path));
}

TEST_CASE("nvcc: a --nvcc that does not exist is an error, with no fallback", "[toolchain]") {
    FakeSystem sys;
    sys.add_exe("home/bin/nvcc");
    sys.env["CUDA_HOME"] = sys.dir("home").string();
    std::string missing = (sys.root / "nope" / "nvcc").string();
    std::string msg = toolchain_error([&] { find_nvcc(missing, sys.lookup()); });
    CHECK(contains(msg, "--nvcc"));
    CHECK(contains(msg, missing));
}

TEST_CASE("nvcc: $CUDA_HOME wins over $CUDA_PATH, PATH and /usr/local/cuda", "[toolchain]") {
    FakeSystem sys;
    fs::path home = sys.add_exe("home/bin/nvcc");
    sys.add_exe("cpath/bin/nvcc");
    sys.add_exe("pathdir/nvcc");
    sys.env["CUDA_HOME"] = sys.dir("home").string();
    sys.env["CUDA_PATH"] = sys.dir("cpath").string();
    sys.path_dirs = {sys.dir("pathdir")};
    CHECK(find_nvcc(std::nullopt, sys.lookup()).path == canon(home));
}

TEST_CASE("nvcc: $CUDA_PATH is used when $CUDA_HOME is unset or has no nvcc", "[toolchain]") {
    FakeSystem sys;
    fs::path cpath = sys.add_exe("cpath/bin/nvcc");
    sys.add_exe("pathdir/nvcc");
    sys.env["CUDA_PATH"] = sys.dir("cpath").string();
    sys.path_dirs = {sys.dir("pathdir")};
    CHECK(find_nvcc(std::nullopt, sys.lookup()).path == canon(cpath));
    fs::create_directories(sys.dir("empty_home/bin"));
    sys.env["CUDA_HOME"] = sys.dir("empty_home").string();
    CHECK(find_nvcc(std::nullopt, sys.lookup()).path == canon(cpath));
}

TEST_CASE("nvcc: PATH is used before /usr/local/cuda", "[toolchain]") {
    FakeSystem sys;
    fs::path on_path = sys.add_exe("pathdir/nvcc");
    sys.path_dirs = {sys.dir("other"), sys.dir("pathdir")};
    sys.executables.insert("/usr/local/cuda/bin/nvcc");
    CHECK(find_nvcc(std::nullopt, sys.lookup()).path == canon(on_path));
    CHECK(std::count(sys.looked_up.begin(), sys.looked_up.end(), "nvcc") == 1);
}

TEST_CASE("nvcc: /usr/local/cuda/bin/nvcc is the last resort", "[toolchain]") {
    FakeSystem sys;
    sys.executables.insert("/usr/local/cuda/bin/nvcc");
    // The stub says it is executable; identifying it stats the real file, so
    // on a machine without CUDA the error still names the path it chose.
    try {
        Tool t = find_nvcc(std::nullopt, sys.lookup());
        CHECK(t.path == "/usr/local/cuda/bin/nvcc");  // run as found, symlink kept
        CHECK(t.canonical == canon("/usr/local/cuda/bin/nvcc"));
    } catch (const FatalError& e) {
        CHECK(contains(e.what(), "/usr/local/cuda/bin/nvcc"));
    }
}

TEST_CASE("nvcc: not found says what was searched and how to fix it", "[toolchain]") {
    FakeSystem sys;
    sys.env["CUDA_HOME"] = sys.dir("home").string();
    sys.env["CUDA_PATH"] = sys.dir("cpath").string();
    sys.path_dirs = {sys.dir("pathdir")};
    std::string msg = toolchain_error([&] { find_nvcc(std::nullopt, sys.lookup()); });
    INFO(msg);
    // What was searched, each place named.
    CHECK(contains(msg, "$CUDA_HOME"));
    CHECK(contains(msg, (sys.dir("home") / "bin" / "nvcc").string()));
    CHECK(contains(msg, "$CUDA_PATH"));
    CHECK(contains(msg, (sys.dir("cpath") / "bin" / "nvcc").string()));
    CHECK(contains(msg, "PATH"));
    CHECK(contains(msg, "/usr/local/cuda/bin/nvcc"));
    // How to point bekc at it.
    CHECK(contains(msg, "--nvcc"));
    CHECK(contains(msg, "CUDA_HOME="));
    // One paragraph.
    CHECK_FALSE(contains(msg, "\n\n"));
}

TEST_CASE("nvcc: not found without CUDA variables still explains the fix", "[toolchain]") {
    FakeSystem sys;
    std::string msg = toolchain_error([&] { find_nvcc(std::nullopt, sys.lookup()); });
    INFO(msg);
    CHECK(contains(msg, "nvcc"));
    CHECK(contains(msg, "PATH"));
    CHECK(contains(msg, "/usr/local/cuda/bin/nvcc"));
    CHECK(contains(msg, "--nvcc"));
}

// ------------------------------------------------------------------------ cxx

TEST_CASE("cxx: --cxx wins over $CXX and PATH", "[toolchain]") {
    FakeSystem sys;
    fs::path flag = sys.add_exe("flag/my-g++");
    sys.add_exe("envcxx/g++");
    sys.add_exe("pathdir/c++");
    sys.env["CXX"] = (sys.dir("envcxx") / "g++").string();
    sys.path_dirs = {sys.dir("pathdir")};
    CHECK(find_cxx(flag.string(), sys.lookup()).path == canon(flag));
}

TEST_CASE("cxx: $CXX wins over PATH, as a path or as a name on PATH", "[toolchain]") {
    FakeSystem sys;
    fs::path env_path = sys.add_exe("envcxx/clang++-99");
    sys.add_exe("pathdir/c++");
    fs::path named = sys.add_exe("pathdir/g++-42");
    sys.path_dirs = {sys.dir("pathdir")};
    sys.env["CXX"] = env_path.string();
    CHECK(find_cxx(std::nullopt, sys.lookup()).path == canon(env_path));
    sys.env["CXX"] = "g++-42";
    CHECK(find_cxx(std::nullopt, sys.lookup()).path == canon(named));
}

TEST_CASE("cxx: c++, then g++, then clang++ on PATH", "[toolchain]") {
    FakeSystem sys;
    sys.path_dirs = {sys.dir("a"), sys.dir("b")};
    fs::path clang = sys.add_exe("a/clang++");
    CHECK(find_cxx(std::nullopt, sys.lookup()).path == canon(clang));
    fs::path gxx = sys.add_exe("b/g++");
    CHECK(find_cxx(std::nullopt, sys.lookup()).path == canon(gxx));
    fs::path cxx = sys.add_exe("b/c++");
    CHECK(find_cxx(std::nullopt, sys.lookup()).path == canon(cxx));
}

TEST_CASE("cxx: a $CXX that is not executable is an error naming it, with no fallback",
          "[toolchain]") {
    FakeSystem sys;
    sys.add_exe("pathdir/c++");
    sys.path_dirs = {sys.dir("pathdir")};
    sys.env["CXX"] = "no-such-compiler";
    std::string msg = toolchain_error([&] { find_cxx(std::nullopt, sys.lookup()); });
    CHECK(contains(msg, "$CXX"));
    CHECK(contains(msg, "no-such-compiler"));
}

TEST_CASE("cxx: a --cxx that is not executable is an error naming --cxx", "[toolchain]") {
    FakeSystem sys;
    sys.add_exe("pathdir/c++");
    sys.path_dirs = {sys.dir("pathdir")};
    std::string missing = (sys.root / "missing" / "g++").string();
    std::string msg = toolchain_error([&] { find_cxx(missing, sys.lookup()); });
    CHECK(contains(msg, "--cxx"));
    CHECK(contains(msg, missing));
}

TEST_CASE("cxx: not found says what was searched and how to fix it", "[toolchain]") {
    FakeSystem sys;
    sys.path_dirs = {sys.dir("pathdir")};
    std::string msg = toolchain_error([&] { find_cxx(std::nullopt, sys.lookup()); });
    INFO(msg);
    for (const char* searched : {"$CXX", "c++", "g++", "clang++", "PATH"})
        CHECK(contains(msg, searched));
    CHECK(contains(msg, "--cxx"));
    CHECK_FALSE(contains(msg, "\n\n"));
}

// ------------------------------------------------------------------- identity

TEST_CASE("a tool is run by the path found and identified by it, its resolved path, size and mtime",
          "[toolchain]") {
    FakeSystem sys;
    fs::path real = sys.add_exe("real/nvcc", "version 1\n");
    fs::create_directories(sys.dir("cuda/bin"));
    fs::path link = sys.dir("cuda/bin/nvcc");
    fs::create_symlink(real, link);
    sys.executables.insert(link);
    Tool t = find_nvcc(link.string(), sys.lookup());
    // Run through the link (a compiler may act by the name it is called by,
    // like Debian's /usr/lib/ccache/c++), identified by where it resolves.
    CHECK(t.path == link);
    CHECK(t.canonical == canon(real));
    CHECK(t.path.is_absolute());
    CHECK(t.size == 10);
    struct stat st;
    REQUIRE(::stat(real.c_str(), &st) == 0);
    CHECK(t.mtime_ns == int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec);
    CHECK(t.identity() ==
          link.string() + "|" + canon(real).string() + "|10|" + std::to_string(t.mtime_ns));

    // Replacing the compiler (an upgrade) changes the identity the key hashes.
    test::write_file(real, "version 2 (longer)\n");
    Tool t2 = identify_tool(link);
    CHECK(t2.identity() != t.identity());
}

TEST_CASE("a relative --nvcc becomes an absolute path", "[toolchain]") {
    FakeSystem sys;
    fs::path exe = sys.add_exe("rel/bin/nvcc");
    fs::path old = fs::current_path();
    fs::current_path(sys.root.path());
    sys.executables.insert("rel/bin/nvcc");
    Tool t;
    try {
        t = find_nvcc(std::string("rel/bin/nvcc"), sys.lookup());
    } catch (...) {
        fs::current_path(old);
        throw;
    }
    fs::current_path(old);
    CHECK(t.path.is_absolute());
    CHECK(t.path == canon(exe));
}

TEST_CASE("identifying a vanished tool is a toolchain error", "[toolchain]") {
    test::TempDir dir;
    std::string msg = toolchain_error([&] { identify_tool(dir / "gone"); });
    CHECK(contains(msg, "gone"));
}
