// libbekc_numba: the compiled half of bekc.numba_cuda_kernel and
// bekc.numba_cuda_callable (python/bekc/_numba_cuda.py).
//
// Two XLA FFI handlers for JAX's CUDA platform, registered once per process:
//
//   bekc_numba_launch  launches a kernel Numba compiled (its CUfunction or
//                      CUkernel) with the CUDA driver API on XLA's stream,
//                      marshalling each buffer into the parameters Numba's
//                      kernels take for an array. No Python runs per call, and
//                      the handler reports the command-buffer trait, so XLA can
//                      capture it in a CUDA graph.
//   bekc_numba_call    decodes the call frame and calls one C function pointer
//                      (a ctypes callback made by the Python side) with the
//                      buffers' device pointers and the stream.
//
// Under jax.vmap (vmap_method "expand_dims" or "broadcast_all") every buffer
// arrives with one leading axis more than the kernel was compiled for; the
// launch handler then launches the kernel once per batch slice, with the same
// grid, passing each buffer's slice (or, for a leading axis of 1, its only
// slice). Per-slice launches keep kernels whose output elements read other
// elements of their row correct. Two or more extra axes (nested vmap) are
// refused.
//
// Each call carries one attribute, `bekc_id`: the index of an entry that
// Python added with bekc_numba_add_launch or bekc_numba_add_callable. Entries
// live as long as the process (like FFI targets) and are read without a lock.
//
// libcuda is opened with dlopen on first use, so building this library needs
// no CUDA toolkit and loading it needs no GPU. Its functions are exported under
// C names for ctypes; the ABI version below changes with any of them.
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

// The handler support functions, defined in this translation unit.
#define BEKC_RT_IMPLEMENTATION
#include "bekc/handler.h"

namespace {

using bekc_rt::fail;

// ---- the CUDA driver API, resolved at run time ------------------------------
using CUresult = int;
using CUstream = void*;
using CUcontext = void*;
using CUfunction = void*;

struct Driver {
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void**, void**) = nullptr;
    CUresult (*launch_cooperative)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, CUstream, void**) = nullptr;
    CUresult (*ctx_get_current)(CUcontext*) = nullptr;
    CUresult (*ctx_set_current)(CUcontext) = nullptr;
    CUresult (*stream_get_ctx)(CUstream, CUcontext*) = nullptr;
    CUresult (*error_name)(CUresult, const char**) = nullptr;
    CUresult (*error_string)(CUresult, const char**) = nullptr;
    CUresult (*stream_is_capturing)(CUstream, int*) = nullptr;  // optional: statistics only
    const char* problem = nullptr;  // why the driver cannot be used, or null
};

template <class F>
bool resolve(void* lib, const char* name, F& out) {
    out = reinterpret_cast<F>(dlsym(lib, name));
    return out != nullptr;
}

const Driver& driver() {
    static Driver d;
    static std::once_flag once;
    std::call_once(once, [] {
        // BEKC_NUMBA_LIBCUDA names another driver library: the tests use it
        // to check the launch parameters against a recording fake.
        const char* env = std::getenv("BEKC_NUMBA_LIBCUDA");
        const char* path = env && *env ? env : "libcuda.so.1";
        static char problem[512];
        void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            const char* why = dlerror();
            std::snprintf(problem, sizeof problem,
                          "cannot open %s (is the NVIDIA driver installed?): %s", path,
                          why ? why : "unknown error");
            d.problem = problem;
            return;
        }
        if (!resolve(lib, "cuLaunchKernel", d.launch) ||
            !resolve(lib, "cuLaunchCooperativeKernel", d.launch_cooperative) ||
            !resolve(lib, "cuCtxGetCurrent", d.ctx_get_current) ||
            !resolve(lib, "cuCtxSetCurrent", d.ctx_set_current) ||
            !resolve(lib, "cuStreamGetCtx", d.stream_get_ctx) ||
            !resolve(lib, "cuGetErrorName", d.error_name) ||
            !resolve(lib, "cuGetErrorString", d.error_string)) {
            std::snprintf(problem, sizeof problem,
                          "%s lacks a driver API function bekc needs (driver too old?)", path);
            d.problem = problem;
        }
        resolve(lib, "cuStreamIsCapturing", d.stream_is_capturing);
    });
    return d;
}

