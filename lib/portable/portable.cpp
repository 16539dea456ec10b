#include "portable/portable.hpp"

#include <cstdio>

#include "graph/keys.hpp"
#include "prep/remote_choice.hpp"
#include "store/target_file.hpp"
#include "toolchain/device_code.hpp"
#include "toolchain/machine.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

// The --arch list asked for by name; empty for auto and native.
std::vector<Arch> asked_archs(const BuildOptions& o) {
    if (o.arch == "auto" || o.arch == "native") return {};
    return parse_arch_list(o.arch).value_or(std::vector<Arch>{});
}

struct Search {
    const std::string& key;
    BaseDir base;
    MachineTarget here;
    std::vector<Arch> asked;
    const Reporter& report;
    const BuildOptions& o;
    BuildContext& ctx;
    std::string why_not;  // the first reason an entry did not fit
};

// Why the CUDA runtime a library links is not to be found here, or "".
std::string cudart_problem(const LibraryTarget& t, const Search& s) {
    if (!t.is_cuda() || t.cudart != "shared" ||
        cudart_available(t.cuda, t.cudart_dir, s.o.python_sites, s.ctx.env))
        return "";
    const std::string major = t.cuda.substr(0, t.cuda.find('.'));
    return "it links the shared CUDA runtime, libcudart.so." + major +
           ", which is neither loaded nor installed here (pip's nvidia-cuda-runtime, which "
           "JAX's CUDA " +
           major + " wheels bring, or a CUDA " + major + " toolkit)";
}

// What a hit checked: the library's target, and this machine.
std::string describe_hit(const LibraryTarget& t, const Search& s) {
    return describe_target(t) + ", built by " +
           (t.nvcc_version.empty() ? t.cxx_version : t.nvcc_version) +
           "; this machine: " + s.here.machine + ", glibc " + s.here.glibc +
           (s.here.gpus.empty() ? ", no GPU (" + s.here.gpus_how + ")"
                                : ", GPUs " + arch_list_string(s.here.gpus));
}

// Why entry `key` of `dir` cannot serve this build here, or "" (and its
// target in `taken`).
std::string entry_misfit(const CacheDir& dir, const std::string& key, const Search& s,
                         bool sass_only, std::optional<LibraryTarget>& taken) {
    auto target = read_target(dir, CacheLayout::entry(key));
    if (!target) return target.error().message;
    std::string why = target_misfit(*target, s.here, s.asked, sass_only);
    if (why.empty()) why = cudart_problem(*target, s);
    if (why.empty()) taken = std::move(*target);
    return why;
}

// One cache's answer, in one pass (`sass_only`: see target_misfit). An
// entry is checked whole (its seal holds target.json too) before its target
// is believed.
PortableLookup find_in(Cache& cache, Search& s, bool sass_only) {
    PortableLookup out;
    std::optional<LibraryTarget> taken;
    auto fits = [&](const std::string& key) {
        auto e = cache.lookup(key, !cache.read_only());
        if (!e) {
            if (e.error().kind == Miss::Kind::Corrupt)
                s.report.warn("cache entry " + key + " in " + cache.path().string() +
                              " is corrupt (" + e.error().reason + "); not used");
            return false;
        }
        std::string why = entry_misfit(cache.dir(), key, s, sass_only, taken);
        if (why.empty()) {
            out.entry = std::move(*e);
            return true;
        }
        if (s.why_not.empty()) s.why_not = "entry " + key.substr(0, 12) + ": " + why;
        return false;
    };
    DirectLookup d = cache.lookup_portable(s.key, s.base, fits);
    if (!d.key) {
        if (s.why_not.empty() && !d.why_not.empty())
            s.why_not = d.why_not == "no direct-mode record"
                            ? "none was built with these inputs and options"
                            : d.why_not;
        return out;
    }
    out.checked = describe_hit(*taken, s);
    return out;
}

