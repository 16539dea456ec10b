// Support code for the XLA FFI handlers bekc generates.
//
// A library's entry points live in their own translation unit (bekc/entry.h).
// This header is what the user's translation unit adds after the user's
// source: the Frame a call reads its parameters from, and `invoke`, which
// calls the user's function with them. bekc's wrapper includes it only in host
// passes (device passes skip it), and emits no function of its own: per
// exported function, only a table entry (Export) naming the user's function
// and where each of its parameters comes from, plus one `invoke` per distinct
// C++ signature.
//
// Everything that checks a call frame is defined here under
// BEKC_RT_IMPLEMENTATION, compiled once per host compiler into an object in
// bekc's cache (bekc/handler_rt.cpp) and linked into every library, so no
// build compiles and optimises it again.
//
// Each check XLA's own handlers make is made here too, with an
// INVALID_ARGUMENT error that names the target and says what was expected and
// what came. An exception thrown by the user's function (BE_CHECK,
// BE_CUDA_CHECK, or any std::exception) becomes an INTERNAL error carrying the
// target name and the message, so the Python caller gets an exception and the
// process lives.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <type_traits>
#include <utility>

#include "bekc/entry.h"
#include "bekc/xla_ffi_abi.h"
#include "brainevent/common.h"

// The checks and error formatting are called from each handler, not inlined
// into every one: inlined at -O3 they made the host compiler's share of a
// build about 2x (see docs/benchmarks.md), and a call per XLA invocation costs
// nothing measurable. A translation unit that defines BEKC_RT_IMPLEMENTATION
// before including this header (bekc/handler_rt.cpp, libbekc_numba) holds
// the definitions.
#define BEKC_RT_NOINLINE __attribute__((noinline))

namespace bekc_rt {

// The most dimensions a BE::Tensor holds, in bekc's headers and in
// brainevent's alike.
constexpr int kMaxRank = 8;

inline BE::DType to_be_dtype(int32_t xla) {
    switch (xla) {
        case BEKC_XLA_DTYPE_PRED: return BE::DType::Bool;
        case BEKC_XLA_DTYPE_S8: return BE::DType::Int8;
        case BEKC_XLA_DTYPE_S16: return BE::DType::Int16;
        case BEKC_XLA_DTYPE_S32: return BE::DType::Int32;
        case BEKC_XLA_DTYPE_S64: return BE::DType::Int64;
        case BEKC_XLA_DTYPE_U8: return BE::DType::UInt8;
        case BEKC_XLA_DTYPE_U16: return BE::DType::UInt16;
        case BEKC_XLA_DTYPE_U32: return BE::DType::UInt32;
        case BEKC_XLA_DTYPE_U64: return BE::DType::UInt64;
        case BEKC_XLA_DTYPE_F16: return BE::DType::Float16;
        case BEKC_XLA_DTYPE_F32: return BE::DType::Float32;
        case BEKC_XLA_DTYPE_F64: return BE::DType::Float64;
        case BEKC_XLA_DTYPE_BF16: return BE::DType::BFloat16;
        case BEKC_XLA_DTYPE_C64: return BE::DType::Complex64;
        case BEKC_XLA_DTYPE_C128: return BE::DType::Complex128;
        default: return BE::DType::Invalid;
    }
}

// The names users know from NumPy and JAX.
inline const char* xla_dtype_name(int32_t xla) {
    static const char* const kNames[] = {
        "invalid", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "float16", "float32", "float64", "type 13", "type 14", "complex64",
        "bfloat16", "token", "complex128", "float8_e5m2", "float8_e4m3fn", "int4", "uint4",
        "float8_e4m3b11fnuz", "float8_e5m2fnuz", "float8_e4m3fnuz", "int2", "uint2",
        "float8_e4m3", "float8_e3m4", "int1", "uint1", "float4_e2m1fn", "float8_e8m0fnu"};
    if (xla >= 0 && xla < static_cast<int32_t>(sizeof kNames / sizeof kNames[0])) return kNames[xla];
    return "an unknown type";
}

// A validated call frame, as the generated call function sees it.
class Frame {
public:
    Frame(const BekcXla_CallFrame* frame, int64_t stream) : frame_(frame), stream_(stream) {}

