// What a library's XLA FFI entry points need, and nothing more: bekc
// generates them into their own translation unit (bekc_handlers.cpp), which
// includes no user header and no brainevent/ header, so that the host
// compiler builds them beside nvcc instead of after it (docs/ARCHITECTURE.md,
// "Two translation units").
//
// Each exported function has two entry points, `bekc_ffi_<name>` and
// `bekc_ffi_<name>_nograph`, that differ only in the command-buffer trait.
// Both pass their FunctionInfo (what XLA must send) and their Export (how to
// call the user's function, defined in the user's translation unit) to
// bekc_rt::handle, in bekc_rt.o, which checks the call frame and calls.
#pragma once

#include <cstdint>

#include "bekc/xla_ffi_abi.h"

#define BEKC_EXPORT __attribute__((visibility("default")))
// The tables the entry points read are the library's own: no GOT load.
#define BEKC_HIDDEN __attribute__((visibility("hidden")))

namespace bekc_rt {

// One expected scalar attribute; arrays of these are sorted by name, as XLA
// sorts the attributes it passes.
struct AttrSpec {
    const char* name;
    int32_t dtype;     // BekcXla_DataType the scalar arrives as
    const char* type;  // the spec's type name ("float16" arrives as uint16 bits)
};

struct FunctionInfo {
    const char* target;
    int64_t num_args;
    int64_t num_rets;
    int64_t num_attrs;
    const AttrSpec* attrs;
    bool needs_stream;
};

// Where one parameter of the user's function comes from: the index-th
// argument buffer, result buffer or attribute (in name order), or the stream.
enum SlotKind : uint8_t { kSlotArg, kSlotRet, kSlotStream, kSlotAttr };
struct Slot {
    uint8_t kind;
    uint16_t index;
};

class Frame;

// How to call one exported function: `invoke` (one instantiation per C++
// signature, in the user's translation unit) reads the parameters `slots`
// name from the frame and calls the function `*function` points to.
struct Export {
    void (*invoke)(const Frame& frame, const Export& entry);
    const void* function;  // the address of a `void (*const)(...)` holding the user's function
    const Slot* slots;
};

// The whole handler: metadata query, checks, stream, call, exceptions.
BekcXla_Error* handle(BekcXla_CallFrame* f, const FunctionInfo& info, const Export& entry,
                      bool command_buffer);

}  // namespace bekc_rt
