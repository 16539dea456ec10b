#include "toolchain/nvcc_search.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "toolchain/python_env.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

constexpr const char* kPipPattern = "nvidia/cu*/bin/nvcc, nvidia/cuda_nvcc/bin/nvcc";

// What a CUDA 13 pip toolkit's nvcc needs beside itself, and the wheel that
// installs each (nvidia-cuda-nvcc depends on all three; a --no-deps install
// or a removed wheel leaves a toolkit that fails in the middle of a compile).
struct Component {
    const char* file;
    const char* wheel;
};
constexpr Component kPipComponents[] = {
    {"nvvm/bin/cicc", "nvidia-nvvm"},
    {"include/crt/host_defines.h", "nvidia-cuda-crt"},
    {"include/cuda_runtime.h", "nvidia-cuda-runtime"},
    {"lib/libcudart_static.a", "nvidia-cuda-runtime"},
};

// The wheels whose files make up a pip toolkit, as their dist-info
// directories begin (CUDA 12's carry a -cu12 suffix: nvidia_cuda_nvcc_cu12).
constexpr std::string_view kToolkitWheels[] = {"nvidia_cuda_nvcc", "nvidia_cuda_crt", "nvidia_nvvm",
                                               "nvidia_cuda_runtime", "nvidia_cuda_cccl"};

// Headers CCCL provides; a compile that misses one lacks nvidia-cuda-cccl.
constexpr std::string_view kCcclHeaders[] = {"nv/target", "cub/", "thrust/", "cuda/std/"};

bool is_cu_dir(const std::string& name) {
    return name.size() > 2 && name.rfind("cu", 0) == 0 &&
           std::all_of(name.begin() + 2, name.end(),
                       [](unsigned char c) { return std::isdigit(c) != 0; });
}

// The pip toolkit of one Python environment: the highest nvidia/cuNN with an
// nvcc over all its site-packages (the first on a tie), else the first
// nvidia/cuda_nvcc. Returns the nvcc and what to say about it.
std::optional<std::pair<fs::path, std::string>> pip_nvcc_in(const std::vector<fs::path>& sites,
                                                            const ToolLookup& lookup) {
    std::optional<std::pair<fs::path, std::string>> best;
    int best_version = -1;
    for (const auto& site : sites) {
        std::vector<std::string> names;
        std::error_code ec;
        for (fs::directory_iterator it(site / "nvidia", ec), end; !ec && it != end;
             it.increment(ec)) {
            std::string n = it->path().filename().string();
            if (is_cu_dir(n)) names.push_back(n);
        }
        std::sort(names.begin(), names.end());
        for (const auto& n : names) {
            fs::path nvcc = site / "nvidia" / n / "bin" / "nvcc";
            int version = std::atoi(n.c_str() + 2);
            if (version > best_version && lookup.executable(nvcc)) {
                best_version = version;
                best = {{nvcc, "pip toolkit nvidia/" + n + " in " + site.string()}};
            }
        }
    }
    if (best) return best;
    for (const auto& site : sites) {
        fs::path nvcc = site / "nvidia" / "cuda_nvcc" / "bin" / "nvcc";
        if (lookup.executable(nvcc))
            return {{nvcc, "pip toolkit nvidia/cuda_nvcc in " + site.string()}};
    }
    return std::nullopt;
}

std::string join_items(const std::vector<std::string>& items, const char* sep) {
    std::string out;
    for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
    return out;
}

// A CUDA 13 pip toolkit must hold what nvcc runs and includes on every
// compile; say which wheel is missing rather than let nvcc fail midway.
std::expected<void, Error> check_pip_toolkit(const fs::path& nvcc) {
    fs::path root = nvcc.parent_path().parent_path();
    if (!is_cu_dir(root.filename().string())) return {};
    std::vector<std::string> files, wheels;
    for (const auto& c : kPipComponents) {
        std::error_code ec;
        if (fs::exists(root / c.file, ec)) continue;
        files.push_back(c.file);
        if (std::find(wheels.begin(), wheels.end(), c.wheel) == wheels.end())
            wheels.push_back(c.wheel);
    }
    if (files.empty()) return {};
    return fail(ErrorKind::Toolchain,
                "the CUDA toolkit from pip at " + root.string() + " is incomplete: it has no " +
                    join_items(files, ", ") +
                    ". Install what it lacks into the same Python environment: pip install " +
                    join_items(wheels, " "));
}

enum class Prefer { Pip, System };

std::expected<Prefer, Error> read_prefer(const NvccRequest& request, const ToolLookup& lookup) {
    std::optional<std::string> value = request.prefer;
    std::string origin = "--nvcc-prefer";
    if (!value) {
        value = lookup.env("BEKC_NVCC_PREFER");
        origin = "$BEKC_NVCC_PREFER";
    }
    if (!value || *value == "pip") return Prefer::Pip;
    if (*value == "system") return Prefer::System;
    return fail(ErrorKind::Usage, origin + " '" + *value +
                                      "': use pip (a toolkit installed from pip first, the "
                                      "default) or system (nvcc on PATH first)");
}

