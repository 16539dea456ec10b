// Proves bekc's XLA FFI binding (runtime/include/bekc/xla_ffi_abi.h) against
// the XLA header of an installed jaxlib: both headers in one translation unit
// (so no name clashes), then every struct size, struct_size constant, field
// offset and size, and enum value bekc defines, compared with XLA's.
//
// Built by CMake when BEKC_XLA_INCLUDE_DIR is set, or standalone with
// tests/abi/run_layout_test.sh INCLUDE_DIR. Works against any XLA FFI API
// 0.1+ header: fields an older XLA does not have yet are reported as absent
// (a failure only once that XLA version must have them), fields XLA renamed
// are matched under either name.
#include "bekc/xla_ffi_abi.h"
#include "xla/ffi/api/c_api.h"

#include <cstddef>
#include <cstdio>
#include <type_traits>
#include <utility>

#if XLA_FFI_API_MAJOR != 0 || XLA_FFI_API_MINOR < 1
#error "the layout test supports XLA FFI API 0.1 and later (jaxlib 0.4.33+)"
#endif

// XLA renamed its extension header in 0.4 without changing its layout.
#if XLA_FFI_API_MINOR >= 4
using XlaInternalExtension = XLA_FFI_InternalExtension;
#else
using XlaInternalExtension = XLA_FFI_Extension_Base;
#endif

namespace {

int g_failures = 0;
int g_checks = 0;

void report(bool ok, const char* what, size_t xla, size_t bekc) {
    ++g_checks;
    if (!ok) ++g_failures;
    std::printf("%-8s %-58s xla=%-4zu bekc=%zu\n", ok ? "ok" : "MISMATCH", what, xla, bekc);
}

void check_eq(const char* what, size_t xla, size_t bekc) {
    report(xla == bekc, what, xla, bekc);
}

void check_field(const char* what, size_t xla_offset, size_t xla_size, size_t bekc_offset,
                 size_t bekc_size) {
    report(xla_offset == bekc_offset, what, xla_offset, bekc_offset);
    if (xla_size != bekc_size) report(false, "  (field size)", xla_size, bekc_size);
}

// A member XLA may not have in every version: checked where present; absent is
// a failure only from `required_minor` on.
void check_optional(bool present, int required_minor, const char* what, size_t xla_offset,
                    size_t xla_size, size_t bekc_offset, size_t bekc_size) {
    if (present) return check_field(what, xla_offset, xla_size, bekc_offset, bekc_size);
    bool ok = XLA_FFI_API_MINOR < required_minor;
    ++g_checks;
    if (!ok) ++g_failures;
    std::printf("%-8s %-58s (not in this XLA)\n", ok ? "absent" : "MISSING", what);
}

}  // namespace

// Detects a member by name, so the test compiles against headers that lack it.
#define BEKC_PROBE(probe, member)                                         \
    template <class T, class = void>                                      \
    struct probe {                                                        \
        static constexpr bool present = false;                            \
        static constexpr size_t offset = 0, size = 0;                     \
    };                                                                    \
    template <class T>                                                    \
    struct probe<T, std::void_t<decltype(&T::member)>> {                  \
        static constexpr bool present = true;                             \
        static constexpr size_t offset = offsetof(T, member);             \
        static constexpr size_t size = sizeof(std::declval<T&>().member); \
    };

BEKC_PROBE(HasFuture, future)
BEKC_PROBE(HasStateTypeId, state_type_id)
BEKC_PROBE(HasExtensionBase, extension_base)
BEKC_PROBE(HasErrorGetDetails, XLA_FFI_Error_GetDetails)
BEKC_PROBE(HasErrorGetMessage, XLA_FFI_Error_GetMessage)
BEKC_PROBE(HasTypeRegister, XLA_FFI_Type_Register)
BEKC_PROBE(HasTypeIdRegister, XLA_FFI_TypeId_Register)
BEKC_PROBE(HasInvokeContextGet, XLA_FFI_InvokeContext_Get)
BEKC_PROBE(HasExecutionContextGet, XLA_FFI_ExecutionContext_Get)
BEKC_PROBE(HasThreadPoolNumThreads, XLA_FFI_ThreadPool_NumThreads)
BEKC_PROBE(HasFutureCreate, XLA_FFI_Future_Create)
BEKC_PROBE(HasFutureSetAvailable, XLA_FFI_Future_SetAvailable)
BEKC_PROBE(HasFutureSetError, XLA_FFI_Future_SetError)
BEKC_PROBE(HasRunIdGet, XLA_FFI_RunId_Get)
BEKC_PROBE(HasDeviceOrdinalGet, XLA_FFI_DeviceOrdinal_Get)
BEKC_PROBE(HasFindExtension, XLA_FFI_InvokeContext_FindExtension)

