// The kernel-facing headers of runtime/include/brainevent, compiled as plain
// host C++ (as a .cpp kernel file would be).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include "brainevent/common.h"

using BE::DType;

namespace {

// Runs `f`, which must throw BE::Error, and returns the error.
template <class F>
BE::Error thrown_error(F&& f) {
    try {
        f();
    } catch (const BE::Error& e) {
        return e;
    }
    FAIL("no BE::Error thrown");
    throw;  // unreachable: FAIL throws
}

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

const std::vector<DType> kAllDTypes = {
    DType::Float16, DType::Float32,   DType::Float64,    DType::BFloat16,
    DType::Int8,    DType::Int16,     DType::Int32,      DType::Int64,
    DType::UInt8,   DType::UInt16,    DType::UInt32,     DType::UInt64,
    DType::Bool,    DType::Complex64, DType::Complex128, DType::Invalid,
};

}  // namespace

TEST_CASE("DType values, sizes and names follow the brainevent API", "[runtime_headers]") {
    struct Row {
        DType dtype;
        int value;
        size_t size;
        const char* name;
    };
    const Row rows[] = {
        {DType::Float16, 0, 2, "float16"},
        {DType::Float32, 1, 4, "float32"},
        {DType::Float64, 2, 8, "float64"},
        {DType::BFloat16, 3, 2, "bfloat16"},
        {DType::Int8, 4, 1, "int8"},
        {DType::Int16, 5, 2, "int16"},
        {DType::Int32, 6, 4, "int32"},
        {DType::Int64, 7, 8, "int64"},
        {DType::UInt8, 8, 1, "uint8"},
        {DType::UInt16, 9, 2, "uint16"},
        {DType::UInt32, 10, 4, "uint32"},
        {DType::UInt64, 11, 8, "uint64"},
        {DType::Bool, 12, 1, "bool"},
        {DType::Complex64, 13, 8, "complex64"},
        {DType::Complex128, 14, 16, "complex128"},
        {DType::Invalid, 255, 0, "invalid"},
    };
    for (const Row& row : rows) {
        CAPTURE(row.name);
        CHECK(static_cast<int>(row.dtype) == row.value);
        CHECK(BE::dtype_size(row.dtype) == row.size);
        CHECK(std::string(BE::dtype_name(row.dtype)) == row.name);
    }
    CHECK(std::is_same_v<std::underlying_type_t<DType>, uint8_t>);
    // A byte that is no enumerator (corrupt data) still has a name and no size.
    CHECK(BE::dtype_size(static_cast<DType>(99)) == 0);
    CHECK(std::string(BE::dtype_name(static_cast<DType>(99))) == "unknown");
    static_assert(BE::dtype_size(DType::Float64) == 8, "usable in constant expressions");
}

TEST_CASE("Tensor computes C-contiguous strides, numel and nbytes", "[runtime_headers]") {
    float storage[24] = {};
    const int64_t dims[3] = {2, 3, 4};
    const BE::Tensor t(storage, DType::Float32, 3, dims);

    CHECK(t.data_ptr() == storage);
    CHECK(t.data() == storage);
    CHECK(t.data_ptr<float>() == storage);
    CHECK(t.ndim() == 3);
    CHECK(t.dtype() == DType::Float32);
    CHECK(t.element_size() == 4);
    CHECK(t.numel() == 24);
    CHECK(t.nbytes() == 96);
    CHECK(t.is_contiguous());
    CHECK((t.size(0) == 2 && t.size(1) == 3 && t.size(2) == 4));
    CHECK((t.shape(0) == 2 && t.shape(1) == 3 && t.shape(2) == 4));
    CHECK((t.stride(0) == 12 && t.stride(1) == 4 && t.stride(2) == 1));
    CHECK((t.shape_ptr()[1] == 3 && t.strides_ptr()[0] == 12));
    // Negative indices count from the end, as in NumPy.
    CHECK((t.size(-1) == 4 && t.stride(-3) == 12));
}

