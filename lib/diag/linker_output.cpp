#include "diag/linker_output.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string_view>

namespace bekc {

namespace {

// How each linker quotes an undefined symbol: the text between `open` and
// `close` on one line of its output.
struct UndefinedForm {
    std::string_view open;
    std::string_view close;  // empty: to the end of the line
};

constexpr UndefinedForm kUndefinedForms[] = {
    {"undefined reference to `", "'"},  // GNU ld
    {"undefined reference to '", "'"},  // GNU ld, newer releases
    {"undefined symbol: ", ""},         // lld, gold
};

// How linkers tell where an undefined symbol is used, and that they failed:
// lines with these are part of saying which symbols are undefined.
constexpr std::string_view kUndefinedContext[] = {
    ": in function `",                       // GNU ld, before the references
    ": in function '",                       // GNU ld, newer releases
    "more undefined references to ",         // GNU ld, after the first few
    "ld returned 1 exit status",             // collect2
    "linker command failed with exit code",  // clang
    ">>> ",                                  // lld: where the symbol is used
};

struct LibraryPrefix {
    std::string_view prefix;
    KnownLibrary library;
};

constexpr std::string_view kDriverNote =
    "libcuda.so comes with the NVIDIA driver; where none is installed, the toolkit's "
    "lib64/stubs holds one to link against, which nvcc searches";

// The first prefix that fits wins, so a longer one comes before the shorter
// one it starts with (cublasLt before cublas, cuda before cu).
constexpr LibraryPrefix kLibraryPrefixes[] = {
    {"cublasLt", {"cuBLASLt", "-lcublasLt", "", true, ""}},
    {"cublas", {"cuBLAS", "-lcublas", "", true, ""}},
    {"cusparseLt", {"cuSPARSELt", "-lcusparseLt", "", false, ""}},
    {"cusparse", {"cuSPARSE", "-lcusparse", "", true, ""}},
    {"curand", {"cuRAND", "-lcurand", "", true, ""}},
    {"cufft", {"cuFFT", "-lcufft", "", true, ""}},
    {"cusolverMg", {"cuSOLVERMg", "-lcusolverMg", "", true, ""}},
    {"cusolver", {"cuSOLVER", "-lcusolver", "", true, ""}},
    {"cutensor", {"cuTENSOR", "-lcutensor", "", false, ""}},
    {"cudnn", {"cuDNN", "-lcudnn", "", false, ""}},
    {"nccl", {"NCCL", "-lnccl", "", false, ""}},
    {"pnccl", {"NCCL", "-lnccl", "", false, ""}},
    {"nvrtc", {"NVRTC", "-lnvrtc", "", true, ""}},
    {"nvJitLink", {"nvJitLink", "-lnvJitLink", "", true, ""}},
    {"nvtx",
     {"NVTX", "-lnvToolsExt", "", true,
      "NVTX 3's header <nvtx3/nvToolsExt.h> needs no library: include it instead"}},
    {"nvml", {"NVML", "-lnvidia-ml", "", false, ""}},
    {"cuda", {"the CUDA runtime", "-lcudart", "", true, ""}},
    {"cu", {"the CUDA driver API", "-lcuda", "", false, kDriverNote}},
    {"omp_", {"OpenMP", "-fopenmp", "-lgomp", false, ""}},
    {"GOMP_", {"OpenMP", "-fopenmp", "-lgomp", false, ""}},
    {"__kmpc_", {"OpenMP", "-fopenmp", "-lomp", false, ""}},
    {"pthread_", {"POSIX threads", "-pthread", "-lpthread", false, ""}},
    {"dlopen", {"the dynamic loader", "-ldl", "", false, ""}},
    {"dlsym", {"the dynamic loader", "-ldl", "", false, ""}},
    {"dlclose", {"the dynamic loader", "-ldl", "", false, ""}},
    {"dlerror", {"the dynamic loader", "-ldl", "", false, ""}},
};

bool has_prefix_of(std::string_view symbol, std::string_view prefix) {
    if (!symbol.starts_with(prefix)) return false;
    if (prefix.ends_with('_') || symbol.size() == prefix.size()) return true;
    char next = symbol[prefix.size()];
    return next >= 'A' && next <= 'Z';
}

}  // namespace

std::string demangle(const std::string& name) {
    if (name.rfind("_Z", 0) != 0) return name;
    int status = 0;
    char* plain = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    std::string out = status == 0 && plain ? plain : name;
    std::free(plain);
    return out;
}

std::vector<std::string> undefined_symbols(const std::string& linker_output) {
    std::vector<std::string> out;
    std::stringstream ss(linker_output);
    for (std::string line; std::getline(ss, line);) {
        for (const auto& form : kUndefinedForms) {
            size_t at = line.find(form.open);
            if (at == std::string::npos) continue;
            size_t from = at + form.open.size();
            size_t to = form.close.empty() ? line.size() : line.find(form.close, from);
            if (to == std::string::npos) continue;
            std::string symbol = demangle(line.substr(from, to - from));
            while (!symbol.empty() && (symbol.back() == ' ' || symbol.back() == '\r'))
                symbol.pop_back();
            if (!symbol.empty() && std::find(out.begin(), out.end(), symbol) == out.end())
                out.push_back(symbol);
            break;
        }
    }
    return out;
}

std::string lines_besides_undefined(const std::string& linker_output) {
    std::string out;
    std::stringstream ss(linker_output);
    for (std::string line; std::getline(ss, line);) {
        bool undefined = !undefined_symbols(line).empty();
        for (std::string_view context : kUndefinedContext)
            undefined |= line.find(context) != std::string::npos;
        if (!undefined && line.find_first_not_of(" \t\r") != std::string::npos) out += line + "\n";
    }
    return out;
}

const KnownLibrary* library_defining(std::string_view symbol) {
    for (const auto& p : kLibraryPrefixes)
        if (has_prefix_of(symbol, p.prefix)) return &p.library;
    return nullptr;
}

std::string list_names(const std::vector<std::string>& names, size_t shown) {
    std::string out;
    size_t listed = names.size() > shown ? shown : names.size();
    for (size_t i = 0; i < listed; ++i) {
        bool last = i + 1 == listed && listed == names.size();
        out += (i == 0 ? "" : last ? " and " : ", ") + names[i];
    }
    if (listed < names.size()) out += " and " + std::to_string(names.size() - listed) + " more";
    return out;
}

}  // namespace bekc
