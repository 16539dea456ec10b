// libbekc_numba (runtime/numba/bekc_numba.cpp), called the way XLA and the
// Python side call it, with no GPU: the library is dlopened, its entries are
// added through its C functions, and its two FFI handlers are called with call
// frames and the API table of tests/harness/fake_xla.hpp. The CUDA driver is
// tests/harness/fake_libcuda.cpp, which the library opens because this file sets
// BEKC_NUMBA_LIBCUDA before any test runs (the library reads it once, on the
// first launch, so it must be set before anything in this process launches).
//
//   numba_harness "[numba]"    every test
//
// BEKC_NUMBA_HARNESS_LIBRARY overrides the libbekc_numba.so under test.
//
// The cases that need a library without a usable driver re-run this binary
// ("[numba-child]", hidden) with BEKC_NUMBA_HARNESS_CHILD set and
// BEKC_NUMBA_LIBCUDA naming a missing library or one without the driver API.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fake_xla.hpp"

extern char** environ;

using harness::FrameBuilder;
using harness::MetadataQuery;
using harness::Outcome;

namespace {

constexpr int32_t kInvalidArgument = BEKC_XLA_ERROR_INVALID_ARGUMENT;
constexpr int32_t kInternal = BEKC_XLA_ERROR_INTERNAL;
const char kLaunchTarget[] = "bekc.numba_cuda_kernel";
const char kCallTarget[] = "bekc.numba_cuda_callable";

void* open_library(const char* path) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    return h;
}

template <class F>
F symbol(void* lib, const char* name) {
    void* p = dlsym(lib, name);
    if (p == nullptr) throw std::runtime_error(std::string("dlsym: ") + name + " not found");
    return reinterpret_cast<F>(p);
}

using Callback = int (*)(int64_t id, const uint64_t* pointers, int64_t count, void* stream,
                         char* error, size_t error_size);

// libbekc_numba's exports.
struct Numba {
    int (*abi_version)();
    int64_t (*add_launch)(const char* name, void* function, const uint32_t* grid,
                          const uint32_t* block, uint32_t shared_mem, int cooperative,
                          int64_t num_args, int64_t num_rets, const int32_t* dtypes,
                          const int32_t* ranks, char* error, size_t error_size);
    int64_t (*add_callable)(const char* name, Callback callback, int64_t num_args,
                            int64_t num_rets);
    BekcXla_Handler* launch;
    BekcXla_Handler* call;
};

const Numba& numba() {
    static const Numba n = [] {
        const char* env = std::getenv("BEKC_NUMBA_HARNESS_LIBRARY");
        void* lib = open_library(env && *env ? env : BEKC_NUMBA_LIBRARY);
        Numba x;
        x.abi_version = symbol<decltype(x.abi_version)>(lib, "bekc_numba_abi_version");
        x.add_launch = symbol<decltype(x.add_launch)>(lib, "bekc_numba_add_launch");
        x.add_callable = symbol<decltype(x.add_callable)>(lib, "bekc_numba_add_callable");
        x.launch = symbol<BekcXla_Handler*>(lib, "bekc_numba_launch");
        x.call = symbol<BekcXla_Handler*>(lib, "bekc_numba_call");
        return x;
    }();
    return n;
}

// The fields of a launch record, in the order of fake_libcuda.cpp's Header.
enum {
    kHeaderFunction,
    kHeaderGridX,
    kHeaderGridY,
    kHeaderGridZ,
    kHeaderBlockX,
    kHeaderBlockY,
    kHeaderBlockZ,
    kHeaderSharedMem,
    kHeaderStream,
    kHeaderCooperative,
    kHeaderExtra,
    kHeaderContext,
    kHeaderParamsNull,
    kHeaderSize
};

struct Recorded {
    uint64_t function, grid[3], block[3], shared_mem, stream, extra, context;
    bool cooperative, params_null;
    std::vector<uint64_t> params;
};

// The fake driver's controls. dlopen gives this process one copy of the fake,
// shared with the library (same path).
struct FakeCuda {
    void (*reset)(int params);
    int (*header_size)();
    void (*fail_next_launch)(int r);
    void (*fail_context_call)(int which, int r);
    void (*set_current_context)(void* ctx);
    void* (*current_context)();
    void (*set_stream_context)(void* ctx);
    int (*context_calls)(int which);
    void* (*last_stream_get_ctx_stream)();
    void* (*last_ctx_set)();
    int (*launch_count)();
    int (*launch)(int i, uint64_t* header, uint64_t* params, int max_params);

    Recorded record(int i) const {
        uint64_t h[kHeaderSize];
        std::vector<uint64_t> p(1024);
        const int n = launch(i, h, p.data(), static_cast<int>(p.size()));
        if (n < 0) throw std::runtime_error("no launch " + std::to_string(i));
        Recorded r;
        r.function = h[kHeaderFunction];
        for (int d = 0; d < 3; ++d) {
            r.grid[d] = h[kHeaderGridX + d];
            r.block[d] = h[kHeaderBlockX + d];
        }
        r.shared_mem = h[kHeaderSharedMem];
        r.stream = h[kHeaderStream];
        r.cooperative = h[kHeaderCooperative] != 0;
        r.extra = h[kHeaderExtra];
        r.context = h[kHeaderContext];
        r.params_null = h[kHeaderParamsNull] != 0;
        p.resize(static_cast<size_t>(n));
        r.params = std::move(p);
        return r;
    }
};

enum { kCtxGetCurrent = 0, kStreamGetCtx = 1, kCtxSetCurrent = 2 };

const FakeCuda& fake() {
    static const FakeCuda f = [] {
        void* lib = open_library(BEKC_FAKE_LIBCUDA);
        FakeCuda x;
        x.reset = symbol<decltype(x.reset)>(lib, "fake_cuda_reset");
        x.header_size = symbol<decltype(x.header_size)>(lib, "fake_cuda_header_size");
        x.fail_next_launch =
            symbol<decltype(x.fail_next_launch)>(lib, "fake_cuda_fail_next_launch");
        x.fail_context_call =
            symbol<decltype(x.fail_context_call)>(lib, "fake_cuda_fail_context_call");
        x.set_current_context =
            symbol<decltype(x.set_current_context)>(lib, "fake_cuda_set_current_context");
        x.current_context = symbol<decltype(x.current_context)>(lib, "fake_cuda_current_context");
        x.set_stream_context =
            symbol<decltype(x.set_stream_context)>(lib, "fake_cuda_set_stream_context");
        x.context_calls = symbol<decltype(x.context_calls)>(lib, "fake_cuda_context_calls");
        x.last_stream_get_ctx_stream = symbol<decltype(x.last_stream_get_ctx_stream)>(
            lib, "fake_cuda_last_stream_get_ctx_stream");
        x.last_ctx_set = symbol<decltype(x.last_ctx_set)>(lib, "fake_cuda_last_ctx_set");
        x.launch_count = symbol<decltype(x.launch_count)>(lib, "fake_cuda_launch_count");
        x.launch = symbol<decltype(x.launch)>(lib, "fake_cuda_launch");
        if (x.header_size() != kHeaderSize)
            throw std::runtime_error("fake_libcuda's launch record differs from the harness's");
        return x;
    }();
    return f;
}