TEST_CASE("Tensor of rank 0 is one element", "[runtime_headers]") {
    double value = 1.5;
    const BE::Tensor t(&value, DType::Float64, 0, nullptr);
    CHECK(t.ndim() == 0);
    CHECK(t.numel() == 1);
    CHECK(t.nbytes() == 8);
    CHECK(t.is_contiguous());
    CHECK(*t.data_ptr<double>() == 1.5);
}

TEST_CASE("Tensor with a zero-sized dimension has no elements", "[runtime_headers]") {
    const int64_t dims[2] = {5, 0};
    const BE::Tensor t(nullptr, DType::Int32, 2, dims);
    CHECK(t.numel() == 0);
    CHECK(t.nbytes() == 0);
    CHECK(t.stride(0) == 0);
    CHECK(t.stride(1) == 1);
}

TEST_CASE("Tensor holds up to 8 dimensions", "[runtime_headers]") {
    const int64_t dims[9] = {2, 1, 3, 1, 2, 1, 2, 1, 2};
    const BE::Tensor t(nullptr, DType::UInt8, 8, dims);
    CHECK(BE::Tensor::kMaxDims == 8);
    CHECK(t.ndim() == 8);
    CHECK(t.numel() == 24);
    CHECK(t.stride(0) == 12);
    CHECK(t.stride(7) == 1);
    CHECK(t.is_contiguous());

    const BE::Error e = thrown_error([&] { BE::Tensor(nullptr, DType::UInt8, 9, dims); });
    CHECK_THAT(e.message(), Catch::Contains("BE::Tensor supports 0 to 8 dimensions, got 9"));
}

TEST_CASE("Tensor rejects bad dimension indices and negative dims", "[runtime_headers]") {
    const int64_t dims[2] = {2, 3};
    const BE::Tensor t(nullptr, DType::Float32, 2, dims);
    CHECK_THAT(thrown_error([&] { (void)t.size(2); }).message(),
               Catch::Contains("dimension index 2 out of range for a tensor of rank 2"));
    CHECK_THROWS_AS(t.stride(-3), BE::Error);

    const int64_t negative[2] = {2, -1};
    CHECK_THAT(thrown_error([&] { BE::Tensor(nullptr, DType::Float32, 2, negative); }).message(),
               Catch::Contains("dimension 1 is negative: -1"));
}

TEST_CASE("Tensor is a trivially copyable value", "[runtime_headers]") {
    // Kernel arguments are copied bytewise to the device.
    STATIC_REQUIRE(std::is_trivially_copyable_v<BE::Tensor>);
    STATIC_REQUIRE(std::is_standard_layout_v<BE::Tensor>);
    STATIC_REQUIRE(std::is_trivially_destructible_v<BE::Tensor>);

    int32_t storage[6] = {};
    const int64_t dims[2] = {3, 2};
    const BE::Tensor a(storage, DType::Int32, 2, dims);
    BE::Tensor b;
    std::memcpy(static_cast<void*>(&b), &a, sizeof a);
    CHECK(b.data_ptr<int32_t>() == storage);
    CHECK(b.size(0) == 3);
    CHECK(b.stride(0) == 2);
    CHECK(b.numel() == 6);

    const BE::Tensor empty;
    CHECK(empty.data_ptr() == nullptr);
    CHECK(empty.dtype() == DType::Invalid);
}

TEST_CASE("BE_CHECK passes silently and does not evaluate its message", "[runtime_headers]") {
    int evaluated = 0;
    auto message = [&] {
        ++evaluated;
        return "text";
    };
    CHECK_NOTHROW([&] { BE_CHECK(1 + 1 == 2) << message(); }());
    CHECK(evaluated == 0);
}

