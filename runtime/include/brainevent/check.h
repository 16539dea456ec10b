// Runtime checks for kernel code: BE_CHECK, BE_CUDA_CHECK, BE_CHECK_KERNEL_LAUNCH.
//
//   BE_CHECK(n > 0) << "n must be positive, got " << n;
//   BE_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream)) << "clearing the output";
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   BE_CHECK_KERNEL_LAUNCH();
//
// On the host a failed check throws: BE_CHECK a BE::CheckError, BE_CUDA_CHECK
// and BE_CHECK_KERNEL_LAUNCH a BE::CudaError (brainevent's names), both derived
// from BE::Error, which also gives the file and line apart. The generated XLA
// FFI handler catches it and returns an XLA error, so the Python caller gets an
// exception and the process lives. In device code there is no exception to
// throw: the check prints the same text with the failing block and thread, and
// traps, which aborts the kernel and makes the next CUDA call on the host fail.
//
// BE_CUDA_CHECK and BE_CHECK_KERNEL_LAUNCH(_SYNC) are defined only when the CUDA
// runtime API is visible (see BE_HAS_CUDA_RUNTIME in config.h): always in .cu
// files, and in .cpp files that include <cuda_runtime.h> before brainevent/common.h.
#pragma once

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "brainevent/config.h"
#include "brainevent/dtype.h"

#if BE_CUDA_COMPILER
#include <cuda_runtime.h>
#endif

#if BE_CUDA_COMPILER
#include "brainevent/device_check.h"
#endif

namespace BE {

// What every host-side check throws. what() is "file:line: message"; message()
// is the same text without the location.
class Error : public std::runtime_error {
  public:
    Error(const char* file, int line, const std::string& message)
        : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + message),
          file_(file),
          line_(line),
          message_(message) {}

    // An error without a location, as brainevent's CheckError and CudaError
    // are built: what() and message() are both `message`, file() is "".
    explicit Error(const std::string& message)
        : std::runtime_error(message), file_(""), line_(0), message_(message) {}

    const char* file() const noexcept { return file_; }
    int line() const noexcept { return line_; }
    const std::string& message() const noexcept { return message_; }

  private:
    const char* file_;  // always __FILE__, a string literal
    int line_;
    std::string message_;
};

// What BE_CHECK (and a dispatch on an unsupported dtype) throws on the host.
class CheckError : public Error {
  public:
    using Error::Error;
};

// What BE_CUDA_CHECK and BE_CHECK_KERNEL_LAUNCH(_SYNC) throw on the host.
class CudaError : public Error {
  public:
    using Error::Error;
};

namespace detail {

template <class T>
inline constexpr bool kUnsupportedStreamType = false;

// Appends one streamed value to a check message. Only the kinds a kernel
// message needs are supported (text, numbers, pointers, dtypes): <sstream>
// would cost every .cu file that includes this header thousands of lines in
// each of nvcc's passes.
template <class T>
void append_value(std::string& out, const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
        out += value ? "true" : "false";
    } else if constexpr (std::is_same_v<T, char>) {
        out += value;
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        out += std::to_string(static_cast<long long>(value));
    } else if constexpr (std::is_integral_v<T>) {
        out += std::to_string(static_cast<unsigned long long>(value));
    } else if constexpr (std::is_same_v<T, DType>) {
        out += dtype_name(value);
    } else if constexpr (std::is_enum_v<T>) {
        out += std::to_string(static_cast<long long>(value));
    } else if constexpr (std::is_floating_point_v<T>) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(value));
        out += buf;
    } else if constexpr (std::is_convertible_v<const T&, const char*>) {
        const char* s = value;
        out += s != nullptr ? s : "(null)";
    } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
        out += std::string_view(value);
    } else if constexpr (std::is_pointer_v<T>) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%p", static_cast<const volatile void*>(value));
        out += buf;
    } else {
        static_assert(kUnsupportedStreamType<T>,
                      "BE_CHECK messages take text, numbers, pointers and BE::DType; "
                      "convert other values to a string first");
    }
}

// Which exception a failed host check throws.
enum class ErrorKind : unsigned char { Check, Cuda };

// Collects the text streamed after a failed host check. Built only on the
// failure path, so passing checks cost one branch.
class ErrorBuilder {
  public:
    ErrorBuilder(const char* file, int line, std::string summary, ErrorKind kind = ErrorKind::Check)
        : file_(file), line_(line), text_(std::move(summary)), kind_(kind) {}

    template <class T>
    ErrorBuilder& operator<<(const T& value) {
        if (!has_user_text_) {
            has_user_text_ = true;
            text_ += ": ";
        }
        append_value(text_, value);
        return *this;
    }

    [[noreturn]] void raise() const {
        if (kind_ == ErrorKind::Cuda) throw CudaError(file_, line_, text_);
        throw CheckError(file_, line_, text_);
    }

  private:
    const char* file_;
    int line_;
    std::string text_;  // "BE_CHECK(n > 0) failed: <streamed text>"
    ErrorKind kind_;
    bool has_user_text_ = false;
};

// `Raise{} & builder << a << b` streams first (<< binds tighter than &), then
// throws. Keeping the throw in an operator makes BE_CHECK one expression, so it
// composes with if/else without braces.
struct Raise {
    [[noreturn]] void operator&(const ErrorBuilder& builder) const { builder.raise(); }
};

}  // namespace detail