// Fresh fake driver state expecting `params` kernel parameters per launch.
const FakeCuda& reset_fake(int params) {
    const FakeCuda& f = fake();
    f.reset(params);
    return f;
}

// Addresses that stand for device memory: the library must pass them on and
// never dereference them.
void* device(uint64_t address) {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
}
uint64_t bits(const void* p) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

void* const kStream = device(0x5151'0000'0042);
void* const kFunction = device(0xF00D'0000'1000);

// Clears what the fake API table recorded; Stream_Get answers kStream.
harness::ApiLog& reset_log() {
    harness::ApiLog& log = harness::api_log();
    log = harness::ApiLog{};
    log.stream = kStream;
    return log;
}

// Calls `handler` with `frame` after clearing the fake's log, and checks that
// an error, if any, was made the way XLA expects.
Outcome call(BekcXla_Handler* handler, BekcXla_CallFrame& frame) {
    harness::ApiLog& log = reset_log();
    Outcome o = harness::take(handler(&frame));
    CHECK(log.unused_calls == 0);
    if (!o.ok) {
        CHECK(log.error_creates == 1);
        CHECK(log.error_create_struct_size == BEKC_XLA_ERROR_CREATE_ARGS_STRUCT_SIZE);
        CHECK(log.error_create_extension_null);
    } else {
        CHECK(log.error_creates == 0);
    }
    return o;
}

void require_error(const Outcome& o, int32_t code, const std::string& message) {
    INFO("handler message: " << o.message);
    REQUIRE_FALSE(o.ok);
    CHECK(o.code == code);
    CHECK(o.message == message);
}

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

// What bekc_numba_add_launch is given; defaults make a valid kernel.
struct KernelSpec {
    std::string name = "k";
    void* function = kFunction;
    std::array<uint32_t, 3> grid{1, 1, 1};
    std::array<uint32_t, 3> block{32, 1, 1};
    uint32_t shared_mem = 0;
    int cooperative = 0;
    int64_t num_args = 0;
    int64_t num_rets = 0;
    std::vector<int32_t> dtypes;  // args then rets
    std::vector<int32_t> ranks;

    KernelSpec& arg(int32_t dtype, int32_t rank) {
        ++num_args;
        dtypes.insert(dtypes.begin() + num_args - 1, dtype);
        ranks.insert(ranks.begin() + num_args - 1, rank);
        return *this;
    }
    KernelSpec& ret(int32_t dtype, int32_t rank) {
        ++num_rets;
        dtypes.push_back(dtype);
        ranks.push_back(rank);
        return *this;
    }
};

struct Added {
    int64_t id;
    std::string error;
};

Added add(const KernelSpec& k, size_t error_size = 256) {
    std::vector<char> error(error_size + 1, '#');
    error[error_size] = '\0';
    Added a;
    a.id = numba().add_launch(k.name.c_str(), k.function, k.grid.data(), k.block.data(),
                              k.shared_mem, k.cooperative, k.num_args, k.num_rets, k.dtypes.data(),
                              k.ranks.data(), error.data(), error_size);
    if (a.id < 0) a.error = error.data();
    return a;
}

int64_t add_ok(const KernelSpec& k) {
    Added a = add(k);
    INFO("add_launch error: " << a.error);
    REQUIRE(a.id >= 0);
    return a.id;
}

FrameBuilder& with_id(FrameBuilder& fb, int64_t id) {
    return fb.attr("bekc_id", BEKC_XLA_DTYPE_S64, id);
}

// ---- the metadata query (harness::MetadataQuery) ----

void check_metadata(BekcXla_Handler* h, bool want_trait, const BekcXla_Api* api, bool other_first) {
    MetadataQuery q(api, other_first);
    const BekcXla_Metadata expected = q.expected(want_trait);

    Outcome o = call(h, q.frame);
    CHECK(o.ok);
    // Exactly the version and the traits changed, not state_type_id.
    CHECK(std::memcmp(&q.metadata, &expected, sizeof expected) == 0);
    CHECK(q.metadata.api_version.major_version == BEKC_XLA_HANDLER_API_MAJOR);
    CHECK(q.metadata.api_version.minor_version == BEKC_XLA_HANDLER_API_MINOR);
    CHECK(q.metadata.traits ==
          (want_trait ? uint32_t{BEKC_XLA_TRAIT_COMMAND_BUFFER_COMPATIBLE} : 0u));
    CHECK(harness::api_log().stream_gets == 0);
}

// ---- the callable's side ----

struct CallbackLog {
    int calls = 0;
    int64_t id = -1;
    std::vector<uint64_t> pointers;
    void* stream = nullptr;
    size_t error_size = 0;
    // What the next call does.
    int result = 0;
    std::string message;
};

CallbackLog& callback_log() {
    static CallbackLog log;
    return log;
}

CallbackLog& reset_callback(int result = 0, std::string message = "") {
    CallbackLog& log = callback_log();
    log = CallbackLog{};
    log.result = result;
    log.message = std::move(message);
    return log;
}

int recording_callback(int64_t id, const uint64_t* pointers, int64_t count, void* stream,
                       char* error, size_t error_size) {
    CallbackLog& log = callback_log();
    ++log.calls;
    log.id = id;
    log.pointers.assign(pointers, pointers + count);
    log.stream = stream;
    log.error_size = error_size;
    if (!log.message.empty()) std::snprintf(error, error_size, "%s", log.message.c_str());
    return log.result;
}

// Runs this binary's hidden "[numba-child]" cases with BEKC_NUMBA_LIBCUDA set
// to `libcuda`; returns the exit status.
int run_child(const std::string& libcuda, const std::string& expect) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
        const std::string s = *e;
        if (starts_with(s, "BEKC_NUMBA_LIBCUDA=") || starts_with(s, "BEKC_NUMBA_HARNESS_CHILD=") ||
            starts_with(s, "BEKC_NUMBA_HARNESS_EXPECT="))
            continue;
        env_strings.push_back(s);
    }
    env_strings.push_back("BEKC_NUMBA_LIBCUDA=" + libcuda);
    env_strings.push_back("BEKC_NUMBA_HARNESS_CHILD=1");
    env_strings.push_back("BEKC_NUMBA_HARNESS_EXPECT=" + expect);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string exe = "/proc/self/exe", filter = "[numba-child]";
    char* argv[] = {exe.data(), filter.data(), nullptr};
    pid_t pid;
    if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

// ================================================================= metadata

TEST_CASE("ABI version is 2", "[numba]") {
    CHECK(numba().abi_version() == 2);
}

TEST_CASE("metadata query: launch handler is command-buffer compatible, call handler is not",
          "[numba]") {
    const FakeCuda& f = reset_fake(0);
    for (const BekcXla_Api* api : {harness::fake_api(), static_cast<const BekcXla_Api*>(nullptr)})
        for (bool other_first : {false, true}) {
            INFO("api " << (api ? "set" : "null") << ", other extension first " << other_first);
            check_metadata(numba().launch, true, api, other_first);
            check_metadata(numba().call, false, api, other_first);
        }
    // Answering the query touches neither the driver nor any entry.
    CHECK(f.launch_count() == 0);
    CHECK(f.context_calls(kCtxGetCurrent) == 0);
}

// ================================================================= launch