TEST_CASE("BE_CHECK throws BE::Error with file:line and the streamed message",
          "[runtime_headers]") {
    const int n = -3;
    int line = 0;
    const BE::Error e = thrown_error([&] {
        // clang-format off
        line = __LINE__; BE_CHECK(n > 0) << "n must be positive, got " << n;
        // clang-format on
    });
    CHECK(ends_with(e.file(), "test_runtime_headers.cpp"));
    CHECK(e.line() == line);
    CHECK(e.message() == "BE_CHECK(n > 0) failed: n must be positive, got -3");
    CHECK(std::string(e.what()) ==
          std::string(e.file()) + ":" + std::to_string(line) + ": " + e.message());
    STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, BE::Error>);
}

TEST_CASE("BE_CHECK without a message names the condition only", "[runtime_headers]") {
    const BE::Error e = thrown_error([] { BE_CHECK(sizeof(int) == 1); });
    CHECK(e.message() == "BE_CHECK(sizeof(int) == 1) failed");
}

TEST_CASE("BE_CHECK messages format the values kernels stream", "[runtime_headers]") {
    const std::string text = "std::string";
    const char* null_text = nullptr;
    const BE::Error e = thrown_error([&] {
        BE_CHECK(false) << int8_t{-5} << ' ' << uint8_t{200} << ' ' << true << ' '
                        << DType::BFloat16 << ' ' << 0.25 << ' ' << 1.5f << ' ' << text << ' '
                        << std::string_view("view") << ' ' << null_text << ' ' << 42ull << ' '
                        << int64_t{-9000000000};
    });
    CHECK(e.message() ==
          "BE_CHECK(false) failed: -5 200 true bfloat16 0.25 1.5 std::string view (null) 42 "
          "-9000000000");
}

TEST_CASE("BE_CHECK takes conditions with commas", "[runtime_headers]") {
    CHECK_NOTHROW(BE_CHECK(std::is_same_v<int, int>));
    const BE::Error e = thrown_error([] { BE_CHECK(std::is_same_v<int, long>) << "!"; });
    CHECK(e.message() == "BE_CHECK(std::is_same_v<int, long>) failed: !");
}

TEST_CASE("BE_CHECK is one statement: it nests in if/else without braces", "[runtime_headers]") {
    auto run = [](bool outer, bool inner) {
        int branch = 0;
        if (outer)
            BE_CHECK(inner) << "inner";
        else
            branch = 2;
        return branch;
    };
    CHECK(run(false, false) == 2);
    CHECK(run(true, true) == 0);
    CHECK_THROWS_AS(run(true, false), BE::Error);
}

TEST_CASE("CUDA-only checks are absent from a CPU build", "[runtime_headers]") {
    CHECK(BE_HAS_CUDA_RUNTIME == 0);
    CHECK(BE_CUDA_COMPILER == 0);
#if defined(BE_CUDA_CHECK) || defined(BE_CHECK_KERNEL_LAUNCH)
    FAIL("BE_CUDA_CHECK must not exist without the CUDA runtime API");
#endif
}