BekcXla_Error* cuda_error(const BekcXla_Api* api, const char* who, const char* what, CUresult r) {
    const Driver& d = driver();
    const char* name = "?";
    const char* text = "";
    if (d.error_name) d.error_name(r, &name);
    if (d.error_string) d.error_string(r, &text);
    return fail(api, BEKC_XLA_ERROR_INTERNAL, "%s: %s failed: %s (%d): %s", who, what,
                name ? name : "?", r, text ? text : "");
}

// ---- entries ----------------------------------------------------------------
// A table that only grows: chunks are allocated once and never move, so a
// handler reads an entry with one acquire load and no lock.
template <class T>
class Table {
  public:
    static constexpr int64_t kChunk = 256;
    static constexpr int64_t kChunks = 4096;  // a million entries

    int64_t add(T value) {
        std::lock_guard<std::mutex> lock(mutex_);
        const int64_t n = size_.load(std::memory_order_relaxed);
        if (n >= kChunk * kChunks) return -1;
        T*& chunk = chunks_[n / kChunk];
        if (chunk == nullptr) chunk = new T[kChunk];
        chunk[n % kChunk] = std::move(value);
        size_.store(n + 1, std::memory_order_release);
        return n;
    }
    const T* get(int64_t id) const {
        if (id < 0 || id >= size_.load(std::memory_order_acquire)) return nullptr;
        return &chunks_[id / kChunk][id % kChunk];
    }

  private:
    std::mutex mutex_;
    std::atomic<int64_t> size_{0};
    T* chunks_[kChunks] = {};
};

struct Launch {
    std::string name;
    CUfunction function = nullptr;
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    unsigned shared_mem = 0;
    bool cooperative = false;
    int64_t num_args = 0;
    int64_t num_rets = 0;
    std::vector<int32_t> dtypes;  // XLA dtypes, args then rets
    std::vector<int32_t> ranks;
    // How often the handler launched, and how many of those launches were
    // captured into a CUDA graph (a replayed graph calls no handler).
    std::atomic<int64_t>* launch_count = nullptr;
    std::atomic<int64_t>* capture_count = nullptr;
    // The stream of the latest launch: tests check it is XLA's.
    std::atomic<uintptr_t>* last_stream = nullptr;
    // Whether calls may carry a leading vmap axis (bekc_numba_allow_vmap).
    // Without it a batched frame is a rank mismatch, as for any direct caller.
    std::atomic<bool>* vmap = nullptr;
};

using Callback = int (*)(int64_t id, const uint64_t* pointers, int64_t count, void* stream,
                         char* error, size_t error_size);

struct Callable {
    std::string name;
    Callback callback = nullptr;
    int64_t num_args = 0;
    int64_t num_rets = 0;
};

Table<Launch>& launches() {
    static Table<Launch> t;
    return t;
}
Table<Callable>& callables() {
    static Table<Callable> t;
    return t;
}

// ---- call-frame helpers -----------------------------------------------------
int64_t itemsize(int32_t dtype) {
    switch (dtype) {
        case BEKC_XLA_DTYPE_PRED:
        case BEKC_XLA_DTYPE_S8:
        case BEKC_XLA_DTYPE_U8:
        case BEKC_XLA_DTYPE_F8E5M2:
        case BEKC_XLA_DTYPE_F8E4M3FN:
        case BEKC_XLA_DTYPE_F8E4M3B11FNUZ:
        case BEKC_XLA_DTYPE_F8E5M2FNUZ:
        case BEKC_XLA_DTYPE_F8E4M3FNUZ:
        case BEKC_XLA_DTYPE_F8E4M3:
        case BEKC_XLA_DTYPE_F8E3M4:
        case BEKC_XLA_DTYPE_F8E8M0FNU:
            return 1;
        case BEKC_XLA_DTYPE_S16:
        case BEKC_XLA_DTYPE_U16:
        case BEKC_XLA_DTYPE_F16:
        case BEKC_XLA_DTYPE_BF16:
            return 2;
        case BEKC_XLA_DTYPE_S32:
        case BEKC_XLA_DTYPE_U32:
        case BEKC_XLA_DTYPE_F32:
            return 4;
        case BEKC_XLA_DTYPE_S64:
        case BEKC_XLA_DTYPE_U64:
        case BEKC_XLA_DTYPE_F64:
        case BEKC_XLA_DTYPE_C64:
            return 8;
        case BEKC_XLA_DTYPE_C128:
            return 16;
        default:
            return 0;  // sub-byte and unknown types: Numba has no array of them
    }
}

