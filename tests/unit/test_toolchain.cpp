// Toolchain discovery (lib/toolchain/tools) with a stubbed environment, PATH
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

#include "../helpers/fatal.hpp"
#include "../helpers/temp_dir.hpp"
#include "../helpers/text.hpp"
#include "toolchain/nvcc_search.hpp"
#include "toolchain/python_env.hpp"
#include "toolchain/tools.hpp"
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

// A request with only --nvcc (or nothing) set.
NvccRequest named_nvcc(std::optional<std::string> flag) {
    NvccRequest r;
    r.flag = std::move(flag);
    return r;
}

fs::path canon(const fs::path& p) {
    return fs::canonical(p);
}

// Runs `f`, which must fail; returns its message and checks the exit code is
// the toolchain one (3).
template <typename F>
std::string toolchain_error(F&& f) {
    std::string message = test::fatal_message(std::forward<F>(f), kExitToolchain);
    CHECK(message != "<no error>");
    return message;
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
    Tool t = find_nvcc(named_nvcc(flag.string()), sys.lookup()).value().tool;
    CHECK(t.path == canon(flag));
}

TEST_CASE("nvcc: --nvcc with a bare name is looked up on PATH", "[toolchain]") {
    FakeSystem sys;
    fs::path on_path = sys.add_exe("pathdir/nvcc-13");
    sys.path_dirs = {sys.dir("pathdir")};
    Tool t = find_nvcc(named_nvcc(std::string("nvcc-13")), sys.lookup()).value().tool;
    CHECK(t.path == canon(on_path));
}

TEST_CASE("nvcc: a --nvcc that does not exist is an error, with no fallback", "[toolchain]") {
    FakeSystem sys;
    sys.add_exe("home/bin/nvcc");
    sys.env["CUDA_HOME"] = sys.dir("home").string();
    std::string missing = (sys.root / "nope" / "nvcc").string();
    std::string msg = toolchain_error([&] { return find_nvcc(named_nvcc(missing), sys.lookup()); });
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
    CHECK(find_nvcc(named_nvcc(std::nullopt), sys.lookup()).value().tool.path == canon(home));
}

TEST_CASE("nvcc: $CUDA_PATH is used when $CUDA_HOME is unset or has no nvcc", "[toolchain]") {
    FakeSystem sys;
    fs::path cpath = sys.add_exe("cpath/bin/nvcc");
    sys.add_exe("pathdir/nvcc");
    sys.env["CUDA_PATH"] = sys.dir("cpath").string();
    sys.path_dirs = {sys.dir("pathdir")};
    CHECK(find_nvcc(named_nvcc(std::nullopt), sys.lookup()).value().tool.path == canon(cpath));
    fs::create_directories(sys.dir("empty_home/bin"));
    sys.env["CUDA_HOME"] = sys.dir("empty_home").string();
    CHECK(find_nvcc(named_nvcc(std::nullopt), sys.lookup()).value().tool.path == canon(cpath));
}

TEST_CASE("nvcc: PATH is used before /usr/local/cuda", "[toolchain]") {
    FakeSystem sys;
    fs::path on_path = sys.add_exe("pathdir/nvcc");
    sys.path_dirs = {sys.dir("other"), sys.dir("pathdir")};
    sys.executables.insert("/usr/local/cuda/bin/nvcc");
    CHECK(find_nvcc(named_nvcc(std::nullopt), sys.lookup()).value().tool.path == canon(on_path));
    CHECK(std::count(sys.looked_up.begin(), sys.looked_up.end(), "nvcc") == 1);
}

TEST_CASE("nvcc: /usr/local/cuda/bin/nvcc is the last resort", "[toolchain]") {
    FakeSystem sys;
    sys.executables.insert("/usr/local/cuda/bin/nvcc");
    // The stub says it is executable; identifying it stats the real file, so
    // on a machine without CUDA the error still names the path it chose.
    try {
        Tool t = find_nvcc(named_nvcc(std::nullopt), sys.lookup()).value().tool;
        CHECK(t.path == "/usr/local/cuda/bin/nvcc");  // run as found, symlink kept
        CHECK(t.canonical == canon("/usr/local/cuda/bin/nvcc"));
    } catch (const std::bad_expected_access<Error>& e) {
        CHECK(contains(e.error().message, "/usr/local/cuda/bin/nvcc"));
    }
}