TEST_CASE("launch: buffers are marshalled in Numba's parameter layout", "[numba]") {
    KernelSpec k;
    k.name = "saxpy_like";
    k.grid = {7, 3, 2};
    k.block = {128, 2, 1};
    k.shared_mem = 4096;
    k.arg(BEKC_XLA_DTYPE_F32, 2).arg(BEKC_XLA_DTYPE_S32, 1).arg(BEKC_XLA_DTYPE_F32, 0);
    k.ret(BEKC_XLA_DTYPE_F64, 3);
    const int64_t id = add_ok(k);

    const uint64_t a = 0xD000'0000'1000, b = 0xD000'0000'2000, c = 0xD000'0000'3000,
                   d = 0xD000'0000'4000;
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F32, device(a), {3, 4})
        .arg(BEKC_XLA_DTYPE_S32, device(b), {5})
        .arg(BEKC_XLA_DTYPE_F32, device(c), {})
        .ret(BEKC_XLA_DTYPE_F64, device(d), {2, 3, 4});
    with_id(fb, id);
    // meminfo, parent, nitems, itemsize, data, shape..., strides... (bytes)
    const std::vector<uint64_t> want = {
        0, 0, 12, 4, a, 3, 4, 16, 4,          // float32[3,4]
        0, 0, 5,  4, b, 5, 4,                 // int32[5]
        0, 0, 1,  4, c,                       // float32[] (rank 0: no shape, no strides)
        0, 0, 24, 8, d, 2, 3, 4,  96, 32, 8,  // float64[2,3,4]
    };
    const FakeCuda& f = reset_fake(static_cast<int>(want.size()));

    Outcome o = call(numba().launch, fb.frame());
    INFO("handler message: " << o.message);
    REQUIRE(o.ok);
    REQUIRE(f.launch_count() == 1);
    const Recorded r = f.record(0);
    CHECK(r.params == want);
    CHECK_FALSE(r.params_null);
    CHECK(r.function == bits(kFunction));
    CHECK(r.grid[0] == 7);
    CHECK(r.grid[1] == 3);
    CHECK(r.grid[2] == 2);
    CHECK(r.block[0] == 128);
    CHECK(r.block[1] == 2);
    CHECK(r.block[2] == 1);
    CHECK(r.shared_mem == 4096);
    CHECK(r.stream == bits(kStream));
    CHECK_FALSE(r.cooperative);  // cuLaunchKernel ...
    CHECK(r.extra == 0);         // ... with no `extra`
    // The stream came from XLA's Stream_Get, for this call's context.
    CHECK(harness::api_log().stream_gets == 1);
    CHECK(harness::api_log().stream_get_struct_size == BEKC_XLA_STREAM_GET_ARGS_STRUCT_SIZE);
    CHECK(harness::api_log().stream_get_ctx == fb.ctx());

    SECTION("the same entry launches again with new buffers and shapes of the same ranks") {
        FrameBuilder fb2;
        fb2.arg(BEKC_XLA_DTYPE_F32, device(a + 8), {1, 2})
            .arg(BEKC_XLA_DTYPE_S32, device(b + 8), {0})
            .arg(BEKC_XLA_DTYPE_F32, device(c + 8), {})
            .ret(BEKC_XLA_DTYPE_F64, device(d + 8), {1, 1, 5});
        with_id(fb2, id);
        REQUIRE(call(numba().launch, fb2.frame()).ok);
        REQUIRE(f.launch_count() == 2);
        const std::vector<uint64_t> want2 = {
            0, 0, 2, 4, a + 8, 1, 2, 8, 4,  //
            0, 0, 0, 4, b + 8, 0, 4,        // an empty array: nitems 0
            0, 0, 1, 4, c + 8,              //
            0, 0, 5, 8, d + 8, 1, 1, 5, 40, 40, 8,
        };
        CHECK(f.record(1).params == want2);
    }
}

TEST_CASE("launch: the cooperative flag selects cuLaunchCooperativeKernel", "[numba]") {
    for (int cooperative : {0, 1, 2}) {
        INFO("cooperative = " << cooperative);
        KernelSpec k;
        k.name = "grid_sync";
        k.function = device(0xF00D'0000'2000 + static_cast<uint64_t>(cooperative));
        k.grid = {64, 1, 1};
        k.block = {256, 1, 1};
        k.shared_mem = 128;
        k.cooperative = cooperative;
        k.arg(BEKC_XLA_DTYPE_U8, 1).ret(BEKC_XLA_DTYPE_U8, 1);
        const int64_t id = add_ok(k);
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_U8, device(0xD100), {16})
            .ret(BEKC_XLA_DTYPE_U8, device(0xD200), {16});
        with_id(fb, id);
        const FakeCuda& f = reset_fake(14);
        REQUIRE(call(numba().launch, fb.frame()).ok);
        REQUIRE(f.launch_count() == 1);
        const Recorded r = f.record(0);
        CHECK(r.cooperative == (cooperative != 0));
        CHECK(r.function == bits(k.function));
        CHECK(r.grid[0] == 64);
        CHECK(r.block[0] == 256);
        CHECK(r.shared_mem == 128);
        CHECK(r.stream == bits(kStream));
        CHECK(r.params == std::vector<uint64_t>{0, 0, 16, 1, 0xD100, 16, 1,  //
                                                0, 0, 16, 1, 0xD200, 16, 1});
    }
}

TEST_CASE("launch: itemsize of every dtype a Numba array can hold", "[numba]") {
    const std::vector<std::pair<int32_t, uint64_t>> sizes = {
        {BEKC_XLA_DTYPE_PRED, 1},       {BEKC_XLA_DTYPE_S8, 1},
        {BEKC_XLA_DTYPE_U8, 1},         {BEKC_XLA_DTYPE_S16, 2},
        {BEKC_XLA_DTYPE_U16, 2},        {BEKC_XLA_DTYPE_F16, 2},
        {BEKC_XLA_DTYPE_BF16, 2},       {BEKC_XLA_DTYPE_S32, 4},
        {BEKC_XLA_DTYPE_U32, 4},        {BEKC_XLA_DTYPE_F32, 4},
        {BEKC_XLA_DTYPE_S64, 8},        {BEKC_XLA_DTYPE_U64, 8},
        {BEKC_XLA_DTYPE_F64, 8},        {BEKC_XLA_DTYPE_C64, 8},
        {BEKC_XLA_DTYPE_C128, 16},      {BEKC_XLA_DTYPE_F8E5M2, 1},
        {BEKC_XLA_DTYPE_F8E4M3FN, 1},   {BEKC_XLA_DTYPE_F8E4M3B11FNUZ, 1},
        {BEKC_XLA_DTYPE_F8E5M2FNUZ, 1}, {BEKC_XLA_DTYPE_F8E4M3FNUZ, 1},
        {BEKC_XLA_DTYPE_F8E4M3, 1},     {BEKC_XLA_DTYPE_F8E3M4, 1},
        {BEKC_XLA_DTYPE_F8E8M0FNU, 1},
    };
    KernelSpec k;
    k.name = "all_dtypes";
    for (const auto& [dtype, size] : sizes) k.arg(dtype, 1);
    k.ret(BEKC_XLA_DTYPE_F32, 1);
    const int64_t id = add_ok(k);
    FrameBuilder fb;
    for (size_t i = 0; i < sizes.size(); ++i)
        fb.arg(sizes[i].first, device(0xE000 + 0x100 * i), {3});
    fb.ret(BEKC_XLA_DTYPE_F32, device(0xEF00), {3});
    with_id(fb, id);
    const FakeCuda& f = reset_fake(static_cast<int>(7 * (sizes.size() + 1)));
    REQUIRE(call(numba().launch, fb.frame()).ok);
    REQUIRE(f.launch_count() == 1);
    const Recorded r = f.record(0);
    for (size_t i = 0; i < sizes.size(); ++i) {
        INFO("input " << i << ", dtype " << sizes[i].first);
        const uint64_t* p = &r.params[7 * i];
        CHECK(p[2] == 3);                   // nitems
        CHECK(p[3] == sizes[i].second);     // itemsize
        CHECK(p[4] == 0xE000 + 0x100 * i);  // data
        CHECK(p[5] == 3);                   // shape
        CHECK(p[6] == sizes[i].second);     // stride in bytes
    }
}