namespace {

// The C++ type each dispatch macro binds to scalar_t for `dtype`.
std::type_index floating(DType dtype) {
    std::type_index seen = typeid(void);
    BE_DISPATCH_FLOATING(dtype, scalar_t, { seen = typeid(scalar_t); });
    return seen;
}
std::type_index floating_and_half(DType dtype) {
    std::type_index seen = typeid(void);
    BE_DISPATCH_FLOATING_AND_HALF(dtype, scalar_t, { seen = typeid(scalar_t); });
    return seen;
}
std::type_index integral(DType dtype) {
    std::type_index seen = typeid(void);
    BE_DISPATCH_INTEGRAL(dtype, scalar_t, { seen = typeid(scalar_t); });
    return seen;
}
std::type_index all_types(DType dtype) {
    std::type_index seen = typeid(void);
    BE_DISPATCH_ALL_TYPES(dtype, scalar_t, { seen = typeid(scalar_t); });
    return seen;
}
std::type_index complex(DType dtype) {
    std::type_index seen = typeid(void);
    BE_DISPATCH_COMPLEX(dtype, scalar_t, { seen = typeid(scalar_t); });
    return seen;
}
std::type_index all(DType dtype) {
    std::type_index seen = typeid(void);
    BE_DISPATCH_ALL(dtype, scalar_t, { seen = typeid(scalar_t); });
    return seen;
}

std::type_index signed_index(DType dtype) {
    std::type_index seen = typeid(void);
    BE_DISPATCH_SIGNED_INDEX(dtype, index_t, { seen = typeid(index_t); });
    return seen;
}
std::type_index csr_indptr(DType dtype) {
    std::type_index seen = typeid(void);
    BE_DISPATCH_CSR_INDPTR(dtype, indptr_t, { seen = typeid(indptr_t); });
    return seen;
}

struct DispatchCase {
    const char* macro;
    std::type_index (*dispatch)(DType);
    std::vector<std::pair<DType, std::type_index>> supported;
};

std::vector<DispatchCase> dispatch_cases() {
    using P = std::pair<DType, std::type_index>;
    const std::vector<P> floating_types = {P{DType::Float32, typeid(float)},
                                           P{DType::Float64, typeid(double)}};
    const std::vector<P> half_types = {P{DType::Float16, typeid(BE::float16_t)},
                                       P{DType::BFloat16, typeid(BE::bfloat16_t)}};
    const std::vector<P> integral_types = {
        P{DType::Bool, typeid(bool)},       P{DType::Int8, typeid(int8_t)},
        P{DType::Int16, typeid(int16_t)},   P{DType::Int32, typeid(int32_t)},
        P{DType::Int64, typeid(int64_t)},   P{DType::UInt8, typeid(uint8_t)},
        P{DType::UInt16, typeid(uint16_t)}, P{DType::UInt32, typeid(uint32_t)},
        P{DType::UInt64, typeid(uint64_t)}};
    const std::vector<P> signed_index_types = {P{DType::Int32, typeid(int32_t)},
                                               P{DType::Int64, typeid(int64_t)}};
    const std::vector<P> complex_types = {P{DType::Complex64, typeid(BE::complex64_t)},
                                          P{DType::Complex128, typeid(BE::complex128_t)}};
    auto join = [](std::initializer_list<std::vector<P>> parts) {
        std::vector<P> out;
        for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
        return out;
    };
    return {
        {"BE_DISPATCH_FLOATING", floating, floating_types},
        // A host compiler has no arithmetic half type; brainevent leaves them out too.
        {"BE_DISPATCH_FLOATING_AND_HALF", floating_and_half, floating_types},
        {"BE_DISPATCH_INTEGRAL", integral, integral_types},
        {"BE_DISPATCH_ALL_TYPES", all_types, join({floating_types, integral_types})},
        {"BE_DISPATCH_COMPLEX", complex, complex_types},
        {"BE_DISPATCH_ALL", all, join({floating_types, half_types, integral_types, complex_types})},
        {"BE_DISPATCH_SIGNED_INDEX", signed_index, signed_index_types},
        {"BE_DISPATCH_CSR_INDPTR", csr_indptr, signed_index_types},
    };
}

}  // namespace

TEST_CASE("Each dispatch macro binds scalar_t to the dtype's C++ type", "[runtime_headers]") {
    for (const DispatchCase& c : dispatch_cases()) {
        for (const auto& [dtype, type] : c.supported) {
            CAPTURE(c.macro, BE::dtype_name(dtype));
            CHECK(c.dispatch(dtype) == type);
        }
    }
}

TEST_CASE("Each dispatch macro rejects the other dtypes, naming them", "[runtime_headers]") {
    for (const DispatchCase& c : dispatch_cases()) {
        for (DType dtype : kAllDTypes) {
            bool supported = false;
            for (const auto& entry : c.supported) supported = supported || entry.first == dtype;
            if (supported) continue;
            CAPTURE(c.macro, BE::dtype_name(dtype));
            const BE::Error e = thrown_error([&] { c.dispatch(dtype); });
            CHECK_THAT(e.message(), Catch::StartsWith(std::string(c.macro) + "(dtype)"));
            CHECK_THAT(e.message(), Catch::Contains(std::string("unsupported dtype ") +
                                                    BE::dtype_name(dtype) + " (supported: "));
            CHECK(ends_with(e.file(), "test_runtime_headers.cpp"));
            CHECK_THROWS_AS(c.dispatch(dtype), BE::CheckError);
        }
    }
}