#define SIZEOF(xla_type, bekc_type) \
    check_eq("sizeof(" #xla_type ")", sizeof(xla_type), sizeof(bekc_type))
#define VALUE(xla_value, bekc_value) \
    check_eq(#xla_value, static_cast<size_t>(xla_value), static_cast<size_t>(bekc_value))
#define FIELD(xla_type, xla_field, bekc_type, bekc_field)                                     \
    check_field(#xla_type "." #xla_field, offsetof(xla_type, xla_field),                      \
                sizeof(std::declval<xla_type&>().xla_field), offsetof(bekc_type, bekc_field), \
                sizeof(std::declval<bekc_type&>().bekc_field))
#define OPTIONAL(probe, required_minor, xla_type, name, bekc_type, bekc_field)   \
    check_optional(probe<xla_type>::present, required_minor, #xla_type "." name, \
                   probe<xla_type>::offset, probe<xla_type>::size,               \
                   offsetof(bekc_type, bekc_field), sizeof(std::declval<bekc_type&>().bekc_field))
// A field XLA renamed: whichever name this header has.
#define RENAMED(new_probe, old_probe, xla_type, name, bekc_type, bekc_field)                      \
    (new_probe<xla_type>::present ? OPTIONAL(new_probe, 0, xla_type, name, bekc_type, bekc_field) \
                                  : OPTIONAL(old_probe, 0, xla_type, name, bekc_type, bekc_field))

static void check_structs() {
    SIZEOF(XlaInternalExtension, BekcXla_InternalExtension);
    check_eq("InternalExtension STRUCT_SIZE", XLA_FFI_STRUCT_SIZE(XlaInternalExtension, next),
             BEKC_XLA_INTERNAL_EXTENSION_STRUCT_SIZE);
    FIELD(XlaInternalExtension, struct_size, BekcXla_InternalExtension, struct_size);
    FIELD(XlaInternalExtension, type, BekcXla_InternalExtension, type);
    FIELD(XlaInternalExtension, next, BekcXla_InternalExtension, next);

    SIZEOF(XLA_FFI_Api_Version, BekcXla_ApiVersion);
    check_eq("XLA_FFI_Api_Version_STRUCT_SIZE", XLA_FFI_Api_Version_STRUCT_SIZE,
             BEKC_XLA_API_VERSION_STRUCT_SIZE);
    FIELD(XLA_FFI_Api_Version, struct_size, BekcXla_ApiVersion, struct_size);
    FIELD(XLA_FFI_Api_Version, extension_start, BekcXla_ApiVersion, extension_start);
    FIELD(XLA_FFI_Api_Version, major_version, BekcXla_ApiVersion, major_version);
    FIELD(XLA_FFI_Api_Version, minor_version, BekcXla_ApiVersion, minor_version);

    SIZEOF(XLA_FFI_ByteSpan, BekcXla_ByteSpan);
    FIELD(XLA_FFI_ByteSpan, ptr, BekcXla_ByteSpan, ptr);
    FIELD(XLA_FFI_ByteSpan, len, BekcXla_ByteSpan, len);

    SIZEOF(XLA_FFI_Scalar, BekcXla_Scalar);
    FIELD(XLA_FFI_Scalar, dtype, BekcXla_Scalar, dtype);
    FIELD(XLA_FFI_Scalar, value, BekcXla_Scalar, value);

    SIZEOF(XLA_FFI_Buffer, BekcXla_Buffer);
    check_eq("XLA_FFI_Buffer_STRUCT_SIZE", XLA_FFI_Buffer_STRUCT_SIZE, BEKC_XLA_BUFFER_STRUCT_SIZE);
    FIELD(XLA_FFI_Buffer, struct_size, BekcXla_Buffer, struct_size);
    FIELD(XLA_FFI_Buffer, extension_start, BekcXla_Buffer, extension_start);
    FIELD(XLA_FFI_Buffer, dtype, BekcXla_Buffer, dtype);
    FIELD(XLA_FFI_Buffer, data, BekcXla_Buffer, data);
    FIELD(XLA_FFI_Buffer, rank, BekcXla_Buffer, rank);
    FIELD(XLA_FFI_Buffer, dims, BekcXla_Buffer, dims);

    SIZEOF(XLA_FFI_Args, BekcXla_Args);
    check_eq("XLA_FFI_Args_STRUCT_SIZE", XLA_FFI_Args_STRUCT_SIZE, BEKC_XLA_ARGS_STRUCT_SIZE);
    FIELD(XLA_FFI_Args, struct_size, BekcXla_Args, struct_size);
    FIELD(XLA_FFI_Args, extension_start, BekcXla_Args, extension_start);
    FIELD(XLA_FFI_Args, size, BekcXla_Args, size);
    FIELD(XLA_FFI_Args, types, BekcXla_Args, types);
    FIELD(XLA_FFI_Args, args, BekcXla_Args, args);

    SIZEOF(XLA_FFI_Rets, BekcXla_Rets);
    check_eq("XLA_FFI_Rets_STRUCT_SIZE", XLA_FFI_Rets_STRUCT_SIZE, BEKC_XLA_RETS_STRUCT_SIZE);
    FIELD(XLA_FFI_Rets, struct_size, BekcXla_Rets, struct_size);
    FIELD(XLA_FFI_Rets, extension_start, BekcXla_Rets, extension_start);
    FIELD(XLA_FFI_Rets, size, BekcXla_Rets, size);
    FIELD(XLA_FFI_Rets, types, BekcXla_Rets, types);
    FIELD(XLA_FFI_Rets, rets, BekcXla_Rets, rets);

    SIZEOF(XLA_FFI_Attrs, BekcXla_Attrs);
    check_eq("XLA_FFI_Attrs_STRUCT_SIZE", XLA_FFI_Attrs_STRUCT_SIZE, BEKC_XLA_ATTRS_STRUCT_SIZE);
    FIELD(XLA_FFI_Attrs, struct_size, BekcXla_Attrs, struct_size);
    FIELD(XLA_FFI_Attrs, extension_start, BekcXla_Attrs, extension_start);
    FIELD(XLA_FFI_Attrs, size, BekcXla_Attrs, size);
    FIELD(XLA_FFI_Attrs, types, BekcXla_Attrs, types);
    FIELD(XLA_FFI_Attrs, names, BekcXla_Attrs, names);
    FIELD(XLA_FFI_Attrs, attrs, BekcXla_Attrs, attrs);

    check_eq("XLA_FFI_CallFrame_STRUCT_SIZE", XLA_FFI_CallFrame_STRUCT_SIZE,
             BEKC_XLA_CALL_FRAME_STRUCT_SIZE);
    FIELD(XLA_FFI_CallFrame, struct_size, BekcXla_CallFrame, struct_size);
    FIELD(XLA_FFI_CallFrame, extension_start, BekcXla_CallFrame, extension_start);
    FIELD(XLA_FFI_CallFrame, api, BekcXla_CallFrame, api);
    FIELD(XLA_FFI_CallFrame, ctx, BekcXla_CallFrame, ctx);
    FIELD(XLA_FFI_CallFrame, stage, BekcXla_CallFrame, stage);
    FIELD(XLA_FFI_CallFrame, args, BekcXla_CallFrame, args);
    FIELD(XLA_FFI_CallFrame, rets, BekcXla_CallFrame, rets);
    FIELD(XLA_FFI_CallFrame, attrs, BekcXla_CallFrame, attrs);
    OPTIONAL(HasFuture, 2, XLA_FFI_CallFrame, "future", BekcXla_CallFrame, future);
    if (HasFuture<XLA_FFI_CallFrame>::present) SIZEOF(XLA_FFI_CallFrame, BekcXla_CallFrame);

    check_eq("XLA_FFI_Metadata_STRUCT_SIZE", XLA_FFI_Metadata_STRUCT_SIZE,
             BEKC_XLA_METADATA_STRUCT_SIZE);
    FIELD(XLA_FFI_Metadata, struct_size, BekcXla_Metadata, struct_size);
    FIELD(XLA_FFI_Metadata, api_version, BekcXla_Metadata, api_version);
    FIELD(XLA_FFI_Metadata, traits, BekcXla_Metadata, traits);
    OPTIONAL(HasStateTypeId, 2, XLA_FFI_Metadata, "state_type_id", BekcXla_Metadata, state_type_id);
    if (HasStateTypeId<XLA_FFI_Metadata>::present) SIZEOF(XLA_FFI_Metadata, BekcXla_Metadata);

    SIZEOF(XLA_FFI_Metadata_Extension, BekcXla_MetadataExtension);
    check_eq("XLA_FFI_Metadata_Extension_STRUCT_SIZE", XLA_FFI_Metadata_Extension_STRUCT_SIZE,
             BEKC_XLA_METADATA_EXTENSION_STRUCT_SIZE);
    OPTIONAL(HasExtensionBase, 2, XLA_FFI_Metadata_Extension, "extension_base",
             BekcXla_MetadataExtension, extension_base);
    FIELD(XLA_FFI_Metadata_Extension, metadata, BekcXla_MetadataExtension, metadata);

    SIZEOF(XLA_FFI_Error_Create_Args, BekcXla_ErrorCreateArgs);
    check_eq("XLA_FFI_Error_Create_Args_STRUCT_SIZE", XLA_FFI_Error_Create_Args_STRUCT_SIZE,
             BEKC_XLA_ERROR_CREATE_ARGS_STRUCT_SIZE);
    FIELD(XLA_FFI_Error_Create_Args, struct_size, BekcXla_ErrorCreateArgs, struct_size);
    FIELD(XLA_FFI_Error_Create_Args, extension_start, BekcXla_ErrorCreateArgs, extension_start);
    FIELD(XLA_FFI_Error_Create_Args, message, BekcXla_ErrorCreateArgs, message);
    FIELD(XLA_FFI_Error_Create_Args, errc, BekcXla_ErrorCreateArgs, errc);

    SIZEOF(XLA_FFI_Stream_Get_Args, BekcXla_StreamGetArgs);
    check_eq("XLA_FFI_Stream_Get_Args_STRUCT_SIZE", XLA_FFI_Stream_Get_Args_STRUCT_SIZE,
             BEKC_XLA_STREAM_GET_ARGS_STRUCT_SIZE);
    FIELD(XLA_FFI_Stream_Get_Args, struct_size, BekcXla_StreamGetArgs, struct_size);
    FIELD(XLA_FFI_Stream_Get_Args, extension_start, BekcXla_StreamGetArgs, extension_start);
    FIELD(XLA_FFI_Stream_Get_Args, ctx, BekcXla_StreamGetArgs, ctx);
    FIELD(XLA_FFI_Stream_Get_Args, stream, BekcXla_StreamGetArgs, stream);
}

static void check_api() {
    FIELD(XLA_FFI_Api, struct_size, BekcXla_Api, struct_size);
    FIELD(XLA_FFI_Api, extension_start, BekcXla_Api, extension_start);
    FIELD(XLA_FFI_Api, api_version, BekcXla_Api, api_version);
    FIELD(XLA_FFI_Api, internal_api, BekcXla_Api, internal_api);
    FIELD(XLA_FFI_Api, XLA_FFI_Error_Create, BekcXla_Api, error_create);
    RENAMED(HasErrorGetDetails, HasErrorGetMessage, XLA_FFI_Api, "Error_GetDetails/GetMessage",
            BekcXla_Api, error_get_details);
    FIELD(XLA_FFI_Api, XLA_FFI_Error_Destroy, BekcXla_Api, error_destroy);
    FIELD(XLA_FFI_Api, XLA_FFI_Handler_Register, BekcXla_Api, handler_register);
    FIELD(XLA_FFI_Api, XLA_FFI_Stream_Get, BekcXla_Api, stream_get);
    RENAMED(HasTypeRegister, HasTypeIdRegister, XLA_FFI_Api, "Type_Register/TypeId_Register",
            BekcXla_Api, type_register);
    RENAMED(HasInvokeContextGet, HasExecutionContextGet, XLA_FFI_Api,
            "InvokeContext_Get/ExecutionContext_Get", BekcXla_Api, invoke_context_get);
    FIELD(XLA_FFI_Api, XLA_FFI_State_Set, BekcXla_Api, state_set);
    FIELD(XLA_FFI_Api, XLA_FFI_State_Get, BekcXla_Api, state_get);
    FIELD(XLA_FFI_Api, XLA_FFI_DeviceMemory_Allocate, BekcXla_Api, device_memory_allocate);
    FIELD(XLA_FFI_Api, XLA_FFI_DeviceMemory_Free, BekcXla_Api, device_memory_free);
    FIELD(XLA_FFI_Api, XLA_FFI_ThreadPool_Schedule, BekcXla_Api, thread_pool_schedule);
    OPTIONAL(HasThreadPoolNumThreads, 2, XLA_FFI_Api, "XLA_FFI_ThreadPool_NumThreads", BekcXla_Api,
             thread_pool_num_threads);
    OPTIONAL(HasFutureCreate, 2, XLA_FFI_Api, "XLA_FFI_Future_Create", BekcXla_Api, future_create);
    OPTIONAL(HasFutureSetAvailable, 2, XLA_FFI_Api, "XLA_FFI_Future_SetAvailable", BekcXla_Api,
             future_set_available);
    OPTIONAL(HasFutureSetError, 2, XLA_FFI_Api, "XLA_FFI_Future_SetError", BekcXla_Api,
             future_set_error);
    OPTIONAL(HasRunIdGet, 2, XLA_FFI_Api, "XLA_FFI_RunId_Get", BekcXla_Api, run_id_get);
    OPTIONAL(HasDeviceOrdinalGet, 2, XLA_FFI_Api, "XLA_FFI_DeviceOrdinal_Get", BekcXla_Api,
             device_ordinal_get);
    OPTIONAL(HasFindExtension, 4, XLA_FFI_Api, "XLA_FFI_InvokeContext_FindExtension", BekcXla_Api,
             invoke_context_find_extension);
#if XLA_FFI_API_MINOR == 4
    // Only the 0.4 header ends where bekc's table ends.
    SIZEOF(XLA_FFI_Api, BekcXla_Api);
    check_eq("XLA_FFI_Api_STRUCT_SIZE", XLA_FFI_Api_STRUCT_SIZE, BEKC_XLA_API_STRUCT_SIZE);
#endif
    check_eq("Api size through XLA_FFI_Stream_Get",
             XLA_FFI_STRUCT_SIZE(XLA_FFI_Api, XLA_FFI_Stream_Get),
             BEKC_XLA_API_STRUCT_SIZE_THROUGH_STREAM_GET);
}

static void check_enums() {
    VALUE(XLA_FFI_API_MAJOR, BEKC_XLA_API_MAJOR);
    VALUE(XLA_FFI_API_MAJOR, BEKC_XLA_HANDLER_API_MAJOR);
    report(BEKC_XLA_HANDLER_API_MINOR <= XLA_FFI_API_MINOR,
           "BEKC_XLA_HANDLER_API_MINOR <= XLA_FFI_API_MINOR", XLA_FFI_API_MINOR,
           BEKC_XLA_HANDLER_API_MINOR);

    VALUE(XLA_FFI_Error_Code_OK, BEKC_XLA_ERROR_OK);
    VALUE(XLA_FFI_Error_Code_CANCELLED, BEKC_XLA_ERROR_CANCELLED);
    VALUE(XLA_FFI_Error_Code_UNKNOWN, BEKC_XLA_ERROR_UNKNOWN);
    VALUE(XLA_FFI_Error_Code_INVALID_ARGUMENT, BEKC_XLA_ERROR_INVALID_ARGUMENT);
    VALUE(XLA_FFI_Error_Code_DEADLINE_EXCEEDED, BEKC_XLA_ERROR_DEADLINE_EXCEEDED);
    VALUE(XLA_FFI_Error_Code_NOT_FOUND, BEKC_XLA_ERROR_NOT_FOUND);
    VALUE(XLA_FFI_Error_Code_ALREADY_EXISTS, BEKC_XLA_ERROR_ALREADY_EXISTS);
    VALUE(XLA_FFI_Error_Code_PERMISSION_DENIED, BEKC_XLA_ERROR_PERMISSION_DENIED);
    VALUE(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, BEKC_XLA_ERROR_RESOURCE_EXHAUSTED);
    VALUE(XLA_FFI_Error_Code_FAILED_PRECONDITION, BEKC_XLA_ERROR_FAILED_PRECONDITION);
    VALUE(XLA_FFI_Error_Code_ABORTED, BEKC_XLA_ERROR_ABORTED);
    VALUE(XLA_FFI_Error_Code_OUT_OF_RANGE, BEKC_XLA_ERROR_OUT_OF_RANGE);
    VALUE(XLA_FFI_Error_Code_UNIMPLEMENTED, BEKC_XLA_ERROR_UNIMPLEMENTED);
    VALUE(XLA_FFI_Error_Code_INTERNAL, BEKC_XLA_ERROR_INTERNAL);
    VALUE(XLA_FFI_Error_Code_UNAVAILABLE, BEKC_XLA_ERROR_UNAVAILABLE);
    VALUE(XLA_FFI_Error_Code_DATA_LOSS, BEKC_XLA_ERROR_DATA_LOSS);
    VALUE(XLA_FFI_Error_Code_UNAUTHENTICATED, BEKC_XLA_ERROR_UNAUTHENTICATED);

    VALUE(XLA_FFI_DataType_INVALID, BEKC_XLA_DTYPE_INVALID);
    VALUE(XLA_FFI_DataType_PRED, BEKC_XLA_DTYPE_PRED);
    VALUE(XLA_FFI_DataType_S8, BEKC_XLA_DTYPE_S8);
    VALUE(XLA_FFI_DataType_S16, BEKC_XLA_DTYPE_S16);
    VALUE(XLA_FFI_DataType_S32, BEKC_XLA_DTYPE_S32);
    VALUE(XLA_FFI_DataType_S64, BEKC_XLA_DTYPE_S64);
    VALUE(XLA_FFI_DataType_U8, BEKC_XLA_DTYPE_U8);
    VALUE(XLA_FFI_DataType_U16, BEKC_XLA_DTYPE_U16);
    VALUE(XLA_FFI_DataType_U32, BEKC_XLA_DTYPE_U32);
    VALUE(XLA_FFI_DataType_U64, BEKC_XLA_DTYPE_U64);
    VALUE(XLA_FFI_DataType_F16, BEKC_XLA_DTYPE_F16);
    VALUE(XLA_FFI_DataType_F32, BEKC_XLA_DTYPE_F32);
    VALUE(XLA_FFI_DataType_F64, BEKC_XLA_DTYPE_F64);
    VALUE(XLA_FFI_DataType_C64, BEKC_XLA_DTYPE_C64);
    VALUE(XLA_FFI_DataType_BF16, BEKC_XLA_DTYPE_BF16);
    VALUE(XLA_FFI_DataType_TOKEN, BEKC_XLA_DTYPE_TOKEN);
    VALUE(XLA_FFI_DataType_C128, BEKC_XLA_DTYPE_C128);
    VALUE(XLA_FFI_DataType_F8E5M2, BEKC_XLA_DTYPE_F8E5M2);
    VALUE(XLA_FFI_DataType_F8E4M3FN, BEKC_XLA_DTYPE_F8E4M3FN);
    VALUE(XLA_FFI_DataType_F8E4M3B11FNUZ, BEKC_XLA_DTYPE_F8E4M3B11FNUZ);
    VALUE(XLA_FFI_DataType_F8E5M2FNUZ, BEKC_XLA_DTYPE_F8E5M2FNUZ);
    VALUE(XLA_FFI_DataType_F8E4M3FNUZ, BEKC_XLA_DTYPE_F8E4M3FNUZ);
#if XLA_FFI_API_MINOR >= 2  // added during 0.1 (jaxlib 0.5.0 and 0.6.0)
    VALUE(XLA_FFI_DataType_S1, BEKC_XLA_DTYPE_S1);
    VALUE(XLA_FFI_DataType_S2, BEKC_XLA_DTYPE_S2);
    VALUE(XLA_FFI_DataType_S4, BEKC_XLA_DTYPE_S4);
    VALUE(XLA_FFI_DataType_U1, BEKC_XLA_DTYPE_U1);
    VALUE(XLA_FFI_DataType_U2, BEKC_XLA_DTYPE_U2);
    VALUE(XLA_FFI_DataType_U4, BEKC_XLA_DTYPE_U4);
    VALUE(XLA_FFI_DataType_F8E4M3, BEKC_XLA_DTYPE_F8E4M3);
    VALUE(XLA_FFI_DataType_F8E3M4, BEKC_XLA_DTYPE_F8E3M4);
    VALUE(XLA_FFI_DataType_F4E2M1FN, BEKC_XLA_DTYPE_F4E2M1FN);
    VALUE(XLA_FFI_DataType_F8E8M0FNU, BEKC_XLA_DTYPE_F8E8M0FNU);
#endif

    VALUE(XLA_FFI_ArgType_BUFFER, BEKC_XLA_ARG_BUFFER);
    VALUE(XLA_FFI_RetType_BUFFER, BEKC_XLA_RET_BUFFER);
    VALUE(XLA_FFI_AttrType_ARRAY, BEKC_XLA_ATTR_ARRAY);
    VALUE(XLA_FFI_AttrType_DICTIONARY, BEKC_XLA_ATTR_DICTIONARY);
    VALUE(XLA_FFI_AttrType_SCALAR, BEKC_XLA_ATTR_SCALAR);
    VALUE(XLA_FFI_AttrType_STRING, BEKC_XLA_ATTR_STRING);

    VALUE(XLA_FFI_ExecutionStage_INSTANTIATE, BEKC_XLA_STAGE_INSTANTIATE);
    VALUE(XLA_FFI_ExecutionStage_PREPARE, BEKC_XLA_STAGE_PREPARE);
    VALUE(XLA_FFI_ExecutionStage_INITIALIZE, BEKC_XLA_STAGE_INITIALIZE);
    VALUE(XLA_FFI_ExecutionStage_EXECUTE, BEKC_XLA_STAGE_EXECUTE);
#if XLA_FFI_API_MINOR >= 4
    VALUE(XLA_FFI_ExecutionStage_RECORD, BEKC_XLA_STAGE_RECORD);
#endif

    VALUE(XLA_FFI_Extension_Metadata, BEKC_XLA_EXTENSION_METADATA);
    VALUE(XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE,
          BEKC_XLA_TRAIT_COMMAND_BUFFER_COMPATIBLE);

    // The C enums XLA uses for fields are 4 bytes wide, as bekc's int32_t fields.
    check_eq("sizeof(XLA_FFI_DataType)", sizeof(XLA_FFI_DataType), sizeof(int32_t));
    check_eq("sizeof(XLA_FFI_ExecutionStage)", sizeof(XLA_FFI_ExecutionStage), sizeof(int32_t));
    check_eq("sizeof(XLA_FFI_Error_Code)", sizeof(XLA_FFI_Error_Code), sizeof(int32_t));
    check_eq("sizeof(XLA_FFI_Handler_Traits)", sizeof(XLA_FFI_Handler_Traits), sizeof(uint32_t));
}

int main() {
    std::printf("XLA FFI API %d.%d header vs bekc binding %d.%d (handlers declare %d.%d)\n",
                XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR, BEKC_XLA_API_MAJOR, BEKC_XLA_API_MINOR,
                BEKC_XLA_HANDLER_API_MAJOR, BEKC_XLA_HANDLER_API_MINOR);
    check_structs();
    check_api();
    check_enums();
    std::printf("%d checks, %d failed\n", g_checks, g_failures);
    return g_failures == 0 ? 0 : 1;
}