TEST_CASE("nvcc: not found says what was searched and how to fix it", "[toolchain]") {
    FakeSystem sys;
    sys.env["CUDA_HOME"] = sys.dir("home").string();
    sys.env["CUDA_PATH"] = sys.dir("cpath").string();
    sys.path_dirs = {sys.dir("pathdir")};
    std::string msg =
        toolchain_error([&] { return find_nvcc(named_nvcc(std::nullopt), sys.lookup()); });
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
    std::string msg =
        toolchain_error([&] { return find_nvcc(named_nvcc(std::nullopt), sys.lookup()); });
    INFO(msg);
    CHECK(contains(msg, "nvcc"));
    CHECK(contains(msg, "PATH"));
    CHECK(contains(msg, "/usr/local/cuda/bin/nvcc"));
    CHECK(contains(msg, "--nvcc"));
}

// ------------------------------------------------------- nvcc from pip, order

namespace {

// A CUDA 13 pip toolkit (nvidia/<cu>) under `site`, relative to the fake
// root: nvcc and, unless told otherwise, what the other wheels install.
fs::path add_pip_toolkit(FakeSystem& sys, const std::string& site, const std::string& cu,
                         bool complete = true) {
    fs::path nvcc = sys.add_exe(site + "/nvidia/" + cu + "/bin/nvcc");
    if (complete)
        for (const char* f : {"nvvm/bin/cicc", "include/crt/host_defines.h",
                              "include/cuda_runtime.h", "lib/libcudart_static.a"})
            test::write_file(sys.dir(site + "/nvidia/" + cu + "/" + f), "");
    return nvcc;
}

const std::string kVenvSite = "venv/lib/python3.12/site-packages";

// The choice, or the error thrown as the driver would (FatalError).
NvccChoice nvcc_for(FakeSystem& sys, NvccRequest request = {}) {
    auto found = find_nvcc(request, sys.lookup());
    if (!found) throw FatalError(found.error());
    return *found;
}

}  // namespace

TEST_CASE("nvcc: the active virtualenv's pip toolkit, before PATH", "[toolchain]") {
    FakeSystem sys;
    fs::path pip = add_pip_toolkit(sys, kVenvSite, "cu13");
    sys.add_exe("pathdir/nvcc");
    sys.path_dirs = {sys.dir("pathdir")};
    sys.env["VIRTUAL_ENV"] = sys.dir("venv").string();
    NvccChoice c = nvcc_for(sys);
    CHECK(c.tool.path == pip);
    CHECK(c.how == "pip toolkit nvidia/cu13 in " + sys.dir(kVenvSite).string());
}

TEST_CASE("nvcc: the highest nvidia/cuNN first, then CUDA 12's nvidia/cuda_nvcc", "[toolchain]") {
    FakeSystem sys;
    sys.env["VIRTUAL_ENV"] = sys.dir("venv").string();
    fs::path split = sys.add_exe(kVenvSite + "/nvidia/cuda_nvcc/bin/nvcc");
    CHECK(nvcc_for(sys).how == "pip toolkit nvidia/cuda_nvcc in " + sys.dir(kVenvSite).string());
    CHECK(nvcc_for(sys).tool.path == split);
    add_pip_toolkit(sys, kVenvSite, "cu9");
    CHECK(nvcc_for(sys).tool.path == sys.dir(kVenvSite + "/nvidia/cu9/bin/nvcc"));
    fs::path cu13 = add_pip_toolkit(sys, kVenvSite, "cu13");
    add_pip_toolkit(sys, kVenvSite, "cu12");
    CHECK(nvcc_for(sys).tool.path == cu13);  // 13 > 12 > 9, not "cu9" > "cu13"
    // A cuNN directory without nvcc (only the runtime wheel) does not count.
    fs::create_directories(sys.dir(kVenvSite + "/nvidia/cu14/include"));
    CHECK(nvcc_for(sys).tool.path == cu13);
}