TEST_CASE("BE_DISPATCH_SIGNED_INDEX_PAIR sees both names and says which dtype failed",
          "[runtime_headers]") {
    auto widths = [](DType index, DType offset) {
        int seen = 0;
        BE_DISPATCH_SIGNED_INDEX_PAIR(index, offset, index_t, offset_t, {
            std::pair<index_t, offset_t> both{1, 2};
            seen = static_cast<int>(10 * sizeof(both.first) + sizeof(both.second));
        });
        return seen;
    };
    CHECK(widths(DType::Int32, DType::Int32) == 44);
    CHECK(widths(DType::Int32, DType::Int64) == 48);
    CHECK(widths(DType::Int64, DType::Int32) == 84);
    CHECK(widths(DType::Int64, DType::Int64) == 88);
    CHECK(thrown_error([&] { widths(DType::UInt32, DType::Int32); }).message() ==
          "BE_DISPATCH_SIGNED_INDEX_PAIR(index, ...): unsupported dtype uint32 "
          "(supported: int32, int64)");
    CHECK(thrown_error([&] { widths(DType::Int32, DType::Float32); }).message() ==
          "BE_DISPATCH_SIGNED_INDEX_PAIR(..., offset): unsupported dtype float32 "
          "(supported: int32, int64)");
}

TEST_CASE("BE_CHECK_CSR_INDICES_INT32 accepts int32 only", "[runtime_headers]") {
    const int64_t dims[1] = {4};
    const BE::Tensor indices(nullptr, DType::Int32, 1, dims);
    const BE::Tensor wide(nullptr, DType::Int64, 1, dims);
    CHECK_NOTHROW(BE_CHECK_CSR_INDICES_INT32(indices));  // an expression, unlike brainevent's
    const BE::Error e = thrown_error([&] { BE_CHECK_CSR_INDICES_INT32(wide); });
    CHECK(e.message() ==
          "BE_CHECK_CSR_INDICES_INT32(wide) failed: CSR column indices must be int32, got int64");
    CHECK_THROWS_AS(BE_CHECK_CSR_INDICES_INT32(wide), BE::CheckError);
}

TEST_CASE("Tensor takes brainevent's constructor argument order", "[runtime_headers]") {
    float storage[6] = {};
    const int64_t dims[2] = {2, 3};
    const BE::Tensor t(storage, dims, 2, DType::Float32);
    CHECK(t.data_ptr<float>() == storage);
    CHECK(t.dtype() == DType::Float32);
    CHECK((t.ndim() == 2 && t.shape(0) == 2 && t.shape(1) == 3));
    CHECK((t.stride(0) == 3 && t.stride(1) == 1));
    CHECK(t.numel_checked_int() == 6);
    CHECK(BE::kMaxDim == 8);

    // As brainevent does, a rank out of range is std::out_of_range.
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_THROWS_AS(BE::Tensor(nullptr, nine, 9, DType::UInt8), std::out_of_range);
    CHECK_THROWS_AS(BE::Tensor(nullptr, nine, -1, DType::UInt8), std::out_of_range);
}

TEST_CASE("numel_checked_int throws std::overflow_error past INT_MAX", "[runtime_headers]") {
    const int64_t fits[2] = {46340, 46340};  // 2147395600
    CHECK(BE::Tensor(nullptr, fits, 2, DType::UInt8).numel_checked_int() == 2147395600);
    const int64_t over[2] = {65536, 32768};  // 2^31
    CHECK_THROWS_AS(BE::Tensor(nullptr, over, 2, DType::UInt8).numel_checked_int(),
                    std::overflow_error);
}

