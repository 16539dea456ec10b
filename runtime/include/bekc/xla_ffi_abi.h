/* bekc's own C binding of the XLA FFI ABI: the structs and constants a
 * generated handler needs to decode a call frame, answer XLA's metadata query,
 * fetch the stream and report errors.
 *
 * Why not XLA's headers: building must not need JAX installed, and XLA's C++
 * `ffi.h` is template-heavy while a wrapper must compile in well under a
 * second. Every name here starts with `BekcXla` / `BEKC_XLA_` so a translation
 * unit can include this file next to XLA's `xla/ffi/api/c_api.h` (user kernels
 * may). Field types are fixed-width and the compiler lays the structs out as
 * XLA's compiler does (no packing); tests/abi/layout_test.cpp proves every
 * size, offset and enum value against the installed XLA header.
 *
 * The layout is the one of XLA FFI API 0.4 (jaxlib 0.11.1+), read for facts
 * from XLA's c_api.h; it is a superset of what older versions send, as the
 * history below shows.
 *
 * ---------------------------------------------------------------------------
 * XLA FFI API version history (from the c_api.h shipped in each jaxlib wheel
 * on PyPI, and XLA's ffi_api.cc / ffi_registry.cc)
 *
 *   jaxlib          API  what changed for a handler
 *   0.4.29-0.4.30   0.0  first c_api.h in the wheel (jaxlib/include); struct
 *                        field 2 is `void* priv`; stages PREPARE=0,
 *                        INITIALIZE=1, EXECUTE=2. No metadata query.
 *                        XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE
 *                        (bit 0) exists, as an argument of Handler_Register;
 *                        Python reaches it through register_ffi_target's
 *                        **kwargs: traits=xla_client.CustomCallTargetTraits.
 *                        COMMAND_BUFFER_COMPATIBLE (checked in 0.4.31+).
 *   0.4.31          0.0  stage INSTANTIATE=0 inserted (EXECUTE becomes 3);
 *                        Api gains api_version. jax 0.4.31 adds
 *                        jax.extend.ffi.register_ffi_target(api_version=1),
 *                        the typed-FFI registration.
 *   0.4.33          0.1  `priv` becomes `extension_start`; the metadata
 *                        extension (type 1) appears: XLA calls the execute
 *                        handler once at registration and reads api_version
 *                        and traits from XLA_FFI_Metadata, so the handler
 *                        can declare command-buffer compatibility itself
 *                        (XLA ORs these traits with the registration's).
 *                        XLA requires the handler's version to EQUAL 0.1
 *                        (this exact check lasts through jaxlib 0.8.0).
 *   0.4.34          0.1  CallFrame gains `future` after attrs (outside
 *                        struct_size, which still ends at attrs).
 *   0.4.38          0.1  Api gains ThreadPool_NumThreads *before*
 *                        Future_Create: later Api entries move within 0.1.
 *   0.5.0           0.1  jax.ffi becomes public (jax.ffi.register_ffi_target);
 *                        jax.extend.ffi is deprecated.
 *   0.6.0           0.1  Api gains RunId_Get and DeviceOrdinal_Get; Api
 *                        struct_size, which had ended at Stream_Get, now
 *                        ends at DeviceOrdinal_Get.
 *   0.8.0           0.1  Metadata gains state_type_id (outside struct_size,
 *                        which ends at traits).
 *   0.8.1           0.2  Type_Register takes a TypeInfo; State_Set loses its
 *                        deleter. XLA now accepts any handler version in
 *                        [0.1, its own] ("Minimum supported API version is
 *                        (0.1)"; still 0.1 in XLA's ffi_registry.cc today).
 *   0.9.1           0.3  State_Set/State_Get gain a stage field.
 *   0.11.1          0.4  Extension_Base renamed InternalExtension (same
 *                        layout); ExecutionContext renamed InvokeContext;
 *                        Error_GetMessage -> Error_GetDetails (+errc); stage
 *                        RECORD=4; handler bundles gain `record`; Api gains
 *                        InvokeContext_FindExtension.
 *   0.12.0          0.5  Api gains CustomOptions_Get.
 *
 * What a bekc handler touches (CallFrame up to attrs, Args, Rets, Attrs,
 * Buffer, Scalar, ByteSpan, Metadata up to traits, Api.Error_Create,
 * Api.Stream_Get, ErrorCreateArgs, StreamGetArgs, the enum values) has had the
 * same layout and values from 0.1 to 0.5. Hence the recommendation:
 *
 *   - declare API version 0.1 in the metadata (BEKC_XLA_HANDLER_API_MINOR):
 *     accepted by every jaxlib from 0.4.33 to today (0.4.33-0.8.0 accept
 *     exactly 0.1; 0.8.1+ accept 0.1..current). Declaring 0.4 would restrict
 *     the library to jaxlib >= 0.11.1 and gain nothing.
 *   - the loader uses jax.ffi.register_ffi_target, so in practice the floor is
 *     jax/jaxlib 0.5.0 (with jax.extend.ffi it would be 0.4.33).
 *   - check sizes against what 0.1 sent, not against this file's full
 *     structs: call_frame->struct_size >= BEKC_XLA_CALL_FRAME_STRUCT_SIZE,
 *     metadata->struct_size >= BEKC_XLA_METADATA_STRUCT_SIZE,
 *     api->struct_size >= BEKC_XLA_API_STRUCT_SIZE_THROUGH_STREAM_GET.
 *   - write only metadata->api_version and metadata->traits: before jaxlib
 *     0.8.0 the Metadata XLA passes ends at traits.
 * ---------------------------------------------------------------------------
 */
