// `bekc pack`: prebuilt kernels for machines that never compile them
// (docs/packs.md). The modules of its sources are built for a list of
// architectures into the own cache (each a child `bekc build <package>` or
// `bekc replay <recording>`), then their entries and portable records are
// copied into a fresh cache directory, the pack, whose marker describes it
// (store/cache_export.hpp). A machine that adds the pack as a read-only cache
// (--read-only-caches, or an installed pack wheel) is served from it without a
// compiler when a library runs there (portable/portable.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "prep/build_context.hpp"

namespace bekc {

struct PackOptions {
    // Package directories (`bekc build <package>`), recordings of loads
    // (`bekc replay`), and bekc caches, whose every build goes in as it is.
    std::vector<std::string> sources;
    std::string output;          // -o: the directory, tarball or wheel's directory
    std::string format = "dir";  // dir | tar | wheel
    std::string arch;            // --arch; empty: default_pack_archs
    std::string name, version = "0";
    std::optional<std::string> cache_dir;
    int jobs = 0;
    bool json = false, quiet = false, verbose = false;
    std::optional<std::string> trace;  // --trace FILE (cli/trace_file.hpp writes it)
};

// The architectures a pack is built for when --arch is not given: every real
// one `nvcc --list-gpu-code` lists that JAX supports (compute capability 5.2
// and up, no arch-specific variants); bekc adds PTX of the newest. Empty when
// nvcc cannot say.
std::string default_pack_archs(const Tool& nvcc, Runner& runner);

// Pure: the default list from `nvcc --list-gpu-code`'s output.
std::string pack_archs_from(const std::string& list_gpu_code);

// The name of a pack written to `output` when --name is not given: its file
// name up to the first '.', each character a pack's name cannot hold
// (store/pack_marker.hpp) made '_' ("be-kernels.tar.gz" -> "be_kernels").
std::string default_pack_name(const std::string& output);

// Runs the whole pack; returns the exit code.
int run_pack(const PackOptions& options, BuildContext& ctx);

}  // namespace bekc