TEST_CASE("CheckError and CudaError are brainevent's exception types", "[runtime_headers]") {
    STATIC_REQUIRE(std::is_base_of_v<BE::Error, BE::CheckError>);
    STATIC_REQUIRE(std::is_base_of_v<BE::Error, BE::CudaError>);
    STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, BE::CudaError>);
    CHECK_THROWS_AS([] { BE_CHECK(false); }(), BE::CheckError);

    // brainevent builds them from the message alone.
    const BE::CudaError e(std::string("no device"));
    CHECK(std::string(e.what()) == "no device");
    CHECK(e.message() == "no device");
    CHECK(std::string(e.file()).empty());
    CHECK(e.line() == 0);
}

TEST_CASE("CheckFailMessageStream throws when its full expression ends", "[runtime_headers]") {
    using BE::internal::CheckFailMessageStream;
    using BE::internal::Voidify;
    int line = 0;
    const BE::Error e = thrown_error([&] {
        // clang-format off
        line = __LINE__; Voidify() & CheckFailMessageStream(__FILE__, __LINE__, "n > 0") << "n is " << -1;
        // clang-format on
    });
    CHECK(e.message() == "BE_CHECK(n > 0) failed: n is -1");
    CHECK(e.line() == line);
    CHECK_THROWS_AS(Voidify() & CheckFailMessageStream(__FILE__, __LINE__, "x"), BE::CheckError);
    // The nullptr form is the passing branch: it neither formats nor throws.
    CHECK_NOTHROW(Voidify() & CheckFailMessageStream(nullptr) << "unused" << 1);
}

TEST_CASE("The headers say they are bekc's", "[runtime_headers]") {
    CHECK(BEKC_BRAINEVENT_HEADERS == 1);
}

TEST_CASE("Dispatch evaluates the dtype once and its block may return", "[runtime_headers]") {
    int calls = 0;
    auto next_dtype = [&] {
        ++calls;
        return DType::Int16;
    };
    const size_t width =
        BE_DISPATCH_ALL_TYPES(next_dtype(), scalar_t, { return sizeof(scalar_t); });
    CHECK(width == 2);
    CHECK(calls == 1);

    // Commas inside the block (template arguments, initializers) are fine.
    std::pair<int, int> p{0, 0};
    BE_DISPATCH_FLOATING(DType::Float64, scalar_t, {
        std::pair<scalar_t, int> q{1.5, 2};
        p = {static_cast<int>(q.first * 2), q.second};
    });
    CHECK(p == std::pair<int, int>{3, 2});
}

TEST_CASE("Half and complex stand-ins have the sizes of their dtypes", "[runtime_headers]") {
    STATIC_REQUIRE(sizeof(BE::float16_t) == 2);
    STATIC_REQUIRE(sizeof(BE::bfloat16_t) == 2);
    STATIC_REQUIRE(sizeof(BE::complex64_t) == BE::dtype_size(DType::Complex64));
    STATIC_REQUIRE(sizeof(BE::complex128_t) == BE::dtype_size(DType::Complex128));
    STATIC_REQUIRE(alignof(BE::complex128_t) == 16);
}

namespace {

// A tensor as bekc's handlers build it: tagged with the argument or result it views.
BE::Tensor handler_tensor(void* data, DType dtype, BE::Tensor::Origin origin, int index) {
    static const int64_t dims[1] = {4};
    return BE::Tensor(BE::Tensor::Unchecked{}, data, dtype, 1, dims, origin, index);
}

}  // namespace

