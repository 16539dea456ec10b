// A stand-in for XLA on the calling side of an FFI handler, written against
// bekc's own binding of the ABI (bekc/xla_ffi_abi.h): an API table whose
// Error_Create records code and message and whose Stream_Get hands out a
// chosen stream, and a builder for call frames laid out as XLA lays them out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "bekc/xla_ffi_abi.h"

// The ABI leaves XLA_FFI_Error opaque; this fake XLA defines what its errors are.
struct BekcXla_Error {
    int32_t code;
    std::string message;
};

// The fake's stream handles are addresses of objects of this type.
struct BekcXla_InvokeContext {
    int id;
};

namespace harness {

// What the fake API table saw; reset before each call.
struct ApiLog {
    int error_creates = 0;
    size_t error_create_struct_size = 0;
    bool error_create_extension_null = true;
    int stream_gets = 0;
    size_t stream_get_struct_size = 0;
    const BekcXla_InvokeContext* stream_get_ctx = nullptr;
    int unused_calls = 0;  // any API entry a handler must never call

    // What Stream_Get answers.
    void* stream = nullptr;
    BekcXla_Error* stream_error = nullptr;
};

inline ApiLog& api_log() {
    static ApiLog log;
    return log;
}

inline BekcXla_Error* fake_error_create(BekcXla_ErrorCreateArgs* args) {
    ApiLog& log = api_log();
    ++log.error_creates;
    log.error_create_struct_size = args->struct_size;
    log.error_create_extension_null = args->extension_start == nullptr;
    return new BekcXla_Error{args->errc, args->message ? args->message : "(null message)"};
}

inline BekcXla_Error* fake_stream_get(BekcXla_StreamGetArgs* args) {
    ApiLog& log = api_log();
    ++log.stream_gets;
    log.stream_get_struct_size = args->struct_size;
    log.stream_get_ctx = args->ctx;
    if (log.stream_error) return log.stream_error;
    args->stream = log.stream;
    return nullptr;
}

inline void fake_unused() { ++api_log().unused_calls; }

// The API table of an XLA at API version 0.4, every entry filled.
inline const BekcXla_Api* fake_api() {
    static const BekcXla_Api api = [] {
        BekcXla_Api a;
        std::memset(&a, 0, sizeof a);
        a.struct_size = BEKC_XLA_API_STRUCT_SIZE;
        a.extension_start = nullptr;
        a.api_version.struct_size = BEKC_XLA_API_VERSION_STRUCT_SIZE;
        a.api_version.extension_start = nullptr;
        a.api_version.major_version = BEKC_XLA_API_MAJOR;
        a.api_version.minor_version = BEKC_XLA_API_MINOR;
        a.internal_api = nullptr;
        a.error_create = &fake_error_create;
        a.stream_get = &fake_stream_get;
        BekcXla_UnusedFn** unused[] = {
            &a.error_get_details,     &a.error_destroy,          &a.handler_register,
            &a.type_register,         &a.invoke_context_get,     &a.state_set,
            &a.state_get,             &a.device_memory_allocate, &a.device_memory_free,
            &a.thread_pool_schedule,  &a.thread_pool_num_threads, &a.future_create,
            &a.future_set_available,  &a.future_set_error,       &a.run_id_get,
            &a.device_ordinal_get,    &a.invoke_context_find_extension};
        for (auto** slot : unused) *slot = &fake_unused;
        return a;
    }();
    return &api;
}

// The error a handler returned, taken over from the fake (which allocated it).
struct Outcome {
    bool ok = true;
    int32_t code = 0;
    std::string message;
};

inline Outcome take(BekcXla_Error* e) {
    Outcome o;
    if (!e) return o;
    o.ok = false;
    o.code = e->code;
    o.message = e->message;
    if (e != api_log().stream_error) delete e;
    return o;
}

// Builds a call frame the way XLA does: buffers for args and rets, scalar
// attributes sorted by name (unless told otherwise), stage EXECUTE, the
// struct sizes of API 0.1. Owns every piece the frame points to; tests may
// change the frame afterwards to make it wrong.
class FrameBuilder {
public:
    FrameBuilder& arg(int32_t dtype, void* data, std::vector<int64_t> dims) {
        args_.push_back(make_buffer(dtype, data, std::move(dims)));
        return *this;
    }
    FrameBuilder& ret(int32_t dtype, void* data, std::vector<int64_t> dims) {
        rets_.push_back(make_buffer(dtype, data, std::move(dims)));
        return *this;
    }
    // A scalar attribute of XLA dtype `dtype` whose value has T's bytes.
    template <class T>
    FrameBuilder& attr(const std::string& name, int32_t dtype, T value) {
        Attr a{name, BEKC_XLA_ATTR_SCALAR, dtype, std::vector<unsigned char>(sizeof(T))};
        std::memcpy(a.bytes.data(), &value, sizeof(T));
        attrs_.push_back(std::move(a));
        return *this;
    }
    // An attribute of another kind (array, dictionary, string); its payload is
    // never read by a correct handler.
    FrameBuilder& attr_of_kind(const std::string& name, int32_t kind) {
        attrs_.push_back(Attr{name, kind, BEKC_XLA_DTYPE_F32, std::vector<unsigned char>(8)});
        return *this;
    }
    FrameBuilder& keep_attr_order() {
        sorted_ = false;
        return *this;
    }