TEST_CASE("nvcc: $VIRTUAL_ENV, then $CONDA_PREFIX, then each python3's prefix on PATH",
          "[toolchain]") {
    FakeSystem sys;
    fs::path conda = add_pip_toolkit(sys, "conda/lib/python3.11/site-packages", "cu14");
    fs::path onpath = add_pip_toolkit(sys, "py/lib/python3.12/site-packages", "cu15");
    sys.add_exe("py/bin/python3");
    sys.path_dirs = {sys.dir("py/bin")};
    sys.env["PATH"] = sys.dir("py/bin").string();
    CHECK(nvcc_for(sys).tool.path == onpath);
    sys.env["CONDA_PREFIX"] = sys.dir("conda").string();
    CHECK(nvcc_for(sys).tool.path == conda);  // an environment first, not the highest version
    fs::path venv = add_pip_toolkit(sys, kVenvSite, "cu13");
    sys.env["VIRTUAL_ENV"] = sys.dir("venv").string();
    CHECK(nvcc_for(sys).tool.path == venv);
}

TEST_CASE("nvcc: --python-site replaces the environments bekc would guess", "[toolchain]") {
    FakeSystem sys;
    add_pip_toolkit(sys, kVenvSite, "cu13");
    sys.env["VIRTUAL_ENV"] = sys.dir("venv").string();
    fs::path mine = add_pip_toolkit(sys, "mine/site-packages", "cu13");
    NvccRequest r;
    r.python_sites = {sys.dir("mine/site-packages").string()};
    CHECK(nvcc_for(sys, r).tool.path == mine);
    // One environment: the highest version over all its directories.
    fs::path newer = add_pip_toolkit(sys, "user/site-packages", "cu14");
    r.python_sites.push_back(sys.dir("user/site-packages").string());
    CHECK(nvcc_for(sys, r).tool.path == newer);
}

TEST_CASE("nvcc: $CUDA_HOME and $CUDA_PATH come before a pip toolkit", "[toolchain]") {
    FakeSystem sys;
    add_pip_toolkit(sys, kVenvSite, "cu13");
    sys.env["VIRTUAL_ENV"] = sys.dir("venv").string();
    fs::path cpath = sys.add_exe("cpath/bin/nvcc");
    sys.env["CUDA_PATH"] = sys.dir("cpath").string();
    NvccChoice c = nvcc_for(sys);
    CHECK(c.tool.path == cpath);
    CHECK(c.how == "$CUDA_PATH");
}

TEST_CASE("nvcc: --nvcc-prefer / $BEKC_NVCC_PREFER system puts PATH before pip", "[toolchain]") {
    FakeSystem sys;
    fs::path pip = add_pip_toolkit(sys, kVenvSite, "cu13");
    sys.env["VIRTUAL_ENV"] = sys.dir("venv").string();
    fs::path on_path = sys.add_exe("pathdir/nvcc");
    sys.path_dirs = {sys.dir("pathdir")};
    sys.env["BEKC_NVCC_PREFER"] = "system";
    NvccChoice c = nvcc_for(sys);
    CHECK(c.tool.path == on_path);
    CHECK(c.how == "PATH, with system nvcc preferred");
    NvccRequest r;
    r.prefer = "pip";  // the flag wins over the variable
    CHECK(nvcc_for(sys, r).tool.path == pip);
    // With nothing on PATH, system still falls back to pip.
    sys.path_dirs.clear();
    CHECK(nvcc_for(sys).tool.path == pip);
    sys.env["BEKC_NVCC_PREFER"] = "conda";
    try {
        nvcc_for(sys);
        FAIL("expected a usage error");
    } catch (const FatalError& e) {
        CHECK(e.exit_code() == kExitUsage);
        CHECK(std::string(e.what()) ==
              "bekc: error: $BEKC_NVCC_PREFER 'conda': use pip (a toolkit installed from pip "
              "first, the default) or system (nvcc on PATH first)");
    }
}

