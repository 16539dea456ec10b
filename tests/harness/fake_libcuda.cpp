// A recording stand-in for libcuda.so.1, for tests/harness/numba_harness.cpp.
//
// libbekc_numba opens the driver with dlopen and looks up seven functions by
// name; with BEKC_NUMBA_LIBCUDA naming this library it finds these instead.
// They launch nothing: each launch is recorded (function handle, grid, block,
// shared memory, stream, which entry point, the `extra` argument, the context
// current at the time, and a copy of the 8 bytes of every kernel parameter),
// and the next launch can be told to fail with a chosen CUresult.
//
// As in the real driver the current context is per thread, and a thread
// starts with none, so the library's "make the stream's context current" path
// (cuCtxGetCurrent, cuStreamGetCtx, cuCtxSetCurrent) runs for real.
//
// The test reads and steers the fake through the fake_cuda_* functions below,
// looked up with dlsym. Everything is guarded by one mutex, so launches from
// several threads are recorded whole.
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace {

using CUresult = int;
using CUstream = void*;
using CUcontext = void*;
using CUfunction = void*;

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;  // CUDA_ERROR_INVALID_VALUE

// The fields of a launch record as fake_cuda_launch hands them out; the
// harness has the same list (kHeader*), checked through fake_cuda_header_size.
enum Header {
    kFunction,
    kGridX,
    kGridY,
    kGridZ,
    kBlockX,
    kBlockY,
    kBlockZ,
    kSharedMem,
    kStream,
    kCooperative,  // 1: cuLaunchCooperativeKernel, 0: cuLaunchKernel
    kExtra,        // cuLaunchKernel's `extra`; 0 for a cooperative launch
    kContext,      // the calling thread's current context at the launch
    kParamsNull,   // 1 when kernelParams was NULL
    kHeaderSize
};

struct Launch {
    uint64_t header[kHeaderSize];
    std::vector<uint64_t> params;
};

struct State {
    std::mutex mutex;
    std::vector<Launch> launches;
    int expected_params = 0;  // how many kernel parameters each launch copies
    CUresult fail_next_launch = kSuccess;
    CUresult fail_ctx_get_current = kSuccess;
    CUresult fail_stream_get_ctx = kSuccess;
    CUresult fail_ctx_set_current = kSuccess;
    CUcontext stream_context = reinterpret_cast<CUcontext>(uintptr_t{0xC0C0});
    int ctx_get_current_calls = 0;
    int stream_get_ctx_calls = 0;
    int ctx_set_current_calls = 0;
    CUstream last_stream_get_ctx_stream = nullptr;
    CUcontext last_ctx_set = nullptr;
};

State& state() {
    static State s;
    return s;
}

thread_local CUcontext current_context = nullptr;

uint64_t bits(const void* p) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

CUresult record(bool cooperative, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                unsigned by, unsigned bz, unsigned shared, CUstream stream, void** params,
                void** extra) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.fail_next_launch != kSuccess) {
        const CUresult r = s.fail_next_launch;
        s.fail_next_launch = kSuccess;
        return r;
    }
    Launch l;
    l.header[kFunction] = bits(f);
    l.header[kGridX] = gx;
    l.header[kGridY] = gy;
    l.header[kGridZ] = gz;
    l.header[kBlockX] = bx;
    l.header[kBlockY] = by;
    l.header[kBlockZ] = bz;
    l.header[kSharedMem] = shared;
    l.header[kStream] = bits(stream);
    l.header[kCooperative] = cooperative ? 1 : 0;
    l.header[kExtra] = bits(extra);
    l.header[kContext] = bits(current_context);
    l.header[kParamsNull] = params == nullptr ? 1 : 0;
    // As the driver does: read each parameter through its pointer, 8 bytes
    // each (every parameter of a Numba array is 8 bytes). Reading more
    // parameters than the library passed is an overflow ASan reports.
    for (int i = 0; params != nullptr && i < s.expected_params; ++i) {
        uint64_t v;
        std::memcpy(&v, params[i], sizeof v);
        l.params.push_back(v);
    }
    s.launches.push_back(std::move(l));
    return kSuccess;
}

struct ErrorText {
    CUresult code;
    const char* name;
    const char* text;
};

// A few of the driver's codes with its own names and descriptions.
constexpr ErrorText kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
};

const ErrorText* find_error(CUresult r) {
    for (const ErrorText& e : kErrors)
        if (e.code == r) return &e;
    return nullptr;
}

}  // namespace