// --remote-cache, when one is configured: the entry of its portable record,
// downloaded into the own cache, if it runs here.
PortableLookup find_remote(Cache& own, Search& s) {
    PortableLookup out;
    auto remote = open_remote_cache(s.o, s.ctx, s.report);
    if (!remote) return out;
    std::optional<LibraryTarget> taken;
    auto fits = [&](const Entry& e) {
        std::string why = entry_misfit(own.dir(), e.key, s, false, taken);
        if (why.empty()) return true;
        if (s.why_not.empty()) s.why_not = "the remote's entry " + e.key.substr(0, 12) + ": " + why;
        return false;
    };
    out.entry = remote->fetch_portable(own, s.key, s.base, fits);
    if (out.entry) out.checked = describe_hit(*taken, s) + " (from the remote cache)";
    return out;
}

}  // namespace

PortableLookup find_portable(Cache& own, const std::string& portable_key, const BuildInputs& in,
                             const BuildOptions& o, bool own_too, BuildContext& ctx,
                             const Reporter& report) {
    Search s{portable_key,
             portable_base(in),
             machine_target(in.cache_root, ctx.runner, ctx.tools),
             asked_archs(o),
             report,
             o,
             ctx,
             {}};
    for (bool sass_only : {true, false}) {
        if (own_too)
            if (PortableLookup found = find_in(own, s, sass_only); found.entry) return found;
        for (const fs::path& root : in.read_only_caches) {
            Cache layer(root, {}, CacheAccess::ReadOnly);
            PortableLookup found = find_in(layer, s, sass_only);
            if (!found.entry) continue;
            found.layer = root;
            return found;
        }
    }
    if (own_too)
        if (PortableLookup found = find_remote(own, s); found.entry) return found;
    PortableLookup none;
    none.why_not = s.why_not.empty() ? "no cache holds a build of these inputs" : s.why_not;
    return none;
}

LibraryTarget library_target(const BuildInputs& in, const fs::path& library) {
    MachineTarget host = host_target();
    LibraryTarget t;
    t.machine = host.machine;
    t.glibc = host.glibc;
    t.cxx_version = in.cxx_version;
    if (!in.nvcc) return t;
    t.nvcc_version = in.nvcc_version;
    t.cuda = cuda_release(in.nvcc_version);
    t.cudart = in.flags.cudart;
    if (in.cudart_library) t.cudart_dir = in.cudart_library->parent_path().string();
    // What the fat binaries hold, whichever flags asked for it (--arch,
    // -gencode in --cuda-flag, NVCC_APPEND_FLAGS). A library that cannot be
    // read for it gets none: no hit without a compiler will take it.
    if (auto code = read_device_code(library)) {
        t.sass = std::move(code->sass);
        t.ptx = std::move(code->ptx);
    }
    return t;
}

void report_portable_hit(const BuildOptions& o, const fs::path& layer, const std::string& checked,
                         const Reporter& report) {
    std::string line = "hit by the portable key, from " +
                       (layer.empty() ? std::string("the own cache") : layer.string()) +
                       "; checked in place of the toolchain: " + checked;
    if (o.explain_key && !o.verbose)
        std::fprintf(stderr, "bekc: %s\n", line.c_str());
    else
        report.info(line);
}

void record_portable(Cache& cache, const std::string& portable_key, const DirectInputs& direct,
                     const BuildInputs& in, const std::string& multiarch,
                     std::optional<RemoteCache>& remote, const Entry& entry,
                     const Reporter& report) {
    DirectInputs kept = portable_dependencies(direct, in, multiarch);
    const BaseDir base = portable_base(in);
    if (auto r = cache.record_portable(portable_key, kept, base); !r)
        report.warn("could not record the build for hits without a compiler: " + r.error().message);
    if (remote) remote->publish_portable(cache, entry, portable_key, kept, base);
}

Error toolchain_missing_error(const BuildInputs& in, const PortableLookup& found) {
    Error e = *in.toolchain_missing;
    e.notes.push_back("no cache holds a build of these inputs that runs here: " + found.why_not);
    e.notes.push_back(
        "a hit needs no compiler: add the cache or pack that holds one with --read-only-caches "
        "(docs/cache.md, \"Hits without a compiler\")");
    return e;
}

}  // namespace bekc
