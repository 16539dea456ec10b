#include "plan/compile_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace bekc {

namespace {

void append(std::vector<std::string>& to, const std::vector<std::string>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

// What reaches the linker after the library's inputs: --ldflag values as
// they are, then each --linker-arg behind -Xlinker, which nvcc and the host
// compilers all forward as one argument.
std::vector<std::string> link_flags(const PlanFlags& f) {
    std::vector<std::string> out = f.ldflags;
    for (const auto& a : f.linker_args) append(out, {"-Xlinker", a});
    return out;
}

// Every symbol the library uses must be defined when it is linked, so a
// function that is declared but never defined fails the build, not the
// dlopen of a cached library. The user's link flags come after it, so
// `--linker-arg=-zundefs` undoes it.
const std::vector<std::string> kNoUndefined = {"-Xlinker", "--no-undefined"};

// Asks the linker for the files it read, after the user's link flags. nvcc
// and the host compilers all forward -Xlinker as one argument (nvcc splits a
// value at commas: the driver gives a path without one).
std::vector<std::string> link_depfile_flags(const PlanRequest& r) {
    if (!r.link_depfile) return {};
    return {"-Xlinker", "--dependency-file=" + r.link_depfile->string()};
}

// The threads nvcc gets: no more than it has device compilations.
int device_threads(const PlanRequest& r) {
    return std::clamp(r.device_threads, 1, std::max(1, device_compilations(r.archs)));
}

std::string build_dir_map(const PlanRequest& r) {
    return "-ffile-prefix-map=" + r.build_dir + "=" + kBuildDirShown;
}

// nvcc flags that do not depend on the unit: language, optimisation, host
// compiler, archs. The handlers are the only symbols the library exports.
std::vector<std::string> nvcc_common(const PlanRequest& r) {
    std::vector<std::string> a = {r.nvcc->path.string(),
                                  "-std=" + r.flags.cxx_std,
                                  "-O" + std::to_string(r.flags.opt_level),
                                  "-ccbin",
                                  r.cxx.path.string(),
                                  "-Xcompiler",
                                  "-fPIC,-fvisibility=hidden"};
    if (r.flags.fast_math) a.push_back("--use_fast_math");
    append(a, gencode_flags(r.archs));
    if (device_threads(r) > 1) append(a, {"--threads", std::to_string(device_threads(r))});
    if (r.nvcc_objtemp) a.push_back("-objtemp");
    if (!r.base_dir.empty() && r.nvcc_maps_base_dir)
        append(a, {"-Xcompiler", "-ffile-prefix-map=" + r.base_dir + "=."});
    // After the base's: the last map that matches wins (GCC and clang).
    if (!r.build_dir.empty() && r.nvcc_maps_build_dir) append(a, {"-Xcompiler", build_dir_map(r)});
    return a;
}

std::vector<std::string> cxx_common(const PlanRequest& r) {
    std::vector<std::string> a = {r.cxx.path.string(), "-std=" + r.flags.cxx_std,
                                  "-O" + std::to_string(r.flags.opt_level), "-fPIC",
                                  "-fvisibility=hidden"};
    if (r.flags.fast_math) a.push_back("-ffast-math");
    if (!r.base_dir.empty()) a.push_back("-ffile-prefix-map=" + r.base_dir + "=.");
    if (!r.build_dir.empty()) a.push_back(build_dir_map(r));
    return a;
}

CompileStep compile_step(const PlanRequest& r, const PlanUnit& u) {
    CompileStep s;
    s.depfile = u.wrapper;
    s.depfile += ".d";
    fs::path out = u.wrapper.string() + ".o";
    std::vector<std::string>& a = s.command.argv;
    a = u.cuda ? nvcc_common(r) : cxx_common(r);
    append(a, preprocessor_flags(r.runtime_include, r.flags));
    if (u.cuda) {
        for (const auto& d : r.toolkit_includes) a.push_back("-I" + d.string());
        for (const auto& d : r.toolkit_system_includes) append(a, {"-isystem", d.string()});
        // nvcc gives its own --orig_src_path_name first: this one wins.
        if (!u.source_path.empty())
            append(a, {"-Xcudafe", "--orig_src_path_name=" + u.source_path});
    }
    append(a, u.cuda ? r.flags.cuda_flags : r.flags.cxx_flags);
    append(a, {"-MD", "-MF", s.depfile.string(), "-c", u.wrapper.string(), "-o", out.string()});
    if (r.launcher) a.insert(a.begin(), r.launcher->string());
    s.command.slots = u.cuda ? device_threads(r) : 1;
    s.command.description = (u.cuda ? "nvcc " : "c++ ") +
                            (u.display.empty() ? u.wrapper.filename().string() : u.display);
    s.command.inputs = {u.wrapper.string()};
    s.command.outputs = {out.string(), s.depfile.string()};
    return s;
}

// The entry points' file includes only bekc's runtime headers: the library's
// standard, a fixed -O2 (the code only passes a call on), none of the user's
// flags.
CompileStep handlers_step(const PlanRequest& r) {
    CompileStep s;
    s.depfile = r.handlers;
    s.depfile += ".d";
    fs::path out = r.handlers.string() + ".o";
    s.command.argv = {r.cxx.path.string(),
                      "-std=" + r.flags.cxx_std,
                      "-O2",
                      "-fPIC",
                      "-fvisibility=hidden",
                      "-I" + r.runtime_include.string(),
                      "-MD",
                      "-MF",
                      s.depfile.string(),
                      "-c",
                      r.handlers.string(),
                      "-o",
                      out.string()};
    if (r.launcher) s.command.argv.insert(s.command.argv.begin(), r.launcher->string());
    s.command.description = "c++ " + r.handlers.filename().string();
    s.command.inputs = {r.handlers.string()};
    s.command.outputs = {out.string(), s.depfile.string()};
    return s;
}

}  // namespace

namespace {

bool nvcc_at_least(const std::string& version, int want_major, int want_minor) {
    int major = 0, minor = 0;
    if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return false;
    return major > want_major || (major == want_major && minor >= want_minor);
}

// Device LTO: asked of the compiles, it must be asked of the device link too.
bool asks_lto(std::string_view flag) {
    return flag == "-dlto" || flag == "--dlink-time-opt" || flag == "-lto" || flag == "--lto" ||
           flag.find("lto_") != std::string_view::npos;
}

}  // namespace

bool nvcc_takes_objtemp(const std::string& version) {
    return nvcc_at_least(version, 12, 4);
}

bool nvcc_takes_nodlink(const std::string& version) {
    return nvcc_at_least(version, 12, 0);
}

bool flags_ask_device_link(const std::vector<std::string>& flags) {
    for (size_t i = 0; i < flags.size(); ++i) {
        std::string_view a = flags[i];
        if (asks_lto(a) || a == "-dc" || a == "--device-c" || a == "-ewp" ||
            a == "--extensible-whole-program" || a == "-optf" || a.starts_with("--options-file") ||
            a.starts_with("-Xnvlink") || a.starts_with("--nvlink-options"))
            return true;
        // -rdc VALUE, -rdc=VALUE: anything but an explicit false.
        for (std::string_view opt : {"-rdc", "--relocatable-device-code"}) {
            if (a == opt) return i + 1 >= flags.size() || flags[i + 1] != "false";
            if (a.size() > opt.size() && a.starts_with(opt) && a[opt.size()] == '=')
                return a.substr(opt.size() + 1) != "false";
        }
    }
    return false;
}

bool needs_device_link(const PlanFlags& flags, bool link_reads_opaque_code) {
    return link_reads_opaque_code || flags_ask_device_link(flags.cuda_flags) ||
           flags_ask_device_link(flags.ldflags);
}

bool needs_device_link(const PlanRequest& r) {
    return needs_device_link(r.flags, r.link_reads_opaque_code);
}

int device_compilations(const std::vector<Arch>& archs) {
    return archs.empty() ? 0 : static_cast<int>(archs.size()) + 1;
}

std::vector<std::string> preprocessor_flags(const fs::path& runtime_include,
                                            const PlanFlags& flags) {
    std::vector<std::string> out;
    for (const auto& d : flags.include_dirs) out.push_back("-I" + d);
    out.push_back("-I" + runtime_include.string());
    if (!flags.xla_include.empty()) out.push_back("-I" + flags.xla_include);
    for (const auto& d : flags.defines) out.push_back("-D" + d);
    return out;
}

std::vector<std::string> cudart_link_flags(const PlanRequest& r) {
    const std::string& kind = r.flags.cudart;
    if (kind.empty()) return {};  // nvcc's default: static
    if (kind != "shared" || !r.cudart_library) return {"-cudart", kind};
    std::string dir = r.cudart_library->parent_path().string();
    // nvcc's device link runs only with a runtime it links itself, by
    // -lcudart (prep/cudart_choice chose shared only where the directory
    // has a libcudart.so for that).
    if (needs_device_link(r))
        return {"-cudart", "shared", "-L" + dir, "-Xlinker", "-rpath", "-Xlinker", dir};
    // The toolkit's libcudart.so.N by name (a pip toolkit has no
    // libcudart.so for -lcudart to find); where a process has loaded one of
    // that soname (JAX's, from its CUDA wheels), the loader takes that one.
    return {"-cudart",  "none",   "-Xlinker", r.cudart_library->string(),
            "-Xlinker", "-rpath", "-Xlinker", dir};
}

BuildPlan make_build_plan(const PlanRequest& r) {
    BuildPlan plan;
    plan.link_depfile = r.link_depfile;
    bool any_cuda = false;
    for (const auto& u : r.units) any_cuda |= u.cuda;
    // Every source and the entry points compile side by side, then one
    // command links them: nvcc when any source is CUDA (its device link and
    // runtime), else the host compiler.
    Command link;
    std::vector<std::string>& a = link.argv;
    if (any_cuda) {
        a = {r.nvcc->path.string(), "-shared", "-ccbin", r.cxx.path.string()};
        if (needs_device_link(r)) {
            // nvlink links the build's architectures (its own default is one
            // architecture, rarely the build's), with device LTO when the
            // compiles made LTO code.
            append(a, gencode_flags(r.archs));
            if (std::any_of(r.flags.cuda_flags.begin(), r.flags.cuda_flags.end(),
                            [](const std::string& f) { return asks_lto(f); }))
                a.push_back("-dlto");
        } else if (r.nvcc_nodlink) {
            a.push_back("-nodlink");
        }
        link.env_overrides = r.link_env;
    } else {
        a = {r.cxx.path.string(), "-shared", "-fPIC"};
    }
    for (const auto& u : r.units) {
        plan.compiles.push_back(compile_step(r, u));
        link.inputs.push_back(plan.compiles.back().command.outputs.front());
    }
    plan.handlers = handlers_step(r);
    link.inputs.push_back(plan.handlers.command.outputs.front());
    if (r.runtime_object) link.inputs.push_back(r.runtime_object->string());
    append(a, link.inputs);
    append(a, {"-o", r.library.string()});
    append(a, kNoUndefined);
    append(a, link_flags(r.flags));
    if (any_cuda) {
        for (const auto& d : r.toolkit_libs) a.push_back("-L" + d.string());
        append(a, cudart_link_flags(r));  // after the user's: their RUNPATH comes first
    }
    append(a, link_depfile_flags(r));
    link.outputs = {r.library.string()};
    if (r.link_depfile) link.outputs.push_back(r.link_depfile->string());
    link.description = "link " + r.library.filename().string();
    plan.link = std::move(link);
    return plan;
}

std::vector<std::string> parse_depfile(const std::string& text) {
    // "target: a.h b\ c.h \\\n  d.h": skip the target, split on unescaped
    // white space, join continuation lines, unescape `\ ` and `$$`.
    std::vector<std::string> out;
    size_t colon = std::string::npos;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == ':' && (i + 1 >= text.size() || text[i + 1] == ' ' || text[i + 1] == '\n' ||
                               text[i + 1] == '\r' || text[i + 1] == '\\')) {
            colon = i;
            break;
        }
    }
    if (colon == std::string::npos) return out;
    std::string cur;
    auto flush = [&] {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
    };
    for (size_t i = colon + 1; i < text.size(); ++i) {
        char c = text[i];
        if (c == '\\' && i + 1 < text.size()) {
            char n = text[i + 1];
            if (n == '\n') {
                flush();
                ++i;
                continue;
            }
            if (n == '\r' && i + 2 < text.size() && text[i + 2] == '\n') {
                flush();
                i += 2;
                continue;
            }
            if (n == ' ' || n == '#' || n == '\\') {
                cur += n;
                ++i;
                continue;
            }
            cur += c;
        } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
            cur += '$';
            ++i;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            flush();
            // A second rule (phony targets from -MP) ends the first one's list.
            if (c == '\n' && i + 1 < text.size() && text[i + 1] != ' ' && text[i + 1] != '\t')
                break;
        } else {
            cur += c;
        }
    }
    flush();
    return out;
}