#ifndef BEKC_XLA_FFI_ABI_H_
#define BEKC_XLA_FFI_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version whose layout this file describes. */
#define BEKC_XLA_API_MAJOR 0
#define BEKC_XLA_API_MINOR 4

/* The version bekc's handlers report to XLA (see the history above). */
#define BEKC_XLA_HANDLER_API_MAJOR 0
#define BEKC_XLA_HANDLER_API_MINOR 1

/* XLA's definition of a struct's size: the end of one named field, so fields
 * added later (CallFrame.future, Metadata.state_type_id) are not counted. */
#define BEKC_XLA_STRUCT_SIZE(type, last_field) \
    (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* ---- Enumerations (XLA's are 4-byte C enums; fields below are int32_t) ---- */

typedef enum BekcXla_ErrorCode {
    BEKC_XLA_ERROR_OK = 0,
    BEKC_XLA_ERROR_CANCELLED = 1,
    BEKC_XLA_ERROR_UNKNOWN = 2,
    BEKC_XLA_ERROR_INVALID_ARGUMENT = 3,
    BEKC_XLA_ERROR_DEADLINE_EXCEEDED = 4,
    BEKC_XLA_ERROR_NOT_FOUND = 5,
    BEKC_XLA_ERROR_ALREADY_EXISTS = 6,
    BEKC_XLA_ERROR_PERMISSION_DENIED = 7,
    BEKC_XLA_ERROR_RESOURCE_EXHAUSTED = 8,
    BEKC_XLA_ERROR_FAILED_PRECONDITION = 9,
    BEKC_XLA_ERROR_ABORTED = 10,
    BEKC_XLA_ERROR_OUT_OF_RANGE = 11,
    BEKC_XLA_ERROR_UNIMPLEMENTED = 12,
    BEKC_XLA_ERROR_INTERNAL = 13,
    BEKC_XLA_ERROR_UNAVAILABLE = 14,
    BEKC_XLA_ERROR_DATA_LOSS = 15,
    BEKC_XLA_ERROR_UNAUTHENTICATED = 16
} BekcXla_ErrorCode;

/* xla::PrimitiveType numbers. Only PRED..C128 have a BE::DType; the rest are
 * listed so a handler can name what it rejects. */
typedef enum BekcXla_DataType {
    BEKC_XLA_DTYPE_INVALID = 0,
    BEKC_XLA_DTYPE_PRED = 1,
    BEKC_XLA_DTYPE_S8 = 2,
    BEKC_XLA_DTYPE_S16 = 3,
    BEKC_XLA_DTYPE_S32 = 4,
    BEKC_XLA_DTYPE_S64 = 5,
    BEKC_XLA_DTYPE_U8 = 6,
    BEKC_XLA_DTYPE_U16 = 7,
    BEKC_XLA_DTYPE_U32 = 8,
    BEKC_XLA_DTYPE_U64 = 9,
    BEKC_XLA_DTYPE_F16 = 10,
    BEKC_XLA_DTYPE_F32 = 11,
    BEKC_XLA_DTYPE_F64 = 12,
    BEKC_XLA_DTYPE_C64 = 15,
    BEKC_XLA_DTYPE_BF16 = 16,
    BEKC_XLA_DTYPE_TOKEN = 17,
    BEKC_XLA_DTYPE_C128 = 18,
    BEKC_XLA_DTYPE_F8E5M2 = 19,
    BEKC_XLA_DTYPE_F8E4M3FN = 20,
    BEKC_XLA_DTYPE_S4 = 21,
    BEKC_XLA_DTYPE_U4 = 22,
    BEKC_XLA_DTYPE_F8E4M3B11FNUZ = 23,
    BEKC_XLA_DTYPE_F8E5M2FNUZ = 24,
    BEKC_XLA_DTYPE_F8E4M3FNUZ = 25,
    BEKC_XLA_DTYPE_S2 = 26,
    BEKC_XLA_DTYPE_U2 = 27,
    BEKC_XLA_DTYPE_F8E4M3 = 28,
    BEKC_XLA_DTYPE_F8E3M4 = 29,
    BEKC_XLA_DTYPE_S1 = 30,
    BEKC_XLA_DTYPE_U1 = 31,
    BEKC_XLA_DTYPE_F4E2M1FN = 32,
    BEKC_XLA_DTYPE_F8E8M0FNU = 33
} BekcXla_DataType;

/* Kinds of entries in Args.types, Rets.types and Attrs.types. */
typedef enum BekcXla_ArgType { BEKC_XLA_ARG_BUFFER = 1 } BekcXla_ArgType;
typedef enum BekcXla_RetType { BEKC_XLA_RET_BUFFER = 1 } BekcXla_RetType;
typedef enum BekcXla_AttrType {
    BEKC_XLA_ATTR_ARRAY = 1,
    BEKC_XLA_ATTR_DICTIONARY = 2,
    BEKC_XLA_ATTR_SCALAR = 3,
    BEKC_XLA_ATTR_STRING = 4
} BekcXla_AttrType;

/* CallFrame.stage. A handler registered alone is the EXECUTE handler. */
typedef enum BekcXla_ExecutionStage {
    BEKC_XLA_STAGE_INSTANTIATE = 0,
    BEKC_XLA_STAGE_PREPARE = 1,
    BEKC_XLA_STAGE_INITIALIZE = 2,
    BEKC_XLA_STAGE_EXECUTE = 3,
    BEKC_XLA_STAGE_RECORD = 4 /* API 0.4+ */
} BekcXla_ExecutionStage;

/* InternalExtension.type. */
typedef enum BekcXla_ExtensionType { BEKC_XLA_EXTENSION_METADATA = 1 } BekcXla_ExtensionType;

/* Bits of Metadata.traits. */
typedef enum BekcXla_HandlerTraitsBits {
    /* Every call launches the same device work (given the attributes), so XLA
     * may capture it into a command buffer (CUDA graph) and replay it. */
    BEKC_XLA_TRAIT_COMMAND_BUFFER_COMPATIBLE = 1u << 0
} BekcXla_HandlerTraitsBits;

/* ---- Opaque types, owned by XLA ---- */

typedef struct BekcXla_Error BekcXla_Error;
typedef struct BekcXla_InvokeContext BekcXla_InvokeContext;
typedef struct BekcXla_Future BekcXla_Future;
typedef struct BekcXla_InternalApi BekcXla_InternalApi;
typedef struct BekcXla_Api BekcXla_Api;

/* ---- Structs ---- */

/* Head of XLA's internal extension chain (XLA_FFI_Extension_Base before 0.4). */
typedef struct BekcXla_InternalExtension {
    size_t struct_size;
    int32_t type; /* BekcXla_ExtensionType */
    struct BekcXla_InternalExtension* next;
} BekcXla_InternalExtension;

typedef struct BekcXla_ApiVersion {
    size_t struct_size;
    BekcXla_InternalExtension* extension_start;
    int32_t major_version;
    int32_t minor_version;
} BekcXla_ApiVersion;

/* A string that need not be NUL-terminated. No struct_size. */
typedef struct BekcXla_ByteSpan {
    const char* ptr;
    size_t len;
} BekcXla_ByteSpan;

/* A scalar attribute; `value` points to the raw value of type `dtype`. No struct_size. */
typedef struct BekcXla_Scalar {
    int32_t dtype; /* BekcXla_DataType */
    void* value;
} BekcXla_Scalar;

/* A dense, row-major device (or host, for CPU) buffer; dims in elements. */
typedef struct BekcXla_Buffer {
    size_t struct_size;
    BekcXla_InternalExtension* extension_start;
    int32_t dtype; /* BekcXla_DataType */
    void* data;
    int64_t rank;
    int64_t* dims;
} BekcXla_Buffer;

typedef struct BekcXla_Args {
    size_t struct_size;
    BekcXla_InternalExtension* extension_start;
    int64_t size;
    int32_t* types; /* BekcXla_ArgType, one per arg */
    void** args;    /* BekcXla_Buffer* for BEKC_XLA_ARG_BUFFER */
} BekcXla_Args;

typedef struct BekcXla_Rets {
    size_t struct_size;
    BekcXla_InternalExtension* extension_start;
    int64_t size;
    int32_t* types; /* BekcXla_RetType, one per result */
    void** rets;    /* BekcXla_Buffer* for BEKC_XLA_RET_BUFFER */
} BekcXla_Rets;

/* Attributes, sorted by name. */
typedef struct BekcXla_Attrs {
    size_t struct_size;
    BekcXla_InternalExtension* extension_start;
    int64_t size;
    int32_t* types;            /* BekcXla_AttrType */
    BekcXla_ByteSpan** names;
    void** attrs;              /* BekcXla_Scalar* for BEKC_XLA_ATTR_SCALAR */
} BekcXla_Attrs;

typedef struct BekcXla_CallFrame {
    size_t struct_size;
    BekcXla_InternalExtension* extension_start; /* metadata query when non-null */
    const BekcXla_Api* api;
    BekcXla_InvokeContext* ctx;
    int32_t stage; /* BekcXla_ExecutionStage */
    BekcXla_Args args;
    BekcXla_Rets rets;
    BekcXla_Attrs attrs;
    BekcXla_Future* future; /* out; not counted in struct_size */
} BekcXla_CallFrame;

/* What a handler reports when queried at registration. */
typedef struct BekcXla_Metadata {
    size_t struct_size;
    BekcXla_ApiVersion api_version;
    uint32_t traits;       /* BekcXla_HandlerTraitsBits */
    int64_t state_type_id; /* jaxlib 0.8.0+; not counted in struct_size: never write it */
} BekcXla_Metadata;

typedef struct BekcXla_MetadataExtension {
    BekcXla_InternalExtension extension_base; /* type == BEKC_XLA_EXTENSION_METADATA */
    BekcXla_Metadata* metadata;
} BekcXla_MetadataExtension;

typedef struct BekcXla_ErrorCreateArgs {
    size_t struct_size;
    BekcXla_InternalExtension* extension_start;
    const char* message; /* copied by XLA */
    int32_t errc;        /* BekcXla_ErrorCode */
} BekcXla_ErrorCreateArgs;

typedef struct BekcXla_StreamGetArgs {
    size_t struct_size;
    BekcXla_InternalExtension* extension_start;
    BekcXla_InvokeContext* ctx;
    void* stream; /* out: the cudaStream_t on CUDA */
} BekcXla_StreamGetArgs;

typedef BekcXla_Error* BekcXla_ErrorCreateFn(BekcXla_ErrorCreateArgs* args);
typedef BekcXla_Error* BekcXla_StreamGetFn(BekcXla_StreamGetArgs* args);
/* Entries bekc never calls keep their slot with a placeholder type: every
 * function pointer has the same size and alignment. */
typedef void BekcXla_UnusedFn(void);

/* A handler: returns NULL on success, or an error made with api->error_create. */
typedef BekcXla_Error* BekcXla_Handler(BekcXla_CallFrame* call_frame);

struct BekcXla_Api {
    size_t struct_size;
    BekcXla_InternalExtension* extension_start;
    BekcXla_ApiVersion api_version;
    const BekcXla_InternalApi* internal_api;

    BekcXla_ErrorCreateFn* error_create;
    BekcXla_UnusedFn* error_get_details; /* Error_GetMessage before 0.4 */
    BekcXla_UnusedFn* error_destroy;
    BekcXla_UnusedFn* handler_register;
    BekcXla_StreamGetFn* stream_get;
    BekcXla_UnusedFn* type_register; /* TypeId_Register before 0.2 */
    BekcXla_UnusedFn* invoke_context_get; /* ExecutionContext_Get before 0.4 */
    BekcXla_UnusedFn* state_set;
    BekcXla_UnusedFn* state_get;
    BekcXla_UnusedFn* device_memory_allocate;
    BekcXla_UnusedFn* device_memory_free;
    BekcXla_UnusedFn* thread_pool_schedule;
    BekcXla_UnusedFn* thread_pool_num_threads; /* jaxlib 0.4.38+ */
    BekcXla_UnusedFn* future_create;           /* jaxlib 0.4.34+ */
    BekcXla_UnusedFn* future_set_available;
    BekcXla_UnusedFn* future_set_error;
    BekcXla_UnusedFn* run_id_get;              /* jaxlib 0.6.0+ */
    BekcXla_UnusedFn* device_ordinal_get;            /* jaxlib 0.6.0+ */
    BekcXla_UnusedFn* invoke_context_find_extension; /* API 0.4+ */
};

/* ---- struct_size values, as XLA computes them ---- */

#define BEKC_XLA_INTERNAL_EXTENSION_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_InternalExtension, next)
#define BEKC_XLA_API_VERSION_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_ApiVersion, minor_version)
#define BEKC_XLA_BUFFER_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_Buffer, dims)
#define BEKC_XLA_ARGS_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_Args, args)
#define BEKC_XLA_RETS_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_Rets, rets)
#define BEKC_XLA_ATTRS_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_Attrs, attrs)
#define BEKC_XLA_CALL_FRAME_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_CallFrame, attrs)
#define BEKC_XLA_METADATA_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_Metadata, traits)
#define BEKC_XLA_METADATA_EXTENSION_STRUCT_SIZE \
    BEKC_XLA_STRUCT_SIZE(BekcXla_MetadataExtension, metadata)
#define BEKC_XLA_ERROR_CREATE_ARGS_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_ErrorCreateArgs, errc)
#define BEKC_XLA_STREAM_GET_ARGS_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_StreamGetArgs, stream)
/* The Api as API 0.4 counts it, and the smallest Api any XLA since 0.1 hands
 * out (jaxlib 0.4.33-0.5.x stop counting at Stream_Get): check against the
 * latter, since a handler only calls Error_Create and Stream_Get. */
#define BEKC_XLA_API_STRUCT_SIZE BEKC_XLA_STRUCT_SIZE(BekcXla_Api, invoke_context_find_extension)
#define BEKC_XLA_API_STRUCT_SIZE_THROUGH_STREAM_GET BEKC_XLA_STRUCT_SIZE(BekcXla_Api, stream_get)

/* XLA's ABI is defined for LP64 targets; fail the build anywhere else rather
 * than misread a call frame. The numbers are checked against XLA's own header
 * by tests/abi/layout_test.cpp. */
#ifdef __cplusplus
#define BEKC_XLA_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define BEKC_XLA_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
BEKC_XLA_STATIC_ASSERT(sizeof(void*) == 8 && sizeof(size_t) == 8,
                       "the XLA FFI ABI binding assumes a 64-bit target");
BEKC_XLA_STATIC_ASSERT(sizeof(BekcXla_CallFrame) == 176 && BEKC_XLA_CALL_FRAME_STRUCT_SIZE == 168,
                       "unexpected BekcXla_CallFrame layout");
BEKC_XLA_STATIC_ASSERT(BEKC_XLA_METADATA_STRUCT_SIZE == 36, "unexpected BekcXla_Metadata layout");
BEKC_XLA_STATIC_ASSERT(sizeof(BekcXla_Buffer) == 48, "unexpected BekcXla_Buffer layout");

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BEKC_XLA_FFI_ABI_H_ */