TEST_CASE("launch: rank 8 shape and byte strides are row-major", "[numba]") {
    KernelSpec k;
    k.name = "rank8";
    k.arg(BEKC_XLA_DTYPE_F16, 8).ret(BEKC_XLA_DTYPE_C128, 2);
    const int64_t id = add_ok(k);
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F16, device(0xA000), {2, 1, 3, 1, 2, 1, 1, 2})
        .ret(BEKC_XLA_DTYPE_C128, device(0xB000), {5, 7});
    with_id(fb, id);
    const std::vector<uint64_t> want = {
        0,  0,  24, 2,  0xA000, 2, 1, 3,   1,  2, 1, 1, 2,  // float16[2,1,3,1,2,1,1,2]
        24, 24, 8,  8,  4,      4, 4, 2,                    // strides in bytes
        0,  0,  35, 16, 0xB000, 5, 7, 112, 16,              // complex128[5,7]
    };
    const FakeCuda& f = reset_fake(static_cast<int>(want.size()));
    REQUIRE(call(numba().launch, fb.frame()).ok);
    REQUIRE(f.launch_count() == 1);
    CHECK(f.record(0).params == want);
}

TEST_CASE("launch: a bekc_id sent as uint64 is accepted", "[numba]") {
    KernelSpec k;
    k.ret(BEKC_XLA_DTYPE_S64, 0);
    const int64_t id = add_ok(k);
    FrameBuilder fb;
    fb.ret(BEKC_XLA_DTYPE_S64, device(0xC000), {});
    fb.attr("bekc_id", BEKC_XLA_DTYPE_U64, static_cast<uint64_t>(id));
    const FakeCuda& f = reset_fake(5);
    REQUIRE(call(numba().launch, fb.frame()).ok);
    REQUIRE(f.launch_count() == 1);
    CHECK(f.record(0).params == std::vector<uint64_t>{0, 0, 1, 8, 0xC000});
}

TEST_CASE("launch: entries keep their own settings; ids count up from add to add", "[numba]") {
    KernelSpec k1, k2;
    k1.function = device(0xF1);
    k1.grid = {2, 1, 1};
    k1.ret(BEKC_XLA_DTYPE_F32, 1);
    k2.function = device(0xF2);
    k2.grid = {9, 9, 1};
    k2.cooperative = 1;
    k2.ret(BEKC_XLA_DTYPE_F32, 1);
    const int64_t id1 = add_ok(k1);
    const int64_t id2 = add_ok(k2);
    CHECK(id2 == id1 + 1);
    const FakeCuda& f = reset_fake(7);
    for (int64_t id : {id2, id1, id2}) {
        FrameBuilder fb;
        fb.ret(BEKC_XLA_DTYPE_F32, device(0xD0), {4});
        with_id(fb, id);
        REQUIRE(call(numba().launch, fb.frame()).ok);
    }
    REQUIRE(f.launch_count() == 3);
    CHECK(f.record(0).function == 0xF2);
    CHECK(f.record(0).cooperative);
    CHECK(f.record(0).grid[1] == 9);
    CHECK(f.record(1).function == 0xF1);
    CHECK_FALSE(f.record(1).cooperative);
    CHECK(f.record(1).grid[0] == 2);
    CHECK(f.record(2).function == 0xF2);
}

// ================================================================= context

namespace {

struct OneBufferKernel {
    int64_t id;
    FrameBuilder fb;
    explicit OneBufferKernel(const char* name = "k") {
        KernelSpec k;
        k.name = name;
        k.ret(BEKC_XLA_DTYPE_F32, 1);
        id = add_ok(k);
        fb.ret(BEKC_XLA_DTYPE_F32, device(0xDA7A), {8});
        with_id(fb, id);
    }
};

}  // namespace

TEST_CASE("launch: with no current context, the stream's context is made current", "[numba]") {
    OneBufferKernel k;
    const FakeCuda& f = reset_fake(7);  // this thread: no current context
    void* const stream_ctx = device(0xC7C7);
    f.set_stream_context(stream_ctx);

    REQUIRE(call(numba().launch, k.fb.frame()).ok);
    CHECK(f.context_calls(kCtxGetCurrent) == 1);
    CHECK(f.context_calls(kStreamGetCtx) == 1);
    CHECK(f.last_stream_get_ctx_stream() == kStream);
    CHECK(f.context_calls(kCtxSetCurrent) == 1);
    CHECK(f.last_ctx_set() == stream_ctx);
    REQUIRE(f.launch_count() == 1);
    CHECK(f.record(0).context == bits(stream_ctx));  // current when cuLaunchKernel ran

    // Now current: the next launch leaves it alone.
    REQUIRE(call(numba().launch, k.fb.frame()).ok);
    CHECK(f.context_calls(kCtxGetCurrent) == 2);
    CHECK(f.context_calls(kStreamGetCtx) == 1);
    CHECK(f.context_calls(kCtxSetCurrent) == 1);
    REQUIRE(f.launch_count() == 2);
    CHECK(f.record(1).context == bits(stream_ctx));
}

TEST_CASE("launch: a context already current is kept", "[numba]") {
    OneBufferKernel k;
    const FakeCuda& f = reset_fake(7);
    f.set_current_context(device(0xAAAA));
    REQUIRE(call(numba().launch, k.fb.frame()).ok);
    CHECK(f.context_calls(kStreamGetCtx) == 0);
    CHECK(f.context_calls(kCtxSetCurrent) == 0);
    REQUIRE(f.launch_count() == 1);
    CHECK(f.record(0).context == 0xAAAA);
    CHECK(f.current_context() == device(0xAAAA));
}

TEST_CASE("launch: a failing context call is INTERNAL and nothing is launched", "[numba]") {
    OneBufferKernel k("ctx_kernel");
    for (int which : {kCtxGetCurrent, kStreamGetCtx, kCtxSetCurrent}) {
        INFO("failing context call " << which);
        const FakeCuda& f = reset_fake(7);
        f.fail_context_call(which, 201);
        require_error(call(numba().launch, k.fb.frame()), kInternal,
                      "ctx_kernel: making the stream's context current failed: "
                      "CUDA_ERROR_INVALID_CONTEXT (201): invalid device context");
        CHECK(f.launch_count() == 0);
    }
}