    // The frame; valid while this builder lives and is not changed.
    BekcXla_CallFrame& frame() {
        if (sorted_)
            std::stable_sort(attrs_.begin(), attrs_.end(),
                             [](const Attr& a, const Attr& b) { return a.name < b.name; });
        arg_types_.assign(args_.size(), BEKC_XLA_ARG_BUFFER);
        ret_types_.assign(rets_.size(), BEKC_XLA_RET_BUFFER);
        arg_ptrs_.clear();
        for (auto& b : args_) arg_ptrs_.push_back(&b.buffer);
        ret_ptrs_.clear();
        for (auto& b : rets_) ret_ptrs_.push_back(&b.buffer);
        attr_types_.clear();
        names_.clear();
        name_ptrs_.clear();
        scalars_.clear();
        attr_ptrs_.clear();
        for (auto& a : attrs_) {
            attr_types_.push_back(a.kind);
            names_.push_back(BekcXla_ByteSpan{a.name.data(), a.name.size()});
            scalars_.push_back(BekcXla_Scalar{a.dtype, a.bytes.data()});
        }
        for (size_t i = 0; i < attrs_.size(); ++i) {
            name_ptrs_.push_back(&names_[i]);
            attr_ptrs_.push_back(&scalars_[i]);
        }

        std::memset(&frame_, 0, sizeof frame_);
        frame_.struct_size = BEKC_XLA_CALL_FRAME_STRUCT_SIZE;
        frame_.extension_start = nullptr;
        frame_.api = fake_api();
        frame_.ctx = &ctx_;
        frame_.stage = BEKC_XLA_STAGE_EXECUTE;
        frame_.args = BekcXla_Args{BEKC_XLA_ARGS_STRUCT_SIZE, nullptr,
                                   static_cast<int64_t>(args_.size()), arg_types_.data(),
                                   arg_ptrs_.data()};
        frame_.rets = BekcXla_Rets{BEKC_XLA_RETS_STRUCT_SIZE, nullptr,
                                   static_cast<int64_t>(rets_.size()), ret_types_.data(),
                                   ret_ptrs_.data()};
        frame_.attrs = BekcXla_Attrs{BEKC_XLA_ATTRS_STRUCT_SIZE, nullptr,
                                     static_cast<int64_t>(attrs_.size()), attr_types_.data(),
                                     name_ptrs_.data(), attr_ptrs_.data()};
        frame_.future = nullptr;
        return frame_;
    }