    // Out of line (one copy per wrapper): inlined, building a BE::Tensor in
    // every handler of a file with dozens of them more than doubled the host
    // compile (docs/benchmarks.md, "Multi-architecture builds"), and a call
    // per buffer costs nothing beside a kernel launch.
    BEKC_RT_NOINLINE BE::Tensor arg(int i) const {
        return tensor(frame_->args.args[i], kArgument, i);
    }
    BEKC_RT_NOINLINE BE::Tensor ret(int i) const {
        return tensor(frame_->rets.rets[i], kResult, i);
    }
    int64_t stream() const { return stream_; }
    // The i-th attribute in name order; its dtype was checked against T's.
    template <class T>
    T attr(int i) const {
        T value;
        const auto* scalar = static_cast<const BekcXla_Scalar*>(frame_->attrs.attrs[i]);
        std::memcpy(&value, scalar->value, sizeof(T));
        return value;
    }

private:
    // Defined here, in every wrapper, not in bekc_rt.o: the runtime object is
    // compiled once against bekc's brainevent/ headers, while a wrapper may
    // see brainevent's own (a user's -I comes first), whose BE::Tensor has
    // another layout. Only the wrapper knows which BE::Tensor it has.
    //
    // bekc's BE::Tensor also records which argument or result it views (its
    // Origin), so that a data_ptr<T>() of the wrong width can name it.
    // brainevent's has no such tag, and no check in data_ptr<T>().
    //
    // Cold, so optimised for size: brainevent's checked constructor builds
    // its error message with std::to_string, and at -O3 that alone added
    // about 50 ms to every wrapper's host compile.
    enum Role { kArgument, kResult };
    __attribute__((cold)) static BE::Tensor tensor(void* p, Role role, int index) {
        const auto* b = static_cast<const BekcXla_Buffer*>(p);
        // check_buffers has checked the rank, dtype and dimensions of every buffer.
#if defined(BEKC_BRAINEVENT_HEADERS)
        const auto origin =
            role == kArgument ? BE::Tensor::Origin::Argument : BE::Tensor::Origin::Result;
        return BE::Tensor(BE::Tensor::Unchecked{}, b->data, to_be_dtype(b->dtype),
                          static_cast<int>(b->rank), b->dims, origin, index);
#else
        (void)role;
        (void)index;
        return BE::Tensor(b->data, b->dims, static_cast<int>(b->rank), to_be_dtype(b->dtype));
#endif
    }