std::vector<LinkerDependency> parse_linker_depfile(const std::string& text) {
    std::vector<LinkerDependency> out;
    // The rule's first line is "OUT:" alone (no file read) or "OUT: \".
    size_t eol = text.find('\n');
    if (eol == std::string::npos) return out;
    auto continued = [](std::string_view line) { return !line.empty() && line.back() == '\\'; };
    std::string_view first = std::string_view(text).substr(0, eol);
    if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
    if (first.find(':') == std::string_view::npos || !continued(first)) return out;
    size_t pos = eol + 1;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        std::string_view line = std::string_view(text).substr(
            pos, end == std::string::npos ? std::string::npos : end - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        bool more = continued(line);
        if (more) {
            line.remove_suffix(1);
            if (!line.empty() && line.back() == ' ') line.remove_suffix(1);
        }
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
            line.remove_prefix(1);
        if (!line.empty()) {
            LinkerDependency d;
            d.as_written = std::string(line);
            for (size_t i = 0; i < line.size(); ++i) {
                if (line[i] == '\\' && i + 1 < line.size() &&
                    (line[i + 1] == ' ' || line[i + 1] == '#' || line[i + 1] == '\\')) {
                    d.unescaped += line[++i];
                } else if (line[i] == '$' && i + 1 < line.size() && line[i + 1] == '$') {
                    d.unescaped += '$';
                    ++i;
                } else {
                    d.unescaped += line[i];
                }
            }
            out.push_back(std::move(d));
        }
        if (!more || end == std::string::npos) break;
        pos = end + 1;
    }
    return out;
}

}  // namespace bekc