TEST_CASE("launch: each thread gets the stream's context; parameters never mix", "[numba]") {
    KernelSpec spec;
    spec.name = "threads";
    spec.arg(BEKC_XLA_DTYPE_F32, 1).ret(BEKC_XLA_DTYPE_S32, 2);
    const int64_t id = add_ok(spec);
    const FakeCuda& f = reset_fake(7 + 9);
    f.set_stream_context(device(0xC7C7));

    // Stream_Get in fake_xla.hpp counts calls in a plain int: give the
    // threads an API table of their own whose Stream_Get touches nothing.
    static BekcXla_Api api = *harness::fake_api();
    api.stream_get = [](BekcXla_StreamGetArgs* args) -> BekcXla_Error* {
        args->stream = kStream;
        return nullptr;
    };
    constexpr int kThreads = 4, kLaunches = 50;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kLaunches; ++i) {
                const int64_t n = 1 + t * kLaunches + i;  // unique per launch
                FrameBuilder fb;
                fb.arg(BEKC_XLA_DTYPE_F32, device(0x1'0000'0000 + static_cast<uint64_t>(n)), {n})
                    .ret(BEKC_XLA_DTYPE_S32, device(0x2'0000'0000 + static_cast<uint64_t>(n)),
                         {n, 2});
                with_id(fb, id);
                BekcXla_CallFrame& frame = fb.frame();
                frame.api = &api;
                if (BekcXla_Error* e = numba().launch(&frame)) {
                    delete e;
                    ++failures;
                }
            }
        });
    for (auto& t : threads) t.join();
    CHECK(failures == 0);
    REQUIRE(f.launch_count() == kThreads * kLaunches);
    CHECK(f.context_calls(kStreamGetCtx) == kThreads);  // once per new thread
    CHECK(f.context_calls(kCtxSetCurrent) == kThreads);
    std::vector<bool> seen(kThreads * kLaunches + 1, false);
    for (int i = 0; i < kThreads * kLaunches; ++i) {
        const Recorded r = f.record(i);
        const uint64_t n = r.params[2];
        INFO("launch " << i << ", n " << n);
        REQUIRE(n >= 1);
        REQUIRE(n <= static_cast<uint64_t>(kThreads * kLaunches));
        CHECK_FALSE(seen[n]);
        seen[n] = true;
        CHECK(r.context == 0xC7C7);
        CHECK(r.params == std::vector<uint64_t>{0, 0, n, 4, 0x1'0000'0000 + n, n, 4,  //
                                                0, 0, 2 * n, 4, 0x2'0000'0000 + n, n, 2, 8, 4});
    }
}

// ================================================================= launch errors

TEST_CASE("launch: a failing cuLaunchKernel is INTERNAL with the CUDA error", "[numba]") {
    OneBufferKernel k("faulty");
    const FakeCuda& f = reset_fake(7);
    f.fail_next_launch(700);
    require_error(call(numba().launch, k.fb.frame()), kInternal,
                  "faulty: cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal "
                  "memory access was encountered");
    CHECK(f.launch_count() == 0);
    // Only that launch failed.
    CHECK(call(numba().launch, k.fb.frame()).ok);
    CHECK(f.launch_count() == 1);

    SECTION("a code the driver cannot name still gives its number") {
        f.fail_next_launch(98765);
        Outcome o = call(numba().launch, k.fb.frame());
        INFO(o.message);
        REQUIRE_FALSE(o.ok);
        CHECK(o.code == kInternal);
        CHECK(starts_with(o.message, "faulty: cuLaunchKernel failed: "));
        CHECK(o.message.find("(98765)") != std::string::npos);
    }
}

TEST_CASE("launch: a failing cooperative launch is INTERNAL with the CUDA error", "[numba]") {
    KernelSpec spec;
    spec.name = "coop";
    spec.cooperative = 1;
    spec.grid = {100000, 1, 1};
    spec.ret(BEKC_XLA_DTYPE_F32, 1);
    const int64_t id = add_ok(spec);
    FrameBuilder fb;
    fb.ret(BEKC_XLA_DTYPE_F32, device(0xDA7A), {8});
    with_id(fb, id);
    const FakeCuda& f = reset_fake(7);
    f.fail_next_launch(720);
    Outcome o = call(numba().launch, fb.frame());
    INFO(o.message);
    REQUIRE_FALSE(o.ok);
    CHECK(o.code == kInternal);
    CHECK(starts_with(o.message, "coop: "));
    CHECK(o.message.find("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (720): too many blocks in "
                         "cooperative launch") != std::string::npos);
    CHECK(f.launch_count() == 0);
}

TEST_CASE("launch: an error from XLA's Stream_Get is returned as is", "[numba]") {
    OneBufferKernel k;
    const FakeCuda& f = reset_fake(7);
    harness::ApiLog& log = reset_log();
    BekcXla_Error stream_error{BEKC_XLA_ERROR_UNAVAILABLE, "no stream here"};
    log.stream_error = &stream_error;
    BekcXla_Error* e = numba().launch(&k.fb.frame());
    log.stream_error = nullptr;
    CHECK(e == &stream_error);
    CHECK(f.launch_count() == 0);
    CHECK(f.context_calls(kCtxGetCurrent) == 0);
}

TEST_CASE("launch: a missing, misnamed or mistyped bekc_id is INVALID_ARGUMENT", "[numba]") {
    OneBufferKernel k;
    const std::string want = std::string(kLaunchTarget) +
                             ": expected one attribute, bekc_id (an int64 scalar); this target "
                             "is called through bekc.numba_cuda_kernel or "
                             "bekc.numba_cuda_callable";
    const FakeCuda& f = reset_fake(7);
    auto check = [&](FrameBuilder& fb) {
        fb.ret(BEKC_XLA_DTYPE_F32, device(0xDA7A), {8});
        require_error(call(numba().launch, fb.frame()), kInvalidArgument, want);
        CHECK(harness::api_log().stream_gets == 0);
    };
    SECTION("no attribute") {
        FrameBuilder fb;
        check(fb);
    }
    SECTION("another name") {
        FrameBuilder fb;
        fb.attr("bekc_ix", BEKC_XLA_DTYPE_S64, k.id);
        check(fb);
    }
    SECTION("a prefix of the name") {
        FrameBuilder fb;
        fb.attr("bekc_i", BEKC_XLA_DTYPE_S64, k.id);
        check(fb);
    }
    SECTION("the name with more after it") {
        FrameBuilder fb;
        fb.attr("bekc_id2", BEKC_XLA_DTYPE_S64, k.id);
        check(fb);
    }
    SECTION("int32") {
        FrameBuilder fb;
        fb.attr("bekc_id", BEKC_XLA_DTYPE_S32, static_cast<int32_t>(k.id));
        check(fb);
    }
    SECTION("float64") {
        FrameBuilder fb;
        fb.attr("bekc_id", BEKC_XLA_DTYPE_F64, static_cast<double>(k.id));
        check(fb);
    }
    SECTION("a string, not a scalar") {
        FrameBuilder fb;
        fb.attr_of_kind("bekc_id", BEKC_XLA_ATTR_STRING);
        check(fb);
    }
    SECTION("an extra attribute") {
        FrameBuilder fb;
        fb.attr("bekc_id", BEKC_XLA_DTYPE_S64, k.id).attr("grid", BEKC_XLA_DTYPE_S64, int64_t{4});
        check(fb);
    }
    CHECK(f.launch_count() == 0);
}