    BekcXla_Buffer& arg_buffer(size_t i) { return args_[i].buffer; }
    BekcXla_Buffer& ret_buffer(size_t i) { return rets_[i].buffer; }
    std::vector<int32_t>& arg_types() { return arg_types_; }
    std::vector<int32_t>& ret_types() { return ret_types_; }
    const BekcXla_InvokeContext* ctx() const { return &ctx_; }

private:
    struct OwnedBuffer {
        std::vector<int64_t> dims;
        BekcXla_Buffer buffer;
    };
    struct Attr {
        std::string name;
        int32_t kind;
        int32_t dtype;
        std::vector<unsigned char> bytes;
    };

    static OwnedBuffer make_buffer(int32_t dtype, void* data, std::vector<int64_t> dims) {
        OwnedBuffer b{std::move(dims), {}};
        b.buffer.struct_size = BEKC_XLA_BUFFER_STRUCT_SIZE;
        b.buffer.extension_start = nullptr;
        b.buffer.dtype = dtype;
        b.buffer.data = data;
        b.buffer.rank = static_cast<int64_t>(b.dims.size());
        b.buffer.dims = b.dims.data();  // vector storage survives the move into the deque
        return b;
    }

    std::deque<OwnedBuffer> args_, rets_;
    std::deque<Attr> attrs_;
    bool sorted_ = true;
    std::vector<int32_t> arg_types_, ret_types_, attr_types_;
    std::vector<void*> arg_ptrs_, ret_ptrs_, attr_ptrs_;
    std::vector<BekcXla_ByteSpan> names_;
    std::vector<BekcXla_ByteSpan*> name_ptrs_;
    std::vector<BekcXla_Scalar> scalars_;
    BekcXla_InvokeContext ctx_{7};
    BekcXla_CallFrame frame_;
};

// XLA's registration-time metadata query: a call frame whose extension
// chain holds a metadata extension (optionally behind an unrelated one).
struct MetadataQuery {
    // Filled with a sentinel so that any byte the handler writes shows.
    BekcXla_Metadata metadata;
    BekcXla_MetadataExtension ext;
    BekcXla_InternalExtension other;  // an unrelated extension ahead of it in the chain
    BekcXla_CallFrame frame;

    explicit MetadataQuery(const BekcXla_Api* api, bool other_first = false) {
        std::memset(&metadata, 0x5C, sizeof metadata);
        metadata.struct_size = BEKC_XLA_METADATA_STRUCT_SIZE;
        std::memset(&ext, 0, sizeof ext);
        ext.extension_base.struct_size = BEKC_XLA_METADATA_EXTENSION_STRUCT_SIZE;
        ext.extension_base.type = BEKC_XLA_EXTENSION_METADATA;
        ext.extension_base.next = nullptr;
        ext.metadata = &metadata;
        other.struct_size = BEKC_XLA_INTERNAL_EXTENSION_STRUCT_SIZE;
        other.type = 99;
        other.next = &ext.extension_base;
        // As XLA builds it: only the sizes, the extension and (since some
        // jaxlib releases) the api; everything else zero.
        std::memset(&frame, 0, sizeof frame);
        frame.struct_size = BEKC_XLA_CALL_FRAME_STRUCT_SIZE;
        frame.extension_start = other_first ? &other : &ext.extension_base;
        frame.api = api;
        frame.ctx = nullptr;
        frame.stage = BEKC_XLA_STAGE_EXECUTE;
        frame.args.struct_size = BEKC_XLA_ARGS_STRUCT_SIZE;
        frame.rets.struct_size = BEKC_XLA_RETS_STRUCT_SIZE;
        frame.attrs.struct_size = BEKC_XLA_ATTRS_STRUCT_SIZE;
    }

    // What `metadata` must hold after a handler answered: API version 0.1
    // and the traits set, every other byte (padding, state_type_id) as before.
    BekcXla_Metadata expected(bool command_buffer_trait) const {
        BekcXla_Metadata want;
        std::memcpy(&want, &metadata, sizeof want);
        want.api_version.struct_size = BEKC_XLA_API_VERSION_STRUCT_SIZE;
        want.api_version.extension_start = nullptr;
        want.api_version.major_version = 0;
        want.api_version.minor_version = 1;
        want.traits = command_buffer_trait ? 1u : 0u;
        return want;
    }
};

}  // namespace harness
