// nvcc's pipeline as steps of the build graph. One nvcc process compiles a
// CUDA source one phase after the other: the host preprocessing and cudafe++,
// then per architecture the device preprocessing, cicc and ptxas, then
// fatbinary, then the host compile. `nvcc --dryrun` lists those phases as the
// commands it would run; bekc reads that list and runs the same commands
// itself as graph steps, so independent phases run side by side and each
// architecture's device code is a step of its own (its result kept in the
// step cache, store/step_cache.hpp).
//
// The commands are nvcc's own, byte for byte, with three changes: nothing
// is redirected (bekc reads the output); the device code reaches the host
// object through a symbol instead of an #include (fatbinary writes the fat
// binary alone, an assembler step embeds it in an object of its own, and the
// host compile includes a fatbin.c that points at that object's symbol); and
// the module id is bekc's, written into nvcc's module id file before
// cudafe++ and cicc read it (SplitRequest::module_id), so that cicc need not
// wait for cudafe++ to make one. The host compile then waits only for
// cudafe++ and the cicc that writes its stub, not for every architecture's
// ptxas, and does not change when the device code does. The SASS and PTX
// are nvcc's; the names of a source's internal device symbols (an anonymous
// namespace's, which carry the module id) are bekc's.
//
// Pure: the driver runs the dry run and hands its output here.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/build_graph.hpp"

namespace bekc {

enum class NvccPhaseKind {
    HostPreprocess,    // c++ -E, host side (nvcc's .cpp4.ii)
    DevicePreprocess,  // c++ -E -D__CUDA_ARCH__=N (nvcc's .cpp1.ii)
    Cudafe,            // cudafe++: the host side of the source, and its module id
    Cicc,              // cicc: PTX and the registration stub, per architecture
    Ptxas,             // ptxas: SASS, per architecture
    Fatbinary,         // fatbinary: every image into one fat binary
    HostCompile,       // c++ -c: the host object
};

// "host-preprocess", "device-preprocess", "cudafe++", "cicc", "ptxas",
// "fatbinary", "host-compile".
std::string_view nvcc_phase_name(NvccPhaseKind kind);

struct NvccPhase {
    NvccPhaseKind kind = NvccPhaseKind::HostCompile;
    std::vector<std::string> argv;  // variables expanded, quotes removed, no redirection
    std::string arch;               // compute_80 (preprocess, cicc), sm_80 (ptxas); else empty
    std::vector<std::string> inputs, outputs;  // the files named on its command line
};

struct NvccPipeline {
    // The variables nvcc sets for its tools (PATH, LD_LIBRARY_PATH,
    // NVVMIR_LIBRARY_DIR, ...), its own `_NAME_` helpers left out.
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<NvccPhase> phases;  // in nvcc's order
};

// The argv of `nvcc --dryrun` for one compile: the same command without its
// -MD/-MF (bekc asks the preprocessors instead) and --threads (bekc runs the
// architectures side by side itself). Empty when the compile cannot be
// split: a launcher in front, or flags that ask for relocatable device code,
// a device link or anything the split does not know (plan/compile_plan.hpp,
// flags_ask_device_link). `nvcc_flags`: every flag nvcc sees, those it
// reads from the environment included (toolchain/compiler_env.hpp,
// NvccEnvFlags).
std::vector<std::string> nvcc_dryrun_argv(const Command& compile,
                                          const std::vector<std::string>& nvcc_flags);

// Reads what `nvcc --dryrun` printed. An error names the first line bekc
// does not know how to run exactly as nvcc would, or relocatable device
// code (a tool given --device-c, whatever asked for it: only nvcc's device
// link completes it): the compile then stays one nvcc process.
std::expected<NvccPipeline, std::string> parse_nvcc_dryrun(std::string_view text);

// nvcc names cudafe++'s output and the stub it includes after the last
// architecture ("x.compute_90.cudafe1.stub.c"): `text` with each such
// ".compute_90" (or ".sm_90") before ".cudafe1." replaced by `with`. ""
// gives the names bekc runs cudafe++ with ("x.cudafe1.stub.c"); the step keys
// hide the architecture in what a reused stub says of its own name.
std::string replace_cudafe_arch(std::string text, std::string_view with);

// What cudafe++ and cicc take as a module id: letters, digits and '_' (it
// becomes part of the names of the source's internal device symbols, the
// anonymous namespace's "_GLOBAL__N_<id>"), at most kMaxModuleId of them.
inline constexpr size_t kMaxModuleId = 256;
bool is_module_id(std::string_view id);

// The name of the symbol that holds unit `unit`'s fat binary in its library
// (hidden): bekc_fatbin_<unit>.
std::string fatbin_symbol(size_t unit);

struct SplitRequest {
    size_t step = 0;  // the Compile step of one CUDA unit in `graph`
    fs::path cxx;     // the host compiler, which assembles the fat binary's object
    // What cudafe++ and cicc get as --orig_src_path_name instead of the
    // wrapper's path in the build directory: a path that names the input
    // and stays the same from build to build. The module id both derive from
    // it (the names of the source's internal device symbols) then stays the
    // same too, so one architecture's device code fits the host code of a
    // build for other architectures.
    std::string orig_src_path;
    // The module id bekc gives this input (is_module_id), or empty. With
    // one, a step writes it into the file nvcc names for the module id
    // before cudafe++ and cicc run, cudafe++ reads it from there instead of
    // making one (no --gen_module_id_file), and every cicc reads the same
    // file: cicc starts beside cudafe++, not after it, and the host code and
    // the device code name the source's internal symbols alike. Empty:
    // cudafe++ makes the id, as in nvcc, and cicc waits for it.
    std::string module_id;
};

// Where the host compile of a split compile writes its Make dependencies:
// the headers it reads besides cudafe++'s output (graph/step_keys.hpp).
fs::path host_compile_depfile(const Step& host_compile);

// Replaces the compile step `request.step` of `graph` with the pipeline's
// phases, each preprocessor writing a dependency file (Step::depfile), and
// adds the fat binary's object to the link. An error when the pipeline is
// not the one expected of a whole-program compile; `graph` is then
// unchanged.
std::expected<void, std::string> split_nvcc_compile(BuildGraph& graph, const NvccPipeline& pipeline,
                                                    const SplitRequest& request);

}  // namespace bekc