TEST_CASE("launch: an unknown bekc_id is INVALID_ARGUMENT", "[numba]") {
    OneBufferKernel k;  // at least one entry exists
    const FakeCuda& f = reset_fake(7);
    for (int64_t id : {int64_t{-1}, k.id + 1, int64_t{1} << 40, INT64_MAX}) {
        FrameBuilder fb;
        fb.ret(BEKC_XLA_DTYPE_F32, device(0xDA7A), {8});
        with_id(fb, id);
        require_error(
            call(numba().launch, fb.frame()), kInvalidArgument,
            std::string(kLaunchTarget) + ": no kernel with bekc_id " + std::to_string(id));
    }
    CHECK(f.launch_count() == 0);
}

TEST_CASE("launch: a wrong call frame size or stage is INVALID_ARGUMENT", "[numba]") {
    OneBufferKernel k;
    const FakeCuda& f = reset_fake(7);
    BekcXla_CallFrame& frame = k.fb.frame();
    frame.struct_size = BEKC_XLA_CALL_FRAME_STRUCT_SIZE - 8;
    require_error(call(numba().launch, frame), kInvalidArgument,
                  std::string(kLaunchTarget) + ": call frame is 160 bytes, expected at least 168");
    frame.struct_size = BEKC_XLA_CALL_FRAME_STRUCT_SIZE;
    frame.stage = BEKC_XLA_STAGE_PREPARE;
    require_error(
        call(numba().launch, frame), kInvalidArgument,
        std::string(kLaunchTarget) + ": wrong execution stage: expected 3 (execute), got 1");
    CHECK(f.launch_count() == 0);
}

TEST_CASE("launch: buffers that differ from the compiled signature are INVALID_ARGUMENT",
          "[numba]") {
    KernelSpec spec;
    spec.name = "sig";
    spec.arg(BEKC_XLA_DTYPE_F32, 2).arg(BEKC_XLA_DTYPE_S32, 1).ret(BEKC_XLA_DTYPE_F64, 3);
    const int64_t id = add_ok(spec);
    const FakeCuda& f = reset_fake(0);
    // The valid call, changed one piece at a time.
    struct Call {
        FrameBuilder fb;
        Call(int64_t id, int32_t in1 = BEKC_XLA_DTYPE_S32,
             std::vector<int64_t> out_dims = {2, 3, 4}, bool extra_in = false,
             bool extra_out = false, bool drop_in = false) {
            fb.arg(BEKC_XLA_DTYPE_F32, device(0xA0), {3, 4});
            if (!drop_in) fb.arg(in1, device(0xB0), {5});
            if (extra_in) fb.arg(BEKC_XLA_DTYPE_F32, device(0xB8), {5});
            fb.ret(BEKC_XLA_DTYPE_F64, device(0xC0), std::move(out_dims));
            if (extra_out) fb.ret(BEKC_XLA_DTYPE_F64, device(0xC8), {1});
            with_id(fb, id);
        }
    };
    auto expect = [&](Call& c, const std::string& message) {
        require_error(call(numba().launch, c.fb.frame()), kInvalidArgument, message);
        CHECK(harness::api_log().stream_gets == 0);
    };
    SECTION("one input too few") {
        Call c(id, BEKC_XLA_DTYPE_S32, {2, 3, 4}, false, false, true);
        expect(c, "sig: compiled for 2 inputs and 1 outputs, called with 1 and 1");
    }
    SECTION("one input too many") {
        Call c(id, BEKC_XLA_DTYPE_S32, {2, 3, 4}, true);
        expect(c, "sig: compiled for 2 inputs and 1 outputs, called with 3 and 1");
    }
    SECTION("one output too many") {
        Call c(id, BEKC_XLA_DTYPE_S32, {2, 3, 4}, false, true);
        expect(c, "sig: compiled for 2 inputs and 1 outputs, called with 2 and 2");
    }
    SECTION("an input of another dtype") {
        Call c(id, BEKC_XLA_DTYPE_F32);
        expect(c,
               "sig: input 1 is float32 with 1 dimensions; the kernel was compiled for int32 "
               "with 1");
    }
    SECTION("an input of the same size but another dtype") {
        Call c(id, BEKC_XLA_DTYPE_U32);
        expect(c,
               "sig: input 1 is uint32 with 1 dimensions; the kernel was compiled for int32 "
               "with 1");
    }
    SECTION("an output of another rank") {
        Call c(id, BEKC_XLA_DTYPE_S32, {6, 4});
        expect(c,
               "sig: output 0 is float64 with 2 dimensions; the kernel was compiled for float64 "
               "with 3");
    }
    SECTION("an input that is not a buffer") {
        Call c(id);
        BekcXla_CallFrame& frame = c.fb.frame();
        c.fb.arg_types()[0] = 2;
        require_error(call(numba().launch, frame), kInvalidArgument,
                      "sig: input 0 is not a buffer");
    }
    SECTION("an output that is not a buffer") {
        Call c(id);
        BekcXla_CallFrame& frame = c.fb.frame();
        c.fb.ret_types()[0] = 0;
        require_error(call(numba().launch, frame), kInvalidArgument,
                      "sig: output 0 is not a buffer");
    }
    CHECK(f.launch_count() == 0);
    CHECK(f.context_calls(kCtxGetCurrent) == 0);
}

// ================================================================= add_launch

TEST_CASE("add_launch refuses what it cannot launch, with a message and -1", "[numba]") {
    KernelSpec good;
    good.name = "bad_kernel";
    good.arg(BEKC_XLA_DTYPE_F32, 1).ret(BEKC_XLA_DTYPE_F32, 1);
    auto refused = [](const KernelSpec& k, const std::string& message) {
        Added a = add(k);
        CHECK(a.id == -1);
        CHECK(a.error == message);
    };
    SECTION("no function handle") {
        KernelSpec k = good;
        k.function = nullptr;
        refused(k, "bad_kernel: no CUDA function handle");
    }
    SECTION("a zero grid or block size") {
        for (int d = 0; d < 3; ++d) {
            INFO("dimension " << d);
            KernelSpec k = good;
            k.grid[static_cast<size_t>(d)] = 0;
            refused(k, "bad_kernel: grid and block sizes must be positive");
            k = good;
            k.block[static_cast<size_t>(d)] = 0;
            refused(k, "bad_kernel: grid and block sizes must be positive");
        }
    }
    SECTION("a dtype Numba arrays cannot hold") {
        for (int32_t dtype :
             {int32_t{BEKC_XLA_DTYPE_INVALID}, int32_t{BEKC_XLA_DTYPE_TOKEN},
              int32_t{BEKC_XLA_DTYPE_S4}, int32_t{BEKC_XLA_DTYPE_U4}, int32_t{BEKC_XLA_DTYPE_S2},
              int32_t{BEKC_XLA_DTYPE_U2}, int32_t{BEKC_XLA_DTYPE_S1}, int32_t{BEKC_XLA_DTYPE_U1},
              int32_t{BEKC_XLA_DTYPE_F4E2M1FN}, 13, 14, 34, -1}) {
            INFO("dtype " << dtype);
            KernelSpec k = good;
            k.dtypes[0] = dtype;
            refused(k, "bad_kernel: a buffer has a dtype Numba arrays cannot hold");
            k = good;
            k.dtypes[1] = dtype;  // an output
            refused(k, "bad_kernel: a buffer has a dtype Numba arrays cannot hold");
        }
    }
    SECTION("a negative or too large rank") {
        for (int32_t rank : {-1, 65}) {
            KernelSpec k = good;
            k.ranks[1] = rank;
            refused(k, "bad_kernel: a buffer has an unsupported rank");
        }
    }
    SECTION("a negative buffer count") {
        KernelSpec k = good;
        k.num_args = -1;
        refused(k, "bad_kernel: negative buffer count");
        k = good;
        k.num_rets = -1;
        refused(k, "bad_kernel: negative buffer count");
    }
    SECTION("a message longer than the buffer is cut, not overrun") {
        KernelSpec k = good;
        k.function = nullptr;
        Added a = add(k, 8);  // add() puts a sentinel past the 8 bytes
        CHECK(a.id == -1);
        CHECK(a.error == "bad_ker");
    }
    SECTION("a refused kernel takes no id") {
        const int64_t before = add_ok(good);
        KernelSpec k = good;
        k.block[0] = 0;
        CHECK(add(k).id == -1);
        CHECK(add_ok(good) == before + 1);
    }
}