TEST_CASE("data_ptr<T>() accepts T of the dtype's width, const or not", "[runtime_headers]") {
    alignas(16) unsigned char storage[64] = {};
    auto tensor = [&](DType dtype) {
        return handler_tensor(storage, dtype, BE::Tensor::Origin::Argument, 0);
    };
    CHECK(tensor(DType::Float32).data_ptr<float>() == reinterpret_cast<float*>(storage));
    CHECK(tensor(DType::Float32).data_ptr<const float>() == reinterpret_cast<float*>(storage));
    CHECK(tensor(DType::Float64).data_ptr<double>() != nullptr);
    CHECK(tensor(DType::Bool).data_ptr<bool>() != nullptr);
    CHECK(tensor(DType::Complex64).data_ptr<BE::complex64_t>() != nullptr);
    CHECK(tensor(DType::Complex128).data_ptr<const BE::complex128_t>() != nullptr);
    // Same-width reinterpretations stay allowed, as in brainevent.
    CHECK(tensor(DType::Float16).data_ptr<uint16_t>() != nullptr);
    CHECK(tensor(DType::BFloat16).data_ptr<const int16_t>() != nullptr);
    CHECK(tensor(DType::Float16).data_ptr<BE::float16_t>() != nullptr);
    CHECK(tensor(DType::Float32).data_ptr<uint32_t>() != nullptr);
    CHECK(tensor(DType::Int64).data_ptr<double>() != nullptr);
    CHECK(tensor(DType::Complex64).data_ptr<uint64_t>() != nullptr);
    struct Rgb {
        unsigned char r, g, b;
    };
    CHECK(tensor(DType::UInt8).data_ptr<uint8_t>() != nullptr);
    CHECK_THROWS_AS(tensor(DType::UInt8).data_ptr<Rgb>(), BE::CheckError);
}

TEST_CASE("data_ptr<T>() of a byte type views any dtype", "[runtime_headers]") {
    alignas(16) unsigned char storage[64] = {};
    for (DType dtype : kAllDTypes) {
        CAPTURE(BE::dtype_name(dtype));
        const BE::Tensor t = handler_tensor(storage, dtype, BE::Tensor::Origin::Result, 2);
        CHECK(t.data_ptr<void>() == storage);
        CHECK(t.data_ptr<const void>() == storage);
        CHECK(t.data_ptr<char>() == reinterpret_cast<char*>(storage));
        CHECK(t.data_ptr<unsigned char>() == storage);
        CHECK(t.data_ptr<const std::byte>() == reinterpret_cast<const std::byte*>(storage));
    }
}

TEST_CASE("data_ptr<T>() of another width throws, naming the buffer, the dtype and T",
          "[runtime_headers]") {
    double storage[8] = {};
    using Origin = BE::Tensor::Origin;
    const BE::Tensor x = handler_tensor(storage, DType::Float32, Origin::Argument, 0);
    int line = 0;
    const BE::Error e = thrown_error([&] {
        // clang-format off
        line = __LINE__; (void)x.data_ptr<double>();
        // clang-format on
    });
    // At the caller's line, like BE_CHECK, not somewhere in tensor.h.
    CHECK(ends_with(e.file(), "test_runtime_headers.cpp"));
    CHECK(e.line() == line);
    CHECK(e.message() ==
          "data_ptr<double>() on argument 0 (float32): double has 8 bytes, float32 elements have "
          "4; check the dtype first, or dispatch on it (BE_DISPATCH_*)");
    CHECK_THROWS_AS(x.data_ptr<double>(), BE::CheckError);

    struct Row {
        BE::Tensor tensor;
        std::string (*view)(const BE::Tensor&);
        const char* message;
    };
    const Row rows[] = {
        {handler_tensor(storage, DType::Int64, Origin::Argument, 3),
         [](const BE::Tensor& t) { return thrown_error([&] { t.data_ptr<float>(); }).message(); },
         "data_ptr<float>() on argument 3 (int64): float has 4 bytes, int64 elements have 8"},
        {handler_tensor(storage, DType::Float16, Origin::Result, 1),
         [](const BE::Tensor& t) {
             return thrown_error([&] { t.data_ptr<const int32_t>(); }).message();
         },
         "data_ptr<int32_t>() on result 1 (float16): int32_t has 4 bytes, float16 elements have 2"},
        {handler_tensor(storage, DType::Bool, Origin::Result, 0),
         [](const BE::Tensor& t) {
             return thrown_error([&] { t.data_ptr<BE::complex128_t>(); }).message();
         },
         "data_ptr<BE::complex128_t>() on result 0 (bool): BE::complex128_t has 16 bytes, bool "
         "elements have 1"},
        {handler_tensor(storage, DType::Complex64, Origin::Argument, 0),
         [](const BE::Tensor& t) { return thrown_error([&] { t.data_ptr<int8_t>(); }).message(); },
         "data_ptr<int8_t>() on argument 0 (complex64): int8_t has 1 byte, complex64 elements "
         "have 8"},
        // A type the table does not name is T; a tensor built by the kernel has no origin.
        {BE::Tensor(storage, DType::Float32, 0, nullptr),
         [](const BE::Tensor& t) {
             struct Vec3 {
                 float x, y, z;
             };
             return thrown_error([&] { t.data_ptr<Vec3>(); }).message();
         },
         "data_ptr<T>() on a tensor (float32): T has 12 bytes, float32 elements have 4"},
    };
    for (const Row& row : rows) {
        CAPTURE(row.message);
        CHECK_THAT(row.view(row.tensor), Catch::StartsWith(row.message));
    }
}