TEST_CASE("nvcc: $BEKC_NVCC, then brainevent's BRAINEVENT_NVCC_PATH, before $CUDA_HOME",
          "[toolchain]") {
    FakeSystem sys;
    fs::path home = sys.add_exe("home/bin/nvcc");
    sys.env["CUDA_HOME"] = sys.dir("home").string();
    fs::path be = sys.add_exe("be/nvcc");
    NvccRequest r;
    r.brainevent_nvcc = be.string();
    NvccChoice c = nvcc_for(sys, r);
    CHECK(c.tool.path == be);
    CHECK(c.how == "brainevent's BRAINEVENT_NVCC_PATH");
    // Not a file: brainevent goes on to $CUDA_HOME, and so does bekc.
    r.brainevent_nvcc = sys.dir("be/missing").string();
    CHECK(nvcc_for(sys, r).tool.path == home);
    fs::path mine = sys.add_exe("mine/nvcc");
    sys.env["BEKC_NVCC"] = mine.string();
    r.brainevent_nvcc = be.string();
    c = nvcc_for(sys, r);
    CHECK(c.tool.path == mine);
    CHECK(c.how == "$BEKC_NVCC");
    r.flag = be.string();
    CHECK(nvcc_for(sys, r).how == "--nvcc");
    // A $BEKC_NVCC that is not there is an error, with no fallback.
    r.flag.reset();
    sys.env["BEKC_NVCC"] = "no-such-nvcc";
    std::string msg = toolchain_error([&] { nvcc_for(sys, r); });
    CHECK(msg ==
          "bekc: error: $BEKC_NVCC names 'no-such-nvcc', which is not an executable. Give "
          "nvcc's path or unset it.");
}

TEST_CASE("nvcc: a pip toolkit without a wheel nvcc needs names the wheel", "[toolchain]") {
    FakeSystem sys;
    add_pip_toolkit(sys, kVenvSite, "cu13", false);
    test::write_file(sys.dir(kVenvSite + "/nvidia/cu13/include/cuda_runtime.h"), "");
    sys.env["VIRTUAL_ENV"] = sys.dir("venv").string();
    std::string msg = toolchain_error([&] { nvcc_for(sys); });
    CHECK(msg == "bekc: error: the CUDA toolkit from pip at " +
                     sys.dir(kVenvSite + "/nvidia/cu13").string() +
                     " is incomplete: it has no nvvm/bin/cicc, include/crt/host_defines.h, "
                     "lib/libcudart_static.a. Install what it lacks into the same Python "
                     "environment: pip install nvidia-nvvm nvidia-cuda-crt nvidia-cuda-runtime");
}

TEST_CASE("nvcc: not found lists every place and names the pip wheels", "[toolchain]") {
    FakeSystem sys;
    sys.env["CUDA_HOME"] = sys.dir("home").string();
    sys.env["VIRTUAL_ENV"] = sys.dir("venv").string();
    fs::create_directories(sys.dir(kVenvSite));
    std::string sites = sys.dir(kVenvSite).string();
    // The system's own Python prefixes are searched too, whatever this machine has there.
    for (const char* prefix : {"/usr/local", "/usr"})
        for (const auto& d : site_packages_dirs(prefix)) sites += ", " + d.string();
    std::string searched = "$CUDA_HOME/bin/nvcc (" + (sys.dir("home") / "bin/nvcc").string() +
                           "); pip toolkits (nvidia/cu*/bin/nvcc, nvidia/cuda_nvcc/bin/nvcc) in ";
    std::string msg = toolchain_error([&] { nvcc_for(sys); });
    CHECK(msg == "bekc: error: nvcc not found, and a .cu input needs it. Searched: " + searched +
                     sites +
                     "; nvcc on PATH; /usr/local/cuda/bin/nvcc. Install the CUDA toolkit (pip "
                     "install nvidia-cuda-nvcc, or pip install \"jax[cuda13]\", in the active "
                     "Python environment; or NVIDIA's installer), or point bekc at it with --nvcc "
                     "PATH, BEKC_NVCC=PATH or CUDA_HOME=/path/to/cuda.");
    // From bekc's Python loaders: the fixes a Python user has, no flag.
    NvccRequest r;
    r.python_sites = {sys.dir(kVenvSite).string()};
    msg = toolchain_error([&] { nvcc_for(sys, r); });
    CHECK(msg == "bekc: error: nvcc not found, and a .cu input needs it. Searched: " + searched +
                     sys.dir(kVenvSite).string() +
                     "; nvcc on PATH; /usr/local/cuda/bin/nvcc. Install the CUDA toolkit into this "
                     "Python environment (pip install nvidia-cuda-nvcc, or pip install "
                     "\"jax[cuda13]\"), or name one with an environment variable: "
                     "BEKC_NVCC=/path/to/nvcc or CUDA_HOME=/path/to/cuda.");
}