TEST_CASE("add_launch accepts rank 0 to 64 and a kernel with no inputs", "[numba]") {
    KernelSpec k;
    k.name = "edges";
    k.arg(BEKC_XLA_DTYPE_F32, 0).ret(BEKC_XLA_DTYPE_F32, 64);
    CHECK(add(k).id >= 0);
    KernelSpec only_out;
    only_out.ret(BEKC_XLA_DTYPE_S8, 1);
    CHECK(add(only_out).id >= 0);
}

// ================================================================= callable

TEST_CASE("callable: gets its id, inputs then outputs, and XLA's stream", "[numba]") {
    const int64_t id = numba().add_callable("cb", &recording_callback, 2, 2);
    REQUIRE(id >= 0);
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F32, device(0x11), {3, 4})
        .arg(BEKC_XLA_DTYPE_S32, device(0x22), {})
        .ret(BEKC_XLA_DTYPE_F64, device(0x33), {5})
        .ret(BEKC_XLA_DTYPE_U8, device(0x44), {1, 1, 1});
    with_id(fb, id);
    CallbackLog& log = reset_callback();
    const FakeCuda& f = reset_fake(0);
    REQUIRE(call(numba().call, fb.frame()).ok);
    CHECK(log.calls == 1);
    CHECK(log.id == id);
    CHECK(log.pointers == std::vector<uint64_t>{0x11, 0x22, 0x33, 0x44});
    CHECK(log.stream == kStream);
    CHECK(log.error_size > 0);
    CHECK(harness::api_log().stream_gets == 1);
    CHECK(harness::api_log().stream_get_ctx == fb.ctx());
    // The callable path never touches the driver.
    CHECK(f.launch_count() == 0);
    CHECK(f.context_calls(kCtxGetCurrent) == 0);
}

TEST_CASE("callable: several entries share one callback and tell apart by id", "[numba]") {
    const int64_t a = numba().add_callable("first", &recording_callback, 0, 1);
    const int64_t b = numba().add_callable("second", &recording_callback, 1, 0);
    REQUIRE(a >= 0);
    CHECK(b == a + 1);
    FrameBuilder fa, fb;
    fa.ret(BEKC_XLA_DTYPE_F32, device(0xAA), {2});
    with_id(fa, a);
    fb.arg(BEKC_XLA_DTYPE_F32, device(0xBB), {2});
    with_id(fb, b);
    CallbackLog& log = reset_callback();
    REQUIRE(call(numba().call, fb.frame()).ok);
    CHECK(log.id == b);
    CHECK(log.pointers == std::vector<uint64_t>{0xBB});
    REQUIRE(call(numba().call, fa.frame()).ok);
    CHECK(log.id == a);
    CHECK(log.pointers == std::vector<uint64_t>{0xAA});
    CHECK(log.calls == 2);
}

TEST_CASE("callable: a non-zero return is INTERNAL with the callable's message", "[numba]") {
    const int64_t id = numba().add_callable("py_fn", &recording_callback, 1, 1);
    REQUIRE(id >= 0);
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F32, device(0x11), {3}).ret(BEKC_XLA_DTYPE_F32, device(0x22), {3});
    with_id(fb, id);
    SECTION("with a message") {
        reset_callback(1, "ValueError: shapes do not match");
        require_error(call(numba().call, fb.frame()), kInternal,
                      "py_fn: ValueError: shapes do not match");
    }
    SECTION("with no message") {
        reset_callback(-1);
        require_error(call(numba().call, fb.frame()), kInternal,
                      "py_fn: the Python callable failed");
    }
    SECTION("a long message is cut to the buffer the handler gave") {
        CallbackLog& log = reset_callback(1, std::string(5000, 'x'));
        Outcome o = call(numba().call, fb.frame());
        REQUIRE_FALSE(o.ok);
        CHECK(o.code == kInternal);
        REQUIRE(log.error_size > 0);
        CHECK(o.message == "py_fn: " + std::string(log.error_size - 1, 'x'));
    }
    SECTION("a message with a zero return is ignored") {
        reset_callback(0, "just a warning");
        CHECK(call(numba().call, fb.frame()).ok);
    }
    CHECK(callback_log().calls == 1);
}

namespace {

int unterminated_callback(int64_t, const uint64_t*, int64_t, void*, char* error, size_t size) {
    std::memset(error, 'x', size);  // fills the buffer, no NUL
    return 1;
}

}  // namespace

// A callable that fills the message buffer without a NUL must not make the
// handler read past it (ASan would report a stack-buffer-overflow).
TEST_CASE("callable: a message that fills the buffer with no NUL is cut, not over-read",
          "[numba]") {
    const int64_t id = numba().add_callable("unterminated", &unterminated_callback, 0, 0);
    REQUIRE(id >= 0);
    FrameBuilder fb;
    with_id(fb, id);
    Outcome o = call(numba().call, fb.frame());
    REQUIRE_FALSE(o.ok);
    CHECK(o.code == kInternal);
    CHECK(o.message.size() <= std::string("unterminated: ").size() + 2048);
}