TEST_CASE("data_ptr<T>() does not check a tensor of no dtype", "[runtime_headers]") {
    const BE::Tensor empty;
    CHECK(empty.data_ptr<double>() == nullptr);
    CHECK(empty.origin() == BE::Tensor::Origin::Unknown);
}

TEST_CASE("The origin tag rides in padding: Tensor keeps its size and stays trivially copyable",
          "[runtime_headers]") {
    STATIC_REQUIRE(std::is_trivially_copyable_v<BE::Tensor>);
    STATIC_REQUIRE(std::is_standard_layout_v<BE::Tensor>);
    // data, shape, strides, numel, ndim and dtype; the tag takes no room of its own.
    STATIC_REQUIRE(sizeof(BE::Tensor) ==
                   sizeof(void*) + (2 * BE::kMaxDim + 1) * sizeof(int64_t) + 2 * sizeof(int));
    float storage[4] = {};
    const BE::Tensor t = handler_tensor(storage, DType::Float32, BE::Tensor::Origin::Result, 7);
    BE::Tensor copy;
    std::memcpy(static_cast<void*>(&copy), &t, sizeof t);
    CHECK(copy.origin() == BE::Tensor::Origin::Result);
    CHECK(copy.origin_index() == 7);
    CHECK(BE::Tensor(storage, DType::Float32, 0, nullptr).origin() == BE::Tensor::Origin::Unknown);
    // An index the tag cannot hold leaves the tensor without an origin.
    CHECK(handler_tensor(storage, DType::Float32, BE::Tensor::Origin::Argument, 70000).origin() ==
          BE::Tensor::Origin::Unknown);
}

TEST_CASE("data_ptr<T>()'s table has the width of every type it names", "[runtime_headers]") {
    using BE::detail::ElementView;
    STATIC_REQUIRE(ElementView<BE::float16_t>::width == sizeof(BE::float16_t));
    STATIC_REQUIRE(ElementView<BE::bfloat16_t>::width == sizeof(BE::bfloat16_t));
    STATIC_REQUIRE(ElementView<BE::complex64_t>::width == sizeof(BE::complex64_t));
    STATIC_REQUIRE(ElementView<BE::complex128_t>::width == sizeof(BE::complex128_t));
    STATIC_REQUIRE(ElementView<bool>::width == sizeof(bool));
    STATIC_REQUIRE(ElementView<int8_t>::width == 1);
    STATIC_REQUIRE(ElementView<uint16_t>::width == 2);
    STATIC_REQUIRE(ElementView<int64_t>::width == 8);
    STATIC_REQUIRE(ElementView<double>::width == 8);
    // The byte views accept every width; so does a type not defined yet.
    STATIC_REQUIRE(ElementView<void>::width == 0);
    STATIC_REQUIRE(ElementView<std::byte>::width == 0);
    STATIC_REQUIRE(ElementView<uint8_t>::width == 0);
    struct Undefined;
    STATIC_REQUIRE(ElementView<Undefined>::width == 0);
}