TEST_CASE("nvcc: a pip toolkit's include directories, wheels and missing CCCL", "[toolchain]") {
    FakeSystem sys;
    fs::path nvcc = add_pip_toolkit(sys, kVenvSite, "cu13");
    Tool t = identify_tool(nvcc).value();
    fs::path root = sys.dir(kVenvSite + "/nvidia/cu13");
    CHECK(pip_toolkit_root(t) == root);
    CHECK(toolkit_include_dirs(t) == std::vector<fs::path>{root / "include"});
    std::string failed = "k.cu:1:10: fatal error: nv/target: No such file or directory\n";
    CHECK(missing_cccl_note(t, failed) ==
          "the CUDA toolkit from pip at " + root.string() +
              " has no CCCL headers (nv/target, cub, thrust, cuda/std); install them into the "
              "same Python environment: pip install nvidia-cuda-cccl");
    CHECK(missing_cccl_note(t, "k.cu:3: error: expected ';'\n").empty());
    fs::create_directories(root / "include/cccl/nv");
    CHECK(toolkit_include_dirs(t) ==
          std::vector<fs::path>{root / "include", root / "include/cccl"});
    CHECK(missing_cccl_note(t, failed).empty());
    // The wheels' dist-info directories, not other packages'.
    for (const char* d :
         {"nvidia_cuda_nvcc-13.5.37.dist-info", "nvidia_cuda_cccl-13.3.5.0.6.dist-info",
          "nvidia_cublas-13.1.0.dist-info", "jax-0.10.2.dist-info"})
        fs::create_directories(sys.dir(kVenvSite + "/" + d));
    CHECK(pip_toolkit_wheels(t) == std::vector<std::string>{"nvidia_cuda_cccl-13.3.5.0.6.dist-info",
                                                            "nvidia_cuda_nvcc-13.5.37.dist-info"});
    // Through a link elsewhere (a bin/nvcc on PATH), the toolkit it leads to.
    fs::create_directories(sys.dir("linkbin"));
    fs::create_symlink(nvcc, sys.dir("linkbin/nvcc"));
    Tool linked = identify_tool(sys.dir("linkbin/nvcc")).value();
    CHECK(pip_toolkit_root(linked) == root);
    CHECK(toolkit_include_dirs(linked).front() == root / "include");
    // Another nvcc has none of this.
    Tool system = identify_tool(sys.add_exe("cuda/bin/nvcc")).value();
    CHECK_FALSE(pip_toolkit_root(system));
    CHECK(pip_toolkit_wheels(system).empty());
    CHECK(missing_cccl_note(system, failed).empty());
}

TEST_CASE("nvcc: a pip toolkit's own directories, named for nvcc whatever its nvcc.profile says",
          "[toolchain]") {
    // nvidia-cuda-nvcc 13.0's nvcc.profile names targets/x86_64-linux/include
    // and lib, which the wheels do not have: linking failed on
    // -lcudart_static. bekc names include/, include/cccl and lib/ itself.
    FakeSystem sys;
    Tool t = identify_tool(add_pip_toolkit(sys, kVenvSite, "cu13")).value();
    fs::path root = sys.dir(kVenvSite + "/nvidia/cu13");
    fs::create_directories(root / "include/cccl");
    fs::create_directories(root / "lib/stubs");
    ToolkitDirs d = pip_toolkit_dirs(t);
    CHECK(d.include == std::vector<fs::path>{root / "include"});
    CHECK(d.system_include == std::vector<fs::path>{root / "include/cccl"});
    CHECK(d.lib == std::vector<fs::path>{root / "lib/stubs", root / "lib"});
    // CUDA 12's split wheels: the runtime's and CCCL's directories too.
    Tool split = identify_tool(sys.add_exe("site12/nvidia/cuda_nvcc/bin/nvcc")).value();
    for (const char* dir : {"site12/nvidia/cuda_nvcc/include", "site12/nvidia/cuda_runtime/include",
                            "site12/nvidia/cuda_runtime/lib", "site12/nvidia/cuda_cccl/include"})
        fs::create_directories(sys.dir(dir));
    ToolkitDirs d12 = pip_toolkit_dirs(split);
    CHECK(d12.include == std::vector<fs::path>{sys.dir("site12/nvidia/cuda_nvcc/include"),
                                               sys.dir("site12/nvidia/cuda_runtime/include"),
                                               sys.dir("site12/nvidia/cuda_cccl/include")});
    CHECK(d12.lib == std::vector<fs::path>{sys.dir("site12/nvidia/cuda_runtime/lib")});
    // A system toolkit: nvcc.profile is right there, nothing is added.
    ToolkitDirs none = pip_toolkit_dirs(identify_tool(sys.add_exe("cuda/bin/nvcc")).value());
    CHECK(none.include.empty());
    CHECK(none.system_include.empty());
    CHECK(none.lib.empty());
}