// The environments to look for a pip toolkit in, each a list of
// site-packages with what to call them in a not-found message.
std::vector<std::vector<fs::path>> pip_environments(const NvccRequest& request,
                                                    const ToolLookup& lookup) {
    std::vector<std::vector<fs::path>> envs;
    if (!request.python_sites.empty()) {
        envs.emplace_back(request.python_sites.begin(), request.python_sites.end());
        return envs;
    }
    for (const auto& prefix : python_prefixes(lookup.env)) {
        auto sites = site_packages_dirs(prefix);
        if (!sites.empty()) envs.push_back(std::move(sites));
    }
    return envs;
}

std::expected<NvccChoice, Error> chosen(const fs::path& path, std::string how) {
    auto tool = identify_tool(path);
    if (!tool) return std::unexpected(tool.error());
    return NvccChoice{*tool, std::move(how)};
}

std::string not_found_message(const std::vector<std::string>& searched, bool from_python) {
    std::string head =
        "nvcc not found, and a .cu input needs it. Searched: " + join_items(searched, "; ");
    if (from_python)
        return head +
               ". Install the CUDA toolkit into this Python environment (pip install "
               "nvidia-cuda-nvcc, or pip install \"jax[cuda13]\"), or name one with an "
               "environment variable: BEKC_NVCC=/path/to/nvcc or CUDA_HOME=/path/to/cuda.";
    return head +
           ". Install the CUDA toolkit (pip install nvidia-cuda-nvcc, or pip install "
           "\"jax[cuda13]\", in the active Python environment; or NVIDIA's installer), or point "
           "bekc at it with --nvcc PATH, BEKC_NVCC=PATH or CUDA_HOME=/path/to/cuda.";
}

}  // namespace

std::expected<NvccChoice, Error> find_nvcc(const NvccRequest& request, const ToolLookup& lookup) {
    const auto prefer = read_prefer(request, lookup);
    if (!prefer) return std::unexpected(prefer.error());
    if (request.flag) {
        if (auto p = resolve_named(*request.flag, lookup)) return chosen(*p, "--nvcc");
        return fail(ErrorKind::Toolchain, "--nvcc " + *request.flag + ": no such executable");
    }
    if (auto named = lookup.env("BEKC_NVCC")) {
        if (auto p = resolve_named(*named, lookup)) return chosen(*p, "$BEKC_NVCC");
        return fail(ErrorKind::Toolchain,
                    "$BEKC_NVCC names '" + *named +
                        "', which is not an executable. Give nvcc's path or unset it.");
    }
    std::vector<std::string> searched;
    if (request.brainevent_nvcc) {
        const std::string& p = *request.brainevent_nvcc;
        if (p.find('/') != std::string::npos && lookup.executable(p))
            return chosen(p, "brainevent's BRAINEVENT_NVCC_PATH");
        searched.push_back("brainevent's BRAINEVENT_NVCC_PATH (" + p + ": not an executable)");
    }
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
        if (auto root = lookup.env(var)) {
            fs::path p = fs::path(*root) / "bin" / "nvcc";
            if (lookup.executable(p)) return chosen(p, "$" + std::string(var));
            searched.push_back("$" + std::string(var) + "/bin/nvcc (" + p.string() + ")");
        }
    }
    // nullopt: none there, and `searched` says where it looked.
    using Found = std::optional<std::expected<NvccChoice, Error>>;
    auto from_pip = [&]() -> Found {
        std::vector<std::string> dirs;
        for (const auto& sites : pip_environments(request, lookup)) {
            if (auto found = pip_nvcc_in(sites, lookup)) {
                if (auto complete = check_pip_toolkit(found->first); !complete)
                    return std::unexpected(complete.error());
                return chosen(found->first, found->second);
            }
            for (const auto& s : sites) dirs.push_back(s.string());
        }
        searched.push_back(
            std::string("pip toolkits (") + kPipPattern + ") in " +
            (dirs.empty() ? std::string("no Python environment") : join_items(dirs, ", ")));
        return std::nullopt;
    };
    auto from_path = [&]() -> Found {
        if (auto p = lookup.find("nvcc")) return chosen(*p, "PATH");
        searched.push_back("nvcc on PATH");
        return std::nullopt;
    };
    for (int i = 0; i < 2; ++i) {
        bool pip = (i == 0) == (*prefer == Prefer::Pip);
        if (auto c = pip ? from_pip() : from_path()) {
            if (*c && *prefer == Prefer::System) (*c)->how += ", with system nvcc preferred";
            return *c;
        }
    }
    fs::path fallback = "/usr/local/cuda/bin/nvcc";
    if (lookup.executable(fallback)) return chosen(fallback, "/usr/local/cuda");
    searched.push_back(fallback.string());
    return fail(ErrorKind::Toolchain, not_found_message(searched, !request.python_sites.empty()));
}

