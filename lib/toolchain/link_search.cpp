#include "toolchain/link_search.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

#include "plan/compile_plan.hpp"
#include "toolchain/nvcc_search.hpp"
#include "util/env.hpp"

namespace bekc {

std::vector<fs::path> system_library_dirs(const std::string& multiarch) {
    std::vector<fs::path> dirs;
    if (!multiarch.empty()) dirs.push_back(fs::path("/usr/lib") / multiarch);
    dirs.emplace_back("/usr/lib");
    if (!multiarch.empty()) dirs.push_back(fs::path("/lib") / multiarch);
    for (const char* d : {"/lib", "/usr/local/lib", "/lib64", "/usr/lib64"}) dirs.emplace_back(d);
    return dirs;
}

std::vector<std::string> library_file_names(const std::string& name) {
    if (!name.empty() && name[0] == ':') return {name.substr(1)};
    return {"lib" + name + ".so", "lib" + name + ".a"};
}

LinkerSearch linker_search(const PlanFlags& flags, const CompilerEnv& env,
                           const std::string& multiarch) {
    // What reaches the linker, one argument each: --ldflag values with
    // -Wl,a,b and -Xlinker a taken apart, then every --linker-arg. -L and -l
    // read the same in the compiler drivers and in ld.
    std::vector<std::string> args;
    const auto& ld = flags.ldflags;
    for (size_t i = 0; i < ld.size(); ++i) {
        if (ld[i].rfind("-Wl,", 0) == 0) {
            std::string_view rest = std::string_view(ld[i]).substr(4);
            for (size_t comma; (comma = rest.find(',')) != std::string_view::npos;
                 rest.remove_prefix(comma + 1))
                args.emplace_back(rest.substr(0, comma));
            args.emplace_back(rest);
        } else if (ld[i] == "-Xlinker" && i + 1 < ld.size()) {
            args.push_back(ld[++i]);
        } else {
            args.push_back(ld[i]);
        }
    }
    args.insert(args.end(), flags.linker_args.begin(), flags.linker_args.end());
    // As the linker opens them (util/fs.hpp: physical_normal).
    PhysicalPaths paths;
    auto path = [&paths](std::string_view a) { return paths.normal(fs::path(a)); };
    LinkerSearch s;
    for (size_t i = 0; i < args.size(); ++i) {
        std::string_view a = args[i];
        bool has_next = i + 1 < args.size();
        if (a == "-L" || a == "--library-path") {
            if (has_next) s.dirs.push_back(path(args[++i]));
        } else if (a.rfind("--library-path=", 0) == 0) {
            s.dirs.push_back(path(a.substr(15)));
        } else if (a.rfind("-L", 0) == 0) {
            s.dirs.push_back(path(a.substr(2)));
        } else if (a == "-l" || a == "--library") {
            if (has_next) s.names.push_back(args[++i]);
        } else if (a.rfind("--library=", 0) == 0) {
            s.names.emplace_back(a.substr(10));
        } else if (a.rfind("-l", 0) == 0) {
            s.names.emplace_back(a.substr(2));
        } else if (a == "-static" || a == "--static" || a == "-Bstatic" || a == "--Bstatic" ||
                   a == "-dn" || a == "-non_shared") {
            s.static_link = true;
        } else if (a.starts_with("@")) {
            s.response_file = true;
        } else if (!a.empty() && a[0] != '-') {
            s.files.push_back(path(a));
        }
    }
    s.dirs.insert(s.dirs.end(), env.library_dirs.begin(), env.library_dirs.end());
    s.system_dirs = system_library_dirs(multiarch);
    return s;
}

std::vector<fs::path> library_order(const LinkerSearch& s) {
    std::vector<fs::path> order = s.dirs;
    order.insert(order.end(), s.system_dirs.begin(), s.system_dirs.end());
    return order;
}

namespace {

// What -lNAME finds in `order`, as ld looks: the first directory holding
// either file, the shared library first. Empty when none does.
fs::path find_library(const std::string& name, const std::vector<fs::path>& order) {
    for (const auto& dir : order)
        for (const auto& file : library_file_names(name))
            if (presence(dir / file) == Presence::File) return physical_normal(dir / file);
    return {};
}

// A shared library proper: named like one and an ELF file, not a linker
// script in its place (Debian's libc.so is a text file that names an
// archive, and a script can name anything).
bool is_shared_library(const fs::path& p) {
    const std::string name = p.filename().string();
    if (!name.ends_with(".so") && name.find(".so.") == std::string::npos) return false;
    auto fd = open_regular_at(AT_FDCWD, p, p, ReadOptions{});
    if (!fd) return false;
    constexpr char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
    char magic[sizeof kElfMagic];
    return ::read(fd->get(), magic, sizeof magic) == static_cast<ssize_t>(sizeof magic) &&
           std::memcmp(magic, kElfMagic, sizeof magic) == 0;
}

// The library directories nvcc adds to its link: the toolkit's
// targets/*/lib and lib/stubs, and lib64; a pip toolkit's nvcc.profile names
// lib/stubs and lib (toolchain/nvcc_search.hpp).
std::vector<fs::path> nvcc_library_dirs(const Tool& nvcc) {
    std::vector<fs::path> dirs;
    for (const fs::path& bin : {nvcc.path.parent_path(), nvcc.canonical.parent_path()}) {
        const fs::path root = bin.parent_path();
        std::error_code ec;
        for (fs::directory_iterator it(root / "targets", ec), end; !ec && it != end;
             it.increment(ec)) {
            dirs.push_back(it->path() / "lib");
            dirs.push_back(it->path() / "lib" / "stubs");
        }
        dirs.push_back(root / "lib64");
        if (pip_toolkit_root(nvcc)) {
            dirs.push_back(root / "lib" / "stubs");
            dirs.push_back(root / "lib");
        }
    }
    return dirs;
}

// nvcc options from the environment that ask for the device link or name
// link inputs: any word but an option that only tunes a compile.
bool env_asks_device_link(const CompilerEnv& env) {
    for (const auto& [name, value] : env.values)
        if ((name == "LIBRARIES" || name == "NVLINK_FLAGS") &&
            value.find_first_not_of(" \t\n") != std::string::npos)
            return true;
    const std::vector<std::string> words = nvcc_env_flags(env).around({});
    if (flags_ask_device_link(words)) return true;
    // nvcc's own options that begin like a -l library.
    auto nvcc_option = [](std::string_view w) {
        return w == "-lineinfo" || w == "-lib" || w.starts_with("-ldir");
    };
    for (const auto& w : words)
        if (w[0] != '-' || (w.starts_with("-l") && !nvcc_option(w)) || w.starts_with("-Wl") ||
            w.starts_with("-Xlinker") || w.starts_with("-static") || w.starts_with("@"))
            return true;
    return false;
}

}  // namespace

std::vector<fs::path> link_inputs_from_flags(const LinkerSearch& s) {
    std::vector<fs::path> out;
    for (const auto& f : s.files)
        if (presence(f) == Presence::File) out.push_back(f);
    std::vector<fs::path> order = library_order(s);
    for (const auto& name : s.names)
        if (fs::path found = find_library(name, order); !found.empty()) out.push_back(found);
    return out;
}

bool link_reads_opaque_code(const PlanFlags& flags, const CompilerEnv& env,
                            const std::optional<Tool>& nvcc, const std::string& multiarch) {
    if (env_asks_device_link(env)) return true;
    const LinkerSearch s = linker_search(flags, env, multiarch);
    if (s.static_link || s.response_file) return true;
    // A directory (the value of -rpath DIR, taken apart from -Wl,) is no input.
    for (const auto& f : s.files)
        if (presence(f) == Presence::File && !is_shared_library(f)) return true;
    if (s.names.empty()) return false;
    // On the direct key's path, so the toolkit is listed only when a -l
    // needs it.
    std::vector<fs::path> order = library_order(s);
    if (nvcc) {
        auto more = nvcc_library_dirs(*nvcc);
        order.insert(order.end(), more.begin(), more.end());
    }
    for (const auto& name : s.names) {
        fs::path found = find_library(name, order);
        if (found.empty() || !is_shared_library(found)) return true;
    }
    return false;
}

}  // namespace bekc