// The common front of both handlers: metadata query, frame size, stage, and
// the `bekc_id` attribute. Returns true when the handler should go on.
bool begin(BekcXla_CallFrame* f, const char* target, bool command_buffer, int64_t* id,
           BekcXla_Error** error) {
    const int32_t bad = BEKC_XLA_ERROR_INVALID_ARGUMENT;
    if (!bekc_rt::begin_call(f, target, command_buffer, error)) return false;
    const BekcXla_Attrs& a = f->attrs;
    static const char kName[] = "bekc_id";
    const auto* s = a.size == 1 ? static_cast<const BekcXla_Scalar*>(a.attrs[0]) : nullptr;
    if (s == nullptr || a.types[0] != BEKC_XLA_ATTR_SCALAR || a.names[0]->len != sizeof kName - 1 ||
        std::memcmp(a.names[0]->ptr, kName, sizeof kName - 1) != 0 ||
        (s->dtype != BEKC_XLA_DTYPE_S64 && s->dtype != BEKC_XLA_DTYPE_U64)) {
        *error = fail(f->api, bad,
                      "%s: expected one attribute, bekc_id (an int64 scalar); this target is "
                      "called through bekc.numba_cuda_kernel or bekc.numba_cuda_callable",
                      target);
        return false;
    }
    std::memcpy(id, s->value, sizeof *id);
    return true;
}

// How a call's buffers relate to the compiled signature: the same ranks (one
// launch), or one leading batch axis more on every buffer (jax.vmap: `size`
// launches, one per slice).
struct Batch {
    bool batched = false;
    int64_t size = 1;
};

const BekcXla_Buffer* buffer(const BekcXla_CallFrame* f, int64_t i) {
    return static_cast<const BekcXla_Buffer*>(i < f->args.size ? f->args.args[i]
                                                               : f->rets.rets[i - f->args.size]);
}

// Output 0 tells whether the call is batched: each level of vmap adds one
// leading axis, so one axis more than compiled is a batch and two or more are
// nested vmaps, which a per-slice launch cannot serve.
BekcXla_Error* detect_batch(const BekcXla_CallFrame* f, const Launch& k, Batch* batch) {
    if (!k.vmap->load(std::memory_order_acquire) || k.num_rets == 0 ||
        f->rets.types[0] != BEKC_XLA_ARG_BUFFER)
        return nullptr;
    const auto* out = static_cast<const BekcXla_Buffer*>(f->rets.rets[0]);
    const int64_t extra = out->rank - k.ranks[k.num_args];
    if (extra >= 2)
        return fail(f->api, BEKC_XLA_ERROR_INVALID_ARGUMENT,
                    "%s: output 0 has %lld dimensions, %lld more than the kernel was compiled "
                    "for; only one level of vmap is supported (each level adds one leading "
                    "axis). Give the outer levels vmap_method='sequential', or merge the batch "
                    "axes into one before the call",
                    k.name.c_str(), static_cast<long long>(out->rank),
                    static_cast<long long>(extra));
    if (extra == 1) {
        batch->batched = true;
        batch->size = out->dims[0];
    }
    return nullptr;
}