TEST_CASE("callable: wrong buffer counts or kinds are INVALID_ARGUMENT, callable not called",
          "[numba]") {
    const int64_t id = numba().add_callable("counted", &recording_callback, 2, 1);
    REQUIRE(id >= 0);
    CallbackLog& log = reset_callback();
    SECTION("one input too few") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, device(0x11), {3}).ret(BEKC_XLA_DTYPE_F32, device(0x22), {3});
        with_id(fb, id);
        require_error(call(numba().call, fb.frame()), kInvalidArgument,
                      "counted: expects 2 inputs and 1 outputs, called with 1 and 1");
        CHECK(harness::api_log().stream_gets == 0);
    }
    SECTION("one output too many") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, device(0x11), {3})
            .arg(BEKC_XLA_DTYPE_F32, device(0x12), {3})
            .ret(BEKC_XLA_DTYPE_F32, device(0x22), {3})
            .ret(BEKC_XLA_DTYPE_F32, device(0x23), {3});
        with_id(fb, id);
        require_error(call(numba().call, fb.frame()), kInvalidArgument,
                      "counted: expects 2 inputs and 1 outputs, called with 2 and 2");
    }
    SECTION("an input or output that is not a buffer") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, device(0x11), {3})
            .arg(BEKC_XLA_DTYPE_F32, device(0x12), {3})
            .ret(BEKC_XLA_DTYPE_F32, device(0x22), {3});
        with_id(fb, id);
        BekcXla_CallFrame& frame = fb.frame();
        fb.arg_types()[1] = 0;
        require_error(call(numba().call, frame), kInvalidArgument,
                      "counted: input 1 is not a buffer");
        fb.arg_types()[1] = BEKC_XLA_ARG_BUFFER;
        fb.ret_types()[0] = 7;
        require_error(call(numba().call, frame), kInvalidArgument,
                      "counted: output 0 is not a buffer");
    }
    CHECK(log.calls == 0);
}

TEST_CASE("callable: unknown or malformed bekc_id, wrong stage, Stream_Get errors", "[numba]") {
    const int64_t id = numba().add_callable("cb2", &recording_callback, 0, 1);
    REQUIRE(id >= 0);
    CallbackLog& log = reset_callback();
    SECTION("unknown id") {
        for (int64_t bad : {int64_t{-5}, id + 1000000}) {
            FrameBuilder fb;
            fb.ret(BEKC_XLA_DTYPE_F32, device(0x22), {3});
            with_id(fb, bad);
            require_error(
                call(numba().call, fb.frame()), kInvalidArgument,
                std::string(kCallTarget) + ": no callable with bekc_id " + std::to_string(bad));
        }
    }
    SECTION("bekc_id as int32") {
        FrameBuilder fb;
        fb.ret(BEKC_XLA_DTYPE_F32, device(0x22), {3});
        fb.attr("bekc_id", BEKC_XLA_DTYPE_S32, static_cast<int32_t>(id));
        require_error(call(numba().call, fb.frame()), kInvalidArgument,
                      std::string(kCallTarget) +
                          ": expected one attribute, bekc_id (an int64 scalar); this target is "
                          "called through bekc.numba_cuda_kernel or bekc.numba_cuda_callable");
    }
    SECTION("wrong stage") {
        FrameBuilder fb;
        fb.ret(BEKC_XLA_DTYPE_F32, device(0x22), {3});
        with_id(fb, id);
        BekcXla_CallFrame& frame = fb.frame();
        frame.stage = BEKC_XLA_STAGE_INSTANTIATE;
        require_error(
            call(numba().call, frame), kInvalidArgument,
            std::string(kCallTarget) + ": wrong execution stage: expected 3 (execute), got 0");
    }
    SECTION("Stream_Get fails") {
        FrameBuilder fb;
        fb.ret(BEKC_XLA_DTYPE_F32, device(0x22), {3});
        with_id(fb, id);
        harness::ApiLog& api = reset_log();
        BekcXla_Error stream_error{BEKC_XLA_ERROR_UNAVAILABLE, "no stream here"};
        api.stream_error = &stream_error;
        BekcXla_Error* e = numba().call(&fb.frame());
        api.stream_error = nullptr;
        CHECK(e == &stream_error);
    }
    CHECK(log.calls == 0);
}

TEST_CASE("add_callable refuses a null name or callback and negative counts", "[numba]") {
    CHECK(numba().add_callable(nullptr, &recording_callback, 0, 0) == -1);
    CHECK(numba().add_callable("x", nullptr, 0, 0) == -1);
    CHECK(numba().add_callable("x", &recording_callback, -1, 0) == -1);
    CHECK(numba().add_callable("x", &recording_callback, 0, -1) == -1);
    const int64_t a = numba().add_callable("x", &recording_callback, 0, 0);
    CHECK(numba().add_callable("x", nullptr, 0, 0) == -1);
    const int64_t b = numba().add_callable("x", &recording_callback, 0, 0);
    CHECK(a >= 0);
    CHECK(b == a + 1);
    // A callable with no buffers at all is called with none.
    FrameBuilder fb;
    with_id(fb, b);
    CallbackLog& log = reset_callback();
    REQUIRE(call(numba().call, fb.frame()).ok);
    CHECK(log.calls == 1);
    CHECK(log.pointers.empty());
}

// ================================================================= no driver

TEST_CASE("without a usable libcuda: launches fail with INTERNAL, the rest works", "[numba]") {
    // Each run is a fresh process: the library reads BEKC_NUMBA_LIBCUDA once.
    CHECK(run_child("/nonexistent/bekc-no-such-libcuda.so", "cannot open") == 0);
    CHECK(run_child("libm.so.6", "lacks a driver API function") == 0);
}

TEST_CASE("child: the driver library cannot be used", "[.][numba-child]") {
    const char* child = std::getenv("BEKC_NUMBA_HARNESS_CHILD");
    const char* expect = std::getenv("BEKC_NUMBA_HARNESS_EXPECT");
    REQUIRE(child != nullptr);  // run by the [numba] case above, never alone
    REQUIRE(expect != nullptr);

    // Registering needs no driver.
    KernelSpec spec;
    spec.name = "nodriver";
    spec.ret(BEKC_XLA_DTYPE_F32, 1);
    const int64_t id = add_ok(spec);
    FrameBuilder fb;
    fb.ret(BEKC_XLA_DTYPE_F32, device(0xDA7A), {8});
    with_id(fb, id);
    for (int attempt = 0; attempt < 2; ++attempt) {
        INFO("attempt " << attempt);
        Outcome o = call(numba().launch, fb.frame());
        INFO(o.message);
        REQUIRE_FALSE(o.ok);
        CHECK(o.code == kInternal);
        CHECK(starts_with(o.message, "nodriver: "));
        CHECK(o.message.find(expect) != std::string::npos);
    }
    // Frame errors are still reported as such.
    FrameBuilder wrong;
    wrong.ret(BEKC_XLA_DTYPE_F32, device(0xDA7A), {8, 8});
    with_id(wrong, id);
    require_error(call(numba().launch, wrong.frame()), kInvalidArgument,
                  "nodriver: output 0 is float32 with 2 dimensions; the kernel was compiled for "
                  "float32 with 1");
    // The metadata query and callables need no driver.
    check_metadata(numba().launch, true, harness::fake_api(), false);
    const int64_t cb = numba().add_callable("cb", &recording_callback, 0, 1);
    FrameBuilder fc;
    fc.ret(BEKC_XLA_DTYPE_F32, device(0x22), {3});
    with_id(fc, cb);
    CallbackLog& log = reset_callback();
    CHECK(call(numba().call, fc.frame()).ok);
    CHECK(log.calls == 1);
}

// Before any test can launch (static initialisation, ahead of Catch2's main in
// tests/catch_main.cpp): the library reads this once, on its first launch. A
// child run (see run_child) brings its own.
const bool g_fake_libcuda_set = [] {
    if (std::getenv("BEKC_NUMBA_HARNESS_CHILD") == nullptr)
        setenv("BEKC_NUMBA_LIBCUDA", BEKC_FAKE_LIBCUDA, 1);
    return true;
}();