extern "C" {

// ---- the driver API libbekc_numba resolves -----------------------------------

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream stream, void** params,
                        void** extra) {
    return record(false, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shared, CUstream stream,
                                   void** params) {
    return record(true, f, gx, gy, gz, bx, by, bz, shared, stream, params, nullptr);
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.ctx_get_current_calls;
    if (s.fail_ctx_get_current != kSuccess) return s.fail_ctx_get_current;
    *ctx = current_context;
    return kSuccess;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.ctx_set_current_calls;
    s.last_ctx_set = ctx;
    if (s.fail_ctx_set_current != kSuccess) return s.fail_ctx_set_current;
    current_context = ctx;
    return kSuccess;
}

CUresult cuStreamGetCtx(CUstream stream, CUcontext* ctx) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.stream_get_ctx_calls;
    s.last_stream_get_ctx_stream = stream;
    if (s.fail_stream_get_ctx != kSuccess) return s.fail_stream_get_ctx;
    *ctx = s.stream_context;
    return kSuccess;
}

// Like the driver: an unknown code gives CUDA_ERROR_INVALID_VALUE and NULL.
CUresult cuGetErrorName(CUresult r, const char** name) {
    const ErrorText* e = find_error(r);
    *name = e ? e->name : nullptr;
    return e ? kSuccess : kInvalidValue;
}

CUresult cuGetErrorString(CUresult r, const char** text) {
    const ErrorText* e = find_error(r);
    *text = e ? e->text : nullptr;
    return e ? kSuccess : kInvalidValue;
}

// ---- control and inspection, for the harness ----------------------------------

// Forgets every launch and call count, clears every failure, and leaves the
// calling thread with no current context; launches then copy `params`
// parameters each.
void fake_cuda_reset(int params) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.launches.clear();
    s.expected_params = params;
    s.fail_next_launch = kSuccess;
    s.fail_ctx_get_current = kSuccess;
    s.fail_stream_get_ctx = kSuccess;
    s.fail_ctx_set_current = kSuccess;
    s.stream_context = reinterpret_cast<CUcontext>(uintptr_t{0xC0C0});
    s.ctx_get_current_calls = 0;
    s.stream_get_ctx_calls = 0;
    s.ctx_set_current_calls = 0;
    s.last_stream_get_ctx_stream = nullptr;
    s.last_ctx_set = nullptr;
    current_context = nullptr;
}

int fake_cuda_header_size() {
    return kHeaderSize;
}

// The next launch (either entry point) returns `r` and records nothing.
void fake_cuda_fail_next_launch(CUresult r) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.fail_next_launch = r;
}

// Until the next reset, the given context function returns `r`:
// 0 cuCtxGetCurrent, 1 cuStreamGetCtx, 2 cuCtxSetCurrent.
void fake_cuda_fail_context_call(int which, CUresult r) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    (which == 0   ? s.fail_ctx_get_current
     : which == 1 ? s.fail_stream_get_ctx
                  : s.fail_ctx_set_current) = r;
}

// The calling thread's current context (null: none), as the test sets it.
void fake_cuda_set_current_context(void* ctx) {
    current_context = ctx;
}
void* fake_cuda_current_context() {
    return current_context;
}

// The context cuStreamGetCtx reports for any stream.
void fake_cuda_set_stream_context(void* ctx) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stream_context = ctx;
}

// Calls of cuCtxGetCurrent (0), cuStreamGetCtx (1), cuCtxSetCurrent (2).
int fake_cuda_context_calls(int which) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return which == 0   ? s.ctx_get_current_calls
           : which == 1 ? s.stream_get_ctx_calls
                        : s.ctx_set_current_calls;
}

void* fake_cuda_last_stream_get_ctx_stream() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.last_stream_get_ctx_stream;
}

void* fake_cuda_last_ctx_set() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.last_ctx_set;
}

int fake_cuda_launch_count() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return static_cast<int>(s.launches.size());
}

// Copies launch `i`'s header (fake_cuda_header_size() values) and up to
// `max_params` of its parameters; returns how many parameters it recorded,
// or -1 when there is no launch `i`.
int fake_cuda_launch(int i, uint64_t* header, uint64_t* params, int max_params) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (i < 0 || i >= static_cast<int>(s.launches.size())) return -1;
    const Launch& l = s.launches[static_cast<size_t>(i)];
    std::memcpy(header, l.header, sizeof l.header);
    const int n = static_cast<int>(l.params.size());
    for (int j = 0; j < n && j < max_params; ++j) params[j] = l.params[static_cast<size_t>(j)];
    return n;
}

}  // extern "C"