// Checks counts, kinds, dtypes and ranks against the signature Numba compiled,
// and finds the batch of a vmapped call.
BekcXla_Error* check_buffers(const BekcXla_CallFrame* f, const Launch& k, Batch* batch) {
    const int32_t bad = BEKC_XLA_ERROR_INVALID_ARGUMENT;
    if (f->args.size != k.num_args || f->rets.size != k.num_rets)
        return fail(
            f->api, bad, "%s: compiled for %lld inputs and %lld outputs, called with %lld and %lld",
            k.name.c_str(), static_cast<long long>(k.num_args), static_cast<long long>(k.num_rets),
            static_cast<long long>(f->args.size), static_cast<long long>(f->rets.size));
    if (BekcXla_Error* e = detect_batch(f, k, batch)) return e;
    const int64_t axis = batch->batched ? 1 : 0;
    for (int64_t i = 0; i < k.num_args + k.num_rets; ++i) {
        const bool is_arg = i < k.num_args;
        const int64_t j = is_arg ? i : i - k.num_args;
        const int32_t type = is_arg ? f->args.types[j] : f->rets.types[j];
        const char* kind = is_arg ? "input" : "output";
        if (type != BEKC_XLA_ARG_BUFFER)
            return fail(f->api, bad, "%s: %s %lld is not a buffer", k.name.c_str(), kind,
                        static_cast<long long>(j));
        const BekcXla_Buffer* b = buffer(f, i);
        if (b->dtype != k.dtypes[i] || b->rank != k.ranks[i] + axis)
            return fail(f->api, bad,
                        "%s: %s %lld is %s with %lld dimensions; the kernel was compiled for %s "
                        "with %d%s",
                        k.name.c_str(), kind, static_cast<long long>(j),
                        bekc_rt::xla_dtype_name(b->dtype), static_cast<long long>(b->rank),
                        bekc_rt::xla_dtype_name(k.dtypes[i]), k.ranks[i],
                        axis ? ", plus one leading vmap axis" : "");
        if (axis && b->dims[0] != batch->size && b->dims[0] != 1)
            return fail(f->api, bad,
                        "%s: %s %lld has leading dimension %lld under vmap, neither the batch "
                        "%lld nor 1; use vmap_method='broadcast_all'",
                        k.name.c_str(), kind, static_cast<long long>(j),
                        static_cast<long long>(b->dims[0]), static_cast<long long>(batch->size));
    }
    return nullptr;
}

// Numba passes an array as 5 + 2 * ndim kernel parameters, each 8 bytes:
// meminfo, parent, nitems, itemsize, data, shape[ndim], strides[ndim] (bytes).
// With `slice` >= 0 the buffer has a leading vmap axis, and the array passed
// is its slice `slice` (its only slice when that axis is 1).
void marshal(const BekcXla_Buffer* b, int64_t slice, std::vector<int64_t>& values) {
    const int64_t size = itemsize(b->dtype);
    const int64_t first = slice >= 0 ? 1 : 0;
    int64_t nitems = 1;
    for (int64_t d = first; d < b->rank; ++d) nitems *= b->dims[d];
    const int64_t index = slice >= 0 && b->dims[0] != 1 ? slice : 0;
    values.push_back(0);  // meminfo
    values.push_back(0);  // parent
    values.push_back(nitems);
    values.push_back(size);
    values.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(b->data)) +
                     index * nitems * size);
    for (int64_t d = first; d < b->rank; ++d) values.push_back(b->dims[d]);
    const size_t first_stride = values.size();
    const int64_t rank = b->rank - first;
    values.resize(first_stride + static_cast<size_t>(rank));
    int64_t stride = size;  // row-major, as XLA lays buffers out for custom calls
    for (int64_t d = rank - 1; d >= 0; --d) {
        values[first_stride + static_cast<size_t>(d)] = stride;
        stride *= b->dims[d + first];
    }
}

// cuLaunchKernel runs in the calling thread's current context; XLA's thread
// normally has the stream's context current, but make sure.
CUresult ensure_context(const Driver& d, CUstream stream) {
    CUcontext current = nullptr;
    if (CUresult r = d.ctx_get_current(&current)) return r;
    if (current != nullptr) return 0;
    CUcontext wanted = nullptr;
    if (CUresult r = d.stream_get_ctx(stream, &wanted)) return r;
    return d.ctx_set_current(wanted);
}

// Launches kernel `k` once on `stream`: with `slice` >= 0, on that slice of
// every buffer of a vmapped call.
BekcXla_Error* launch_one(const BekcXla_CallFrame* f, const Launch& k, const Driver& d,
                          CUstream stream, int64_t slice) {
    thread_local std::vector<int64_t> values;
    thread_local std::vector<void*> params;
    values.clear();
    for (int64_t i = 0; i < f->args.size + f->rets.size; ++i) marshal(buffer(f, i), slice, values);
    params.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) params[i] = &values[i];
    const CUresult r =
        k.cooperative
            ? d.launch_cooperative(k.function, k.grid[0], k.grid[1], k.grid[2], k.block[0],
                                   k.block[1], k.block[2], k.shared_mem, stream, params.data())
            : d.launch(k.function, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
                       k.block[2], k.shared_mem, stream, params.data(), nullptr);
    if (r)
        return cuda_error(f->api, k.name.c_str(),
                          k.cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel", r);
    k.launch_count->fetch_add(1, std::memory_order_relaxed);
    k.last_stream->store(reinterpret_cast<uintptr_t>(stream), std::memory_order_relaxed);
    int capturing = 0;
    if (d.stream_is_capturing && d.stream_is_capturing(stream, &capturing) == 0 && capturing != 0)
        k.capture_count->fetch_add(1, std::memory_order_relaxed);
    return nullptr;
}

}  // namespace