    const BekcXla_CallFrame* frame_;
    int64_t stream_;
};

// One parameter of the user's function, from where its Slot says.
template <class T>
inline T parameter(const Frame& f, const Slot& s) {
    if constexpr (std::is_same_v<T, BE::Tensor>) {
        return s.kind == kSlotArg ? f.arg(s.index) : f.ret(s.index);
    } else {
        if (s.kind == kSlotStream) return static_cast<T>(f.stream());
        return f.attr<T>(s.index);
    }
}

template <class... P, size_t... I>
void invoke_with(const Frame& f, const Export& e, std::index_sequence<I...>) {
    // Read at run time through the table, so the user's function is never
    // inlined here: it is optimised once, as its own symbol.
    void (*fn)(P...) = *static_cast<void (*const*)(P...)>(e.function);
    fn(parameter<std::decay_t<P>>(f, e.slots[I])...);
}

// Export::invoke for functions of type void(P...): one instantiation per
// signature, however many functions share it.
template <class... P>
BEKC_RT_NOINLINE void invoke(const Frame& f, const Export& e) {
    invoke_with<P...>(f, e, std::index_sequence_for<P...>{});
}

// &invoke<P...> for a function pointer of type void (*)(P...); top-level
// const on parameters is not part of a function's type, so `const BE::Tensor`
// and `BE::Tensor` share one instantiation.
template <class... P>
constexpr void (*invoker(void (*)(P...)))(const Frame&, const Export&) {
    return &invoke<P...>;
}

// ---- declarations (definitions below, under BEKC_RT_IMPLEMENTATION) ----

BekcXla_Error* make_error(const BekcXla_Api* api, int32_t code, const char* message);

// An error whose message is printf-formatted.
__attribute__((format(printf, 3, 4))) BekcXla_Error* fail(const BekcXla_Api* api, int32_t code,
                                                          const char* format, ...);

// When XLA registers a handler it calls it once with a metadata extension in
// the chain: fill in the version and traits, and do nothing else. Returns
// true when this call was that query.
bool is_metadata_query(BekcXla_CallFrame* f, bool command_buffer, BekcXla_Error** error);

// The start of every handler: answers the metadata query, then checks the
// call frame's size and the execution stage. Returns true when the handler
// should go on; otherwise *error is what it returns (null after the query).
bool begin_call(BekcXla_CallFrame* f, const char* target, bool command_buffer,
                BekcXla_Error** error);

// XLA's stream for this call (a cudaStream_t on CUDA).
BekcXla_Error* get_stream(BekcXla_CallFrame* f, void** stream);

// Checks buffer kinds, dtypes, ranks and dimensions of args or rets.
BekcXla_Error* check_buffers(const BekcXla_CallFrame* f, const FunctionInfo& info,
                             const char* kind, int64_t n, const int32_t* types,
                             void* const* buffers);

// Checks attribute names (in order) and scalar dtypes.
BekcXla_Error* check_attrs(const BekcXla_CallFrame* f, const FunctionInfo& info);


#if defined(BEKC_RT_IMPLEMENTATION)
// ---- definitions: bekc/handler_rt.cpp, once per host compiler ----

BEKC_RT_NOINLINE BekcXla_Error* make_error(const BekcXla_Api* api, int32_t code,
                                                  const char* message) {
    BekcXla_ErrorCreateArgs args;
    args.struct_size = BEKC_XLA_ERROR_CREATE_ARGS_STRUCT_SIZE;
    args.extension_start = nullptr;
    args.message = message;
    args.errc = code;
    return api->error_create(&args);
}

// Messages are built with vsnprintf rather than std::string concatenation:
// the concatenations, instantiated and optimised in every wrapper at -O3, cost
// more compile time than the rest of the handler code together.
__attribute__((format(printf, 3, 4))) BEKC_RT_NOINLINE BekcXla_Error* fail(
    const BekcXla_Api* api, int32_t code, const char* format, ...) {
    va_list args, again;
    va_start(args, format);
    va_copy(again, args);
    int n = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    char* text = n >= 0 ? static_cast<char*>(std::malloc(static_cast<size_t>(n) + 1)) : nullptr;
    if (text) std::vsnprintf(text, static_cast<size_t>(n) + 1, format, again);
    va_end(again);
    BekcXla_Error* error = make_error(api, code, text ? text : format);
    std::free(text);
    return error;
}

BEKC_RT_NOINLINE bool is_metadata_query(BekcXla_CallFrame* f, bool command_buffer,
                                               BekcXla_Error** error) {
    for (BekcXla_InternalExtension* e = f->extension_start; e; e = e->next) {
        if (e->type != BEKC_XLA_EXTENSION_METADATA) continue;
        BekcXla_Metadata* m = reinterpret_cast<BekcXla_MetadataExtension*>(e)->metadata;
        if (m == nullptr || m->struct_size < BEKC_XLA_METADATA_STRUCT_SIZE) {
            // Some jaxlib releases send this query with api == NULL: with no
            // Error_Create to call, write nothing and let XLA reject the
            // version it finds unset.
            if (f->api != nullptr)
                *error = fail(f->api, BEKC_XLA_ERROR_INVALID_ARGUMENT,
                              "bekc handler: XLA's metadata struct is %zu bytes, expected at "
                              "least %zu",
                              m ? m->struct_size : size_t{0},
                              static_cast<size_t>(BEKC_XLA_METADATA_STRUCT_SIZE));
            return true;
        }
        m->api_version.struct_size = BEKC_XLA_API_VERSION_STRUCT_SIZE;
        m->api_version.extension_start = nullptr;
        m->api_version.major_version = BEKC_XLA_HANDLER_API_MAJOR;
        m->api_version.minor_version = BEKC_XLA_HANDLER_API_MINOR;
        m->traits = command_buffer ? uint32_t{BEKC_XLA_TRAIT_COMMAND_BUFFER_COMPATIBLE} : 0u;
        return true;
    }
    return false;
}

BEKC_RT_NOINLINE bool begin_call(BekcXla_CallFrame* f, const char* target, bool command_buffer,
                                 BekcXla_Error** error) {
    const int32_t bad = BEKC_XLA_ERROR_INVALID_ARGUMENT;
    *error = nullptr;
    if (is_metadata_query(f, command_buffer, error)) return false;
    if (f->struct_size < BEKC_XLA_CALL_FRAME_STRUCT_SIZE) {
        *error = fail(f->api, bad, "%s: call frame is %zu bytes, expected at least %zu", target,
                      f->struct_size, static_cast<size_t>(BEKC_XLA_CALL_FRAME_STRUCT_SIZE));
        return false;
    }
    if (f->stage != BEKC_XLA_STAGE_EXECUTE) {
        *error = fail(f->api, bad, "%s: wrong execution stage: expected 3 (execute), got %d",
                      target, static_cast<int>(f->stage));
        return false;
    }
    return true;
}

BEKC_RT_NOINLINE BekcXla_Error* get_stream(BekcXla_CallFrame* f, void** stream) {
    BekcXla_StreamGetArgs args;
    args.struct_size = BEKC_XLA_STREAM_GET_ARGS_STRUCT_SIZE;
    args.extension_start = nullptr;
    args.ctx = f->ctx;
    args.stream = nullptr;
    BekcXla_Error* error = f->api->stream_get(&args);
    *stream = args.stream;
    return error;
}

// Checks buffer kinds, dtypes, ranks and dimensions of args or rets, so that
// Frame can build each BE::Tensor without checks of its own.
BEKC_RT_NOINLINE BekcXla_Error* check_buffers(const BekcXla_CallFrame* f,
                                                     const FunctionInfo& info, const char* kind,
                                                     int64_t n, const int32_t* types,
                                                     void* const* buffers) {
    const int32_t bad = BEKC_XLA_ERROR_INVALID_ARGUMENT;
    for (int64_t i = 0; i < n; ++i) {
        const long long index = static_cast<long long>(i);
        if (types[i] != BEKC_XLA_ARG_BUFFER)
            return fail(f->api, bad, "%s: %s %lld is not a buffer", info.target, kind, index);
        const auto* b = static_cast<const BekcXla_Buffer*>(buffers[i]);
        if (to_be_dtype(b->dtype) == BE::DType::Invalid)
            return fail(f->api, bad, "%s: %s %lld has dtype %s, which BE::Tensor cannot represent",
                        info.target, kind, index, xla_dtype_name(b->dtype));
        if (b->rank < 0 || b->rank > kMaxRank)
            return fail(f->api, bad, "%s: %s %lld has rank %lld; BE::Tensor supports 0 to %d dimensions",
                        info.target, kind, index, static_cast<long long>(b->rank),
                        kMaxRank);
        for (int64_t d = 0; d < b->rank; ++d)
            if (b->dims[d] < 0)
                return fail(f->api, bad, "%s: %s %lld has a negative dimension %lld: %lld",
                            info.target, kind, index, static_cast<long long>(d),
                            static_cast<long long>(b->dims[d]));
    }
    return nullptr;
}

// float16 and bfloat16 attributes travel as their raw bits in a uint16
// scalar (XLA's attribute conversion refuses 16-bit float scalars, so
// jax.ffi.ffi_call cannot send them typed). A typed F16/BF16 scalar, should
// an XLA ever send one, has the same two bytes and is accepted too.
inline bool attr_dtype_matches(const AttrSpec& want, int32_t got) {
    if (got == want.dtype) return true;
    return (got == BEKC_XLA_DTYPE_F16 && std::strcmp(want.type, "float16") == 0) ||
           (got == BEKC_XLA_DTYPE_BF16 && std::strcmp(want.type, "bfloat16") == 0);
}

BEKC_RT_NOINLINE BekcXla_Error* check_attrs(const BekcXla_CallFrame* f,
                                                   const FunctionInfo& info) {
    const int32_t bad = BEKC_XLA_ERROR_INVALID_ARGUMENT;
    const BekcXla_Attrs& a = f->attrs;
    for (int64_t i = 0; i < a.size; ++i) {
        const AttrSpec& want = info.attrs[i];
        const BekcXla_ByteSpan* name = a.names[i];
        const int len = static_cast<int>(name->len);
        if (name->len != std::strlen(want.name) || std::memcmp(name->ptr, want.name, name->len) != 0)
            return fail(f->api, bad,
                        "%s: unexpected attribute '%.*s' (expected '%s'; attributes are matched "
                        "by name)",
                        info.target, len, name->ptr, want.name);
        if (a.types[i] != BEKC_XLA_ATTR_SCALAR)
            return fail(f->api, bad, "%s: attribute '%.*s' must be a scalar", info.target, len,
                        name->ptr);
        const auto* s = static_cast<const BekcXla_Scalar*>(a.attrs[i]);
        if (attr_dtype_matches(want, s->dtype)) continue;
        // How a Python caller makes the scalar the handler expects.
        char hint[64];
        if (std::strcmp(want.type, "bool") == 0)
            std::snprintf(hint, sizeof hint, "np.bool_(value)");
        else if (std::strcmp(want.type, "float16") == 0)
            std::snprintf(hint, sizeof hint, "np.float16(value).view(np.uint16)");
        else if (std::strcmp(want.type, "bfloat16") == 0)
            std::snprintf(hint, sizeof hint, "ml_dtypes.bfloat16(value).view(np.uint16)");
        else
            std::snprintf(hint, sizeof hint, "np.%s(value)", want.type);
        const char* carrier = xla_dtype_name(want.dtype);
        const bool raw_bits = std::strcmp(carrier, want.type) != 0;
        return fail(f->api, bad,
                    "%s: attribute '%.*s' must be %s%s%s%s, got %s (pass e.g. %s, or call "
                    "through bekc.load, which casts)",
                    info.target, len, name->ptr, want.type, raw_bits ? " (its bits as a " : "",
                    raw_bits ? carrier : "", raw_bits ? " scalar)" : "", xla_dtype_name(s->dtype),
                    hint);
    }
    return nullptr;
}

BEKC_RT_NOINLINE BekcXla_Error* handle(BekcXla_CallFrame* f, const FunctionInfo& info,
                                       const Export& entry, bool command_buffer) {
    const int32_t bad = BEKC_XLA_ERROR_INVALID_ARGUMENT;
    BekcXla_Error* error = nullptr;
    if (!begin_call(f, info.target, command_buffer, &error)) return error;
    const char* const kinds[3] = {"arguments", "results", "attributes"};
    const int64_t want[3] = {info.num_args, info.num_rets, info.num_attrs};
    const int64_t got[3] = {f->args.size, f->rets.size, f->attrs.size};
    for (int k = 0; k < 3; ++k)
        if (got[k] != want[k])
            return fail(f->api, bad, "%s: expected %lld %s, got %lld", info.target,
                        static_cast<long long>(want[k]), kinds[k], static_cast<long long>(got[k]));
    if ((error = check_buffers(f, info, "argument", f->args.size, f->args.types, f->args.args)))
        return error;
    if ((error = check_buffers(f, info, "result", f->rets.size, f->rets.types, f->rets.rets)))
        return error;
    if ((error = check_attrs(f, info))) return error;
    void* stream = nullptr;
    if (info.needs_stream && (error = get_stream(f, &stream))) return error;
    try {
        entry.invoke(Frame(f, reinterpret_cast<int64_t>(stream)), entry);
    } catch (const std::exception& e) {
        return fail(f->api, BEKC_XLA_ERROR_INTERNAL, "%s: %s", info.target, e.what());
    } catch (...) {
        return fail(f->api, BEKC_XLA_ERROR_INTERNAL, "%s: unknown C++ exception", info.target);
    }
    return nullptr;
}

#endif  // BEKC_RT_IMPLEMENTATION

}  // namespace bekc_rt