// ------------------------------------------------------------------------ cxx

TEST_CASE("cxx: --cxx wins over $CXX and PATH", "[toolchain]") {
    FakeSystem sys;
    fs::path flag = sys.add_exe("flag/my-g++");
    sys.add_exe("envcxx/g++");
    sys.add_exe("pathdir/c++");
    sys.env["CXX"] = (sys.dir("envcxx") / "g++").string();
    sys.path_dirs = {sys.dir("pathdir")};
    CHECK(find_cxx(flag.string(), sys.lookup()).value().path == canon(flag));
}

TEST_CASE("cxx: $CXX wins over PATH, as a path or as a name on PATH", "[toolchain]") {
    FakeSystem sys;
    fs::path env_path = sys.add_exe("envcxx/clang++-99");
    sys.add_exe("pathdir/c++");
    fs::path named = sys.add_exe("pathdir/g++-42");
    sys.path_dirs = {sys.dir("pathdir")};
    sys.env["CXX"] = env_path.string();
    CHECK(find_cxx(std::nullopt, sys.lookup()).value().path == canon(env_path));
    sys.env["CXX"] = "g++-42";
    CHECK(find_cxx(std::nullopt, sys.lookup()).value().path == canon(named));
}

TEST_CASE("cxx: c++, then g++, then clang++ on PATH", "[toolchain]") {
    FakeSystem sys;
    sys.path_dirs = {sys.dir("a"), sys.dir("b")};
    fs::path clang = sys.add_exe("a/clang++");
    CHECK(find_cxx(std::nullopt, sys.lookup()).value().path == canon(clang));
    fs::path gxx = sys.add_exe("b/g++");
    CHECK(find_cxx(std::nullopt, sys.lookup()).value().path == canon(gxx));
    fs::path cxx = sys.add_exe("b/c++");
    CHECK(find_cxx(std::nullopt, sys.lookup()).value().path == canon(cxx));
}

TEST_CASE("cxx: a $CXX that is not executable is an error naming it, with no fallback",
          "[toolchain]") {
    FakeSystem sys;
    sys.add_exe("pathdir/c++");
    sys.path_dirs = {sys.dir("pathdir")};
    sys.env["CXX"] = "no-such-compiler";
    std::string msg = toolchain_error([&] { return find_cxx(std::nullopt, sys.lookup()); });
    CHECK(contains(msg, "$CXX"));
    CHECK(contains(msg, "no-such-compiler"));
}

TEST_CASE("cxx: a --cxx that is not executable is an error naming --cxx", "[toolchain]") {
    FakeSystem sys;
    sys.add_exe("pathdir/c++");
    sys.path_dirs = {sys.dir("pathdir")};
    std::string missing = (sys.root / "missing" / "g++").string();
    std::string msg = toolchain_error([&] { return find_cxx(missing, sys.lookup()); });
    CHECK(contains(msg, "--cxx"));
    CHECK(contains(msg, missing));
}

TEST_CASE("cxx: not found says what was searched and how to fix it", "[toolchain]") {
    FakeSystem sys;
    sys.path_dirs = {sys.dir("pathdir")};
    std::string msg = toolchain_error([&] { return find_cxx(std::nullopt, sys.lookup()); });
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
    Tool t = find_nvcc(named_nvcc(link.string()), sys.lookup()).value().tool;
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
    Tool t2 = identify_tool(link).value();
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
        t = find_nvcc(named_nvcc(std::string("rel/bin/nvcc")), sys.lookup()).value().tool;
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
    std::string msg = toolchain_error([&] { return identify_tool(dir / "gone"); });
    CHECK(contains(msg, "gone"));
}