std::optional<fs::path> pip_toolkit_root(const Tool& nvcc) {
    // As found, or where a link to it (a bin/nvcc on PATH) leads.
    for (const fs::path& exe : {nvcc.path, nvcc.canonical}) {
        fs::path root = exe.parent_path().parent_path();
        std::string name = root.filename().string();
        if (root.parent_path().filename() == "nvidia" && (is_cu_dir(name) || name == "cuda_nvcc"))
            return root;
    }
    return std::nullopt;
}

std::vector<fs::path> toolkit_include_dirs(const Tool& nvcc) {
    if (pip_toolkit_root(nvcc)) {
        ToolkitDirs dirs = pip_toolkit_dirs(nvcc);
        dirs.include.insert(dirs.include.end(), dirs.system_include.begin(),
                            dirs.system_include.end());
        return dirs.include;
    }
    fs::path root = nvcc.path.parent_path().parent_path();
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::path d : {root / "include", root / "include" / "cccl"})
        if (fs::is_directory(d, ec)) out.push_back(d);
    return out;
}

ToolkitDirs pip_toolkit_dirs(const Tool& nvcc) {
    ToolkitDirs out;
    auto root = pip_toolkit_root(nvcc);
    if (!root) return out;
    std::error_code ec;
    auto add = [&ec](std::vector<fs::path>& to, const fs::path& d) {
        if (fs::is_directory(d, ec)) to.push_back(d);
    };
    add(out.include, *root / "include");
    if (is_cu_dir(root->filename().string())) {
        add(out.system_include, *root / "include" / "cccl");
        add(out.lib, *root / "lib" / "stubs");
        add(out.lib, *root / "lib");
    } else {  // nvidia/cuda_nvcc: the runtime and CCCL are wheels of their own
        fs::path nvidia = root->parent_path();
        add(out.include, nvidia / "cuda_runtime" / "include");
        add(out.include, nvidia / "cuda_cccl" / "include");
        add(out.lib, nvidia / "cuda_runtime" / "lib");
    }
    return out;
}

std::optional<fs::path> shared_cudart(const Tool& nvcc, const std::string& version) {
    std::string major = version.substr(0, version.find('.'));
    if (major.empty() || !std::all_of(major.begin(), major.end(),
                                      [](unsigned char c) { return std::isdigit(c) != 0; }))
        return std::nullopt;
    const std::string name = "libcudart.so." + major;
    std::error_code ec;
    auto in_first = [&](const std::vector<fs::path>& dirs) -> std::optional<fs::path> {
        for (const auto& d : dirs)
            if (fs::is_regular_file(d / name, ec)) return d / name;
        return std::nullopt;
    };
    if (pip_toolkit_root(nvcc)) return in_first(pip_toolkit_dirs(nvcc).lib);
    // lib64, else the one targets/<arch>/lib with the runtime (an installed
    // toolkit has one target: x86_64-linux, sbsa-linux, ...). The targets are
    // listed only when lib64 lacks it: a warm lookup asks this on every build.
    fs::path root = nvcc.path.parent_path().parent_path();
    if (auto lib = in_first({root / "lib64"})) return lib;
    std::vector<fs::path> targets;
    for (fs::directory_iterator it(root / "targets", ec), end; !ec && it != end; it.increment(ec))
        targets.push_back(it->path() / "lib");
    std::sort(targets.begin(), targets.end());
    return in_first(targets);
}

std::vector<std::string> pip_toolkit_wheels(const Tool& nvcc) {
    std::vector<std::string> out;
    auto root = pip_toolkit_root(nvcc);
    if (!root) return out;
    std::error_code ec;
    for (fs::directory_iterator it(root->parent_path().parent_path(), ec), end; !ec && it != end;
         it.increment(ec)) {
        std::string n = it->path().filename().string();
        if (!n.ends_with(".dist-info")) continue;
        for (std::string_view w : kToolkitWheels)
            if (n.starts_with(w) && n.size() > w.size() &&
                (n[w.size()] == '-' || n[w.size()] == '_'))
                out.push_back(n);
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string missing_cccl_note(const Tool& nvcc, const std::string& compiler_output) {
    auto root = pip_toolkit_root(nvcc);
    if (!root || !is_cu_dir(root->filename().string())) return {};
    std::error_code ec;
    if (fs::exists(*root / "include" / "cccl", ec)) return {};
    // "k.cu:1:10: fatal error: nv/target: No such file or directory" (g++),
    // "cannot open source file" (nvcc's front end).
    size_t start = 0;
    while (start < compiler_output.size()) {
        size_t end = compiler_output.find('\n', start);
        if (end == std::string::npos) end = compiler_output.size();
        std::string_view line(compiler_output.data() + start, end - start);
        start = end + 1;
        if (line.find("No such file or directory") == std::string_view::npos &&
            line.find("cannot open source file") == std::string_view::npos)
            continue;
        for (std::string_view h : kCcclHeaders)
            if (line.find(h) != std::string_view::npos)
                return "the CUDA toolkit from pip at " + root->string() +
                       " has no CCCL headers (nv/target, cub, thrust, cuda/std); install them "
                       "into the same Python environment: pip install nvidia-cuda-cccl";
    }
    return {};
}

}  // namespace bekc
