// What a linker's output says (diag/linker_output): the undefined symbols,
// the library that defines each, and the lines that say something else.
// tests/unit/test_driver.cpp checks the message a failed link ends with.
#include <catch2/catch.hpp>

#include "diag/linker_output.hpp"

using namespace bekc;

namespace {

// The name of the library `symbol` is known to be of, or "-".
std::string library_of(std::string_view symbol) {
    const KnownLibrary* library = library_defining(symbol);
    return library ? std::string(library->name) + " " + std::string(library->link) : "-";
}

}  // namespace

TEST_CASE("linker output: a library's symbols are known by its prefix", "[link]") {
    CHECK(library_of("cublasCreate_v2") == "cuBLAS -lcublas");
    CHECK(library_of("cublasXtCreate") == "cuBLAS -lcublas");
    CHECK(library_of("cublasLtMatmul") == "cuBLASLt -lcublasLt");
    CHECK(library_of("cusparseSpMV") == "cuSPARSE -lcusparse");
    CHECK(library_of("curandCreateGenerator") == "cuRAND -lcurand");
    CHECK(library_of("cufftPlan1d") == "cuFFT -lcufft");
    CHECK(library_of("cusolverDnSgetrf") == "cuSOLVER -lcusolver");
    CHECK(library_of("ncclAllReduce") == "NCCL -lnccl");
    CHECK(library_of("nvrtcCompileProgram") == "NVRTC -lnvrtc");
    CHECK(library_of("nvtxRangePushA") == "NVTX -lnvToolsExt");
    CHECK(library_of("cudnnCreate") == "cuDNN -lcudnn");
    CHECK(library_of("cudaMalloc") == "the CUDA runtime -lcudart");
    CHECK(library_of("cuInit") == "the CUDA driver API -lcuda");
    CHECK(library_of("cuMemAlloc_v2") == "the CUDA driver API -lcuda");
    CHECK(library_of("omp_get_max_threads") == "OpenMP -fopenmp");
    CHECK(library_of("GOMP_parallel") == "OpenMP -fopenmp");
    CHECK(library_of("pthread_create") == "POSIX threads -pthread");
    CHECK(library_of("dlopen") == "the dynamic loader -ldl");
    // A prefix followed by a lower-case letter or '_' is a name of the user's.
    for (const char* own : {"cublas_helper", "cuda_step", "curious", "custom(int)", "nccl_init",
                            "helper(float)", "ns::cublasCreate()", "omp", "dlopen_all"})
        CHECK(library_of(own) == "-");
    // A link through nvcc takes OpenMP's library by name.
    CHECK(library_defining("GOMP_parallel")->nvcc_link == "-lgomp");
    CHECK(library_defining("cublasCreate_v2")->in_toolkit);
    CHECK_FALSE(library_defining("ncclAllReduce")->in_toolkit);
}

TEST_CASE("linker output: a few names, then how many more", "[link]") {
    CHECK(list_names({"a"}) == "a");
    CHECK(list_names({"a", "b"}) == "a and b");
    CHECK(list_names({"a", "b", "c"}) == "a, b and c");
    CHECK(list_names({"a", "b", "c", "d", "e"}) == "a, b, c and 2 more");
    CHECK(list_names({"a", "b", "c"}, 1) == "a and 2 more");
}

TEST_CASE("linker output: undefined symbols once each, demangled, and the other lines", "[link]") {
    const std::string ld =
        "/usr/bin/ld: /tmp/bekc-0/build.x/0_k.bekc.cu.o: in function `f()':\n"
        "k.cu:(.text+0x1): undefined reference to `cublasCreate_v2'\n"
        "/usr/bin/ld: k.cu:(.text+0x2): undefined reference to `_Z6helperf'\n"
        "/usr/bin/ld: k.cu:(.text+0x3): undefined reference to `cublasCreate_v2'\n"
        "/usr/bin/ld: k.cu:(.text+0x4): more undefined references to `cublasCreate_v2' follow\n"
        "/usr/bin/ld: warning: something else\n"
        "collect2: error: ld returned 1 exit status\n";
    CHECK(undefined_symbols(ld) == std::vector<std::string>{"cublasCreate_v2", "helper(float)"});
    CHECK(lines_besides_undefined(ld) == "/usr/bin/ld: warning: something else\n");
    CHECK(lines_besides_undefined("ld.lld: error: undefined symbol: cuInit\n>>> referenced by "
                                  "k.cpp\n\nclang: error: linker command failed with exit code 1 "
                                  "(use -v to see invocation)\n")
              .empty());
}