extern "C" {

// ABI of this library as the Python side expects it; bumped on any change of
// the functions below.
BEKC_EXPORT int bekc_numba_abi_version() {
    return 2;
}

// Adds a kernel; returns its id, or -1 with a message in `error`.
BEKC_EXPORT int64_t bekc_numba_add_launch(const char* name, void* function, const uint32_t* grid,
                                          const uint32_t* block, uint32_t shared_mem,
                                          int cooperative, int64_t num_args, int64_t num_rets,
                                          const int32_t* dtypes, const int32_t* ranks, char* error,
                                          size_t error_size) {
    auto refuse = [&](const char* why) {
        std::snprintf(error, error_size, "%s: %s", name ? name : "kernel", why);
        return int64_t{-1};
    };
    if (name == nullptr) return refuse("no kernel name");
    if (function == nullptr) return refuse("no CUDA function handle");
    if (num_args < 0 || num_rets < 0) return refuse("negative buffer count");
    Launch k;
    k.name = name;
    k.function = function;
    for (int i = 0; i < 3; ++i) {
        if (grid[i] == 0 || block[i] == 0) return refuse("grid and block sizes must be positive");
        k.grid[i] = grid[i];
        k.block[i] = block[i];
    }
    k.shared_mem = shared_mem;
    k.cooperative = cooperative != 0;
    k.num_args = num_args;
    k.num_rets = num_rets;
    k.dtypes.assign(dtypes, dtypes + num_args + num_rets);
    k.ranks.assign(ranks, ranks + num_args + num_rets);
    for (size_t i = 0; i < k.dtypes.size(); ++i) {
        if (itemsize(k.dtypes[i]) == 0)
            return refuse("a buffer has a dtype Numba arrays cannot hold");
        if (k.ranks[i] < 0 || k.ranks[i] > 64) return refuse("a buffer has an unsupported rank");
    }
    k.launch_count = new std::atomic<int64_t>(0);  // entries live as long as the process
    k.capture_count = new std::atomic<int64_t>(0);
    k.last_stream = new std::atomic<uintptr_t>(0);
    k.vmap = new std::atomic<bool>(false);
    const int64_t id = launches().add(std::move(k));
    if (id < 0) return refuse("too many kernels in one process");
    return id;
}

// How many times kernel `id` was launched by the handler; `captured` gets how
// many of those went into a CUDA graph being captured. -1 for an unknown id.
BEKC_EXPORT int64_t bekc_numba_launch_stats(int64_t id, int64_t* captured) {
    const Launch* k = launches().get(id);
    if (k == nullptr) return -1;
    if (captured) *captured = k->capture_count->load(std::memory_order_relaxed);
    return k->launch_count->load(std::memory_order_relaxed);
}

// Lets kernel `id` be called under jax.vmap: one launch per batch slice.
// Returns 0, or -1 for an unknown id. Added in ABI 2 without changing the
// functions before it; call it before the id is first used.
BEKC_EXPORT int bekc_numba_allow_vmap(int64_t id) {
    const Launch* k = launches().get(id);
    if (k == nullptr) return -1;
    k->vmap->store(true, std::memory_order_release);
    return 0;
}

// The stream kernel `id` was last launched on (0 before its first launch or
// for an unknown id). Added in ABI 2 without changing the functions before it.
BEKC_EXPORT uint64_t bekc_numba_launch_stream(int64_t id) {
    const Launch* k = launches().get(id);
    return k ? k->last_stream->load(std::memory_order_relaxed) : 0;
}

// Adds a Python callable (a ctypes callback); returns its id, or -1.
BEKC_EXPORT int64_t bekc_numba_add_callable(const char* name, Callback callback, int64_t num_args,
                                            int64_t num_rets) {
    if (name == nullptr || callback == nullptr || num_args < 0 || num_rets < 0) return -1;
    Callable c;
    c.name = name;
    c.callback = callback;
    c.num_args = num_args;
    c.num_rets = num_rets;
    return callables().add(std::move(c));
}

// The kernel-launching handler (command-buffer compatible).
BEKC_EXPORT BekcXla_Error* bekc_numba_launch(BekcXla_CallFrame* f) {
    static const char kTarget[] = "bekc.numba_cuda_kernel";
    BekcXla_Error* error = nullptr;
    int64_t id = -1;
    if (!begin(f, kTarget, /*command_buffer=*/true, &id, &error)) return error;
    const Launch* k = launches().get(id);
    if (k == nullptr)
        return fail(f->api, BEKC_XLA_ERROR_INVALID_ARGUMENT, "%s: no kernel with bekc_id %lld",
                    kTarget, static_cast<long long>(id));
    Batch batch;
    if ((error = check_buffers(f, *k, &batch))) return error;
    const Driver& d = driver();
    if (d.problem)
        return fail(f->api, BEKC_XLA_ERROR_INTERNAL, "%s: %s", k->name.c_str(), d.problem);
    CUstream stream = nullptr;
    if ((error = bekc_rt::get_stream(f, &stream))) return error;
    if (CUresult r = ensure_context(d, stream))
        return cuda_error(f->api, k->name.c_str(), "making the stream's context current", r);
    // One launch, or one per batch slice: slices on one stream run in order.
    for (int64_t s = 0; s < batch.size; ++s)
        if ((error = launch_one(f, *k, d, stream, batch.batched ? s : -1))) return error;
    return nullptr;
}

// The handler that hands buffers to a Python callable (not graph-capturable:
// the callable may allocate, synchronise or do anything else).
BEKC_EXPORT BekcXla_Error* bekc_numba_call(BekcXla_CallFrame* f) {
    static const char kTarget[] = "bekc.numba_cuda_callable";
    BekcXla_Error* error = nullptr;
    int64_t id = -1;
    if (!begin(f, kTarget, /*command_buffer=*/false, &id, &error)) return error;
    const Callable* c = callables().get(id);
    if (c == nullptr)
        return fail(f->api, BEKC_XLA_ERROR_INVALID_ARGUMENT, "%s: no callable with bekc_id %lld",
                    kTarget, static_cast<long long>(id));
    if (f->args.size != c->num_args || f->rets.size != c->num_rets)
        return fail(f->api, BEKC_XLA_ERROR_INVALID_ARGUMENT,
                    "%s: expects %lld inputs and %lld outputs, called with %lld and %lld",
                    c->name.c_str(), static_cast<long long>(c->num_args),
                    static_cast<long long>(c->num_rets), static_cast<long long>(f->args.size),
                    static_cast<long long>(f->rets.size));
    CUstream stream = nullptr;
    if ((error = bekc_rt::get_stream(f, &stream))) return error;
    thread_local std::vector<uint64_t> pointers;
    pointers.clear();
    for (int64_t i = 0; i < f->args.size + f->rets.size; ++i) {
        const bool is_arg = i < f->args.size;
        const int64_t j = is_arg ? i : i - f->args.size;
        if ((is_arg ? f->args.types[j] : f->rets.types[j]) != BEKC_XLA_ARG_BUFFER)
            return fail(f->api, BEKC_XLA_ERROR_INVALID_ARGUMENT, "%s: %s %lld is not a buffer",
                        c->name.c_str(), is_arg ? "input" : "output", static_cast<long long>(j));
        const auto* b =
            static_cast<const BekcXla_Buffer*>(is_arg ? f->args.args[j] : f->rets.rets[j]);
        pointers.push_back(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(b->data)));
    }
    char message[2048] = "";
    const int status = c->callback(id, pointers.data(), static_cast<int64_t>(pointers.size()),
                                   stream, message, sizeof message);
    message[sizeof message - 1] = '\0';  // whatever the callback wrote
    if (status != 0)
        return fail(f->api, BEKC_XLA_ERROR_INTERNAL, "%s: %s", c->name.c_str(),
                    message[0] ? message : "the Python callable failed");
    return nullptr;
}

}  // extern "C"