// brainevent's BE_CHECK is spelled `cond ? (void)0 : Voidify() & Stream(...) << ...`,
// and these two are public names there, so code may use them directly. bekc's
// BE_CHECK does not use them (it also works in device code); they are host-only,
// like brainevent's.
namespace internal {

// The message of a failed check. The throw waits for the destructor, at the
// end of the full expression, so everything streamed into the temporary is in
// the message. Constructed from nullptr it is inert: streaming and destruction
// do nothing.
class CheckFailMessageStream {
  public:
    CheckFailMessageStream(const char* file, int line, const char* cond)
        : file_(file),
          line_(line),
          text_(std::string("BE_CHECK(") + (cond != nullptr ? cond : "") + ") failed"),
          active_(true),
          unwinding_(std::uncaught_exceptions()) {}
    explicit CheckFailMessageStream(std::nullptr_t) {}

    // Copying would throw twice; a move leaves the source inert.
    CheckFailMessageStream(const CheckFailMessageStream&) = delete;
    CheckFailMessageStream& operator=(const CheckFailMessageStream&) = delete;
    CheckFailMessageStream(CheckFailMessageStream&& other) noexcept
        : file_(other.file_),
          line_(other.line_),
          text_(std::move(other.text_)),
          active_(other.active_),
          has_user_text_(other.has_user_text_),
          unwinding_(other.unwinding_) {
        other.active_ = false;
    }

    // Throws BE::CheckError, unless an exception from a streamed operand is
    // already on its way out (a second one would terminate the process).
    ~CheckFailMessageStream() noexcept(false) {
        if (active_ && std::uncaught_exceptions() == unwinding_)
            throw CheckError(file_, line_, text_);
    }

    // Takes what BE_CHECK takes (text, numbers, pointers, BE::DType).
    template <class T>
    CheckFailMessageStream& operator<<(const T& value) {
        if (!active_) return *this;
        if (!has_user_text_) {
            has_user_text_ = true;
            text_ += ": ";
        }
        detail::append_value(text_, value);
        return *this;
    }

  private:
    const char* file_ = nullptr;
    int line_ = 0;
    std::string text_;
    bool active_ = false;
    bool has_user_text_ = false;
    int unwinding_ = 0;
};

// Turns `Voidify() & stream << ...` into a void expression, so that it can be
// the second branch of a conditional whose first branch is `(void)0`.
struct Voidify {
    void operator&(const CheckFailMessageStream&) const noexcept {}
};

}  // namespace internal
}  // namespace BE

#define BE_LIKELY(x) __builtin_expect(static_cast<bool>(x), 1)
#define BE_UNLIKELY(x) __builtin_expect(static_cast<bool>(x), 0)

#if BE_DEVICE_CODE
#define BE_DETAIL_FAIL_(summary) \
    ::BE::detail::DeviceRaise{} & ::BE::detail::DeviceErrorBuilder(__FILE__, __LINE__, summary)
#else
#define BE_DETAIL_FAIL_(summary) \
    ::BE::detail::Raise{} & ::BE::detail::ErrorBuilder(__FILE__, __LINE__, summary)
#endif

// Fails unless the condition holds; anything streamed after it is appended to
// the message. Variadic so that commas in the condition (template arguments)
// need no extra parentheses.
#define BE_CHECK(...)                               \
    BE_LIKELY((__VA_ARGS__)) ? static_cast<void>(0) \
                             : BE_DETAIL_FAIL_("BE_CHECK(" #__VA_ARGS__ ") failed")

#if BE_HAS_CUDA_RUNTIME

namespace BE::detail {

inline std::string cuda_failure(const char* summary, cudaError_t status) {
    return std::string(summary) + " with " + cudaGetErrorName(status) + ": " +
           cudaGetErrorString(status);
}

}  // namespace BE::detail

#if BE_DEVICE_CODE
#define BE_DETAIL_CUDA_FAIL_(status, summary) \
    ::BE::detail::DeviceRaise{} &             \
        ::BE::detail::DeviceErrorBuilder(__FILE__, __LINE__, summary, status)
#else
#define BE_DETAIL_CUDA_FAIL_(status, summary)                                                    \
    ::BE::detail::Raise{} & ::BE::detail::ErrorBuilder(                                          \
                                __FILE__, __LINE__, ::BE::detail::cuda_failure(summary, status), \
                                ::BE::detail::ErrorKind::Cuda)
#endif

// A `for` that runs its body at most once (the body never returns) gives the
// status a name without leaking it, and keeps the macro a single statement
// that still accepts `<< "message"`.
#define BE_DETAIL_CUDA_CHECK_(call, summary)                                                     \
    for (::cudaError_t be_cuda_status_ = (call); BE_UNLIKELY(be_cuda_status_ != ::cudaSuccess);) \
    BE_DETAIL_CUDA_FAIL_(be_cuda_status_, summary)

// Fails unless the CUDA runtime call returns cudaSuccess.
#define BE_CUDA_CHECK(...) \
    BE_DETAIL_CUDA_CHECK_((__VA_ARGS__), "BE_CUDA_CHECK(" #__VA_ARGS__ ") failed")

// Fails if the preceding kernel launch (or any earlier asynchronous call) left
// an error; use right after `kernel<<<...>>>(...)`.
#define BE_CHECK_KERNEL_LAUNCH() BE_DETAIL_CUDA_CHECK_(::cudaGetLastError(), "kernel launch failed")

// BE_CHECK_KERNEL_LAUNCH(), then waits for the device: a fault while the kernel
// runs (an illegal address, a trapped device-side BE_CHECK) fails here instead
// of at whichever CUDA call comes next. For debugging; it stalls the stream.
#define BE_CHECK_KERNEL_LAUNCH_SYNC()                                                \
    do {                                                                             \
        BE_CHECK_KERNEL_LAUNCH();                                                    \
        BE_DETAIL_CUDA_CHECK_(::cudaDeviceSynchronize(), "kernel execution failed"); \
    } while (0)

#endif  // BE_HAS_CUDA_RUNTIME
