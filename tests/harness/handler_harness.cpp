// The generated XLA FFI handlers, called the way XLA calls them.
//
// Builds tests/harness/kernels/*.{cpp,cu} with the real `bekc` binary (into a
// private cache directory), dlopens the library, reads the manifest, and calls
// every handler through call frames and an API table this harness builds
// itself from bekc's binding (bekc/xla_ffi_abi.h): results for every attribute
// type and rank 0 to 8, every error path with its exact code and message, the
// metadata query, and exceptions thrown by kernels.
//
//   handler_harness            every test ([cpu] and, when built with nvcc, [cuda])
//   handler_harness "[cpu]"    the CPU library only
//
// BEKC_HARNESS_BEKC overrides the bekc binary; BEKC_HARNESS_KEEP keeps the
// temporary build directories.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "brainevent/dtype.h"
#include "built_library.hpp"
#include "fake_xla.hpp"

using harness::BuiltLibrary;
using harness::FrameBuilder;
using harness::MetadataQuery;
using harness::Outcome;

namespace {

constexpr int32_t kInvalidArgument = BEKC_XLA_ERROR_INVALID_ARGUMENT;
constexpr int32_t kInternal = BEKC_XLA_ERROR_INTERNAL;

std::string bekc_binary() {
    const char* env = std::getenv("BEKC_HARNESS_BEKC");
    return env && *env ? env : BEKC_BINARY;
}

std::filesystem::path kernel(const char* name) {
    return std::filesystem::absolute(std::filesystem::path(HARNESS_KERNEL_DIR) / name)
        .lexically_normal();
}

// The CPU library, built once per process on first use.
const BuiltLibrary& cpu() {
    static const std::unique_ptr<BuiltLibrary> lib =
        std::make_unique<BuiltLibrary>(bekc_binary(), kernel("handlers_cpu.cpp"));
    return *lib;
}

// The 1-based line of the first line in `file` that contains `needle`.
int line_of(const std::filesystem::path& file, const std::string& needle) {
    std::ifstream in(file);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
        if (line.find(needle) != std::string::npos) return n;
    throw std::runtime_error("'" + needle + "' not in " + file.string());
}

// Clears what the fake API table recorded, keeping what Stream_Get answers.
harness::ApiLog& reset_log() {
    harness::ApiLog& log = harness::api_log();
    void* stream = log.stream;
    BekcXla_Error* stream_error = log.stream_error;
    log = harness::ApiLog{};
    log.stream = stream;
    log.stream_error = stream_error;
    return log;
}

// Calls `handler` with `frame` after clearing the fake's log, and checks that
// an error, if any, was made the way XLA expects.
Outcome call(BekcXla_Handler* handler, BekcXla_CallFrame& frame) {
    harness::ApiLog& log = reset_log();
    Outcome o = harness::take(handler(&frame));
    CHECK(log.unused_calls == 0);
    if (!o.ok && o.code != 0 && log.stream_error == nullptr) {
        // Every error is made through Error_Create, with the struct size of API 0.1.
        CHECK(log.error_creates == 1);
        CHECK(log.error_create_struct_size == BEKC_XLA_ERROR_CREATE_ARGS_STRUCT_SIZE);
        CHECK(log.error_create_extension_null);
    }
    if (o.ok) CHECK(log.error_creates == 0);
    return o;
}

Outcome call(const std::string& function, BekcXla_CallFrame& frame) {
    return call(cpu().handler(function), frame);
}

void require_error(const Outcome& o, int32_t code, const std::string& message) {
    INFO("handler message: " << o.message);
    REQUIRE_FALSE(o.ok);
    CHECK(o.code == code);
    CHECK(o.message == message);
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    std::vector<float> v(n);
    for (auto& x : v) {
        do x = dist(rng);
        while (x == 0.0f);  // never zeros: a zero output must mean a bug
    }
    return v;
}

// Bytes of a value, for comparing outputs bit for bit.
template <class T>
std::vector<unsigned char> bytes_of(T v) {
    std::vector<unsigned char> b(sizeof v);
    std::memcpy(b.data(), &v, sizeof v);
    return b;
}

// A 0-d output buffer of `size` bytes, filled with a sentinel.
struct Slot {
    alignas(16) unsigned char bytes[16];
    Slot() { std::memset(bytes, 0xA5, sizeof bytes); }
    template <class T>
    std::vector<unsigned char> first() const {
        return std::vector<unsigned char>(bytes, bytes + sizeof(T));
    }
    bool untouched() const {
        return std::all_of(std::begin(bytes), std::end(bytes),
                           [](unsigned char c) { return c == 0xA5; });
    }
};

// A frame for `affine` (x: float32 [n], y: float32 [n], attrs a, b): the
// valid call that the error tests break one piece at a time.
struct AffineCall {
    std::vector<float> x = random_floats(6, 1);
    std::vector<float> y = std::vector<float>(6, -777.0f);
    FrameBuilder fb;
    AffineCall() {
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {2, 3})
            .ret(BEKC_XLA_DTYPE_F32, y.data(), {2, 3})
            .attr("a", BEKC_XLA_DTYPE_F32, 2.0f)
            .attr("b", BEKC_XLA_DTYPE_F32, -0.5f);
    }
    bool output_untouched() const {
        return std::all_of(y.begin(), y.end(), [](float v) { return v == -777.0f; });
    }
};

const std::string kAffine = "handlers_cpu.affine: ";

}  // namespace

// ---------------------------------------------------------------- manifest

TEST_CASE("manifest names every function and the library exports both handler variants", "[cpu]") {
    const BuiltLibrary& lib = cpu();
    std::vector<std::string> want = {"affine",     "attrs_small", "attrs_wide", "axpy",
                                     "checked",    "describe",    "int_affine", "stats",
                                     "throws_int", "throws_std"};
    std::vector<std::string> got;
    for (const auto& [fn, t] : lib.targets()) got.push_back(fn);
    CHECK(got == want);
    for (const auto& [fn, t] : lib.targets()) {
        INFO(fn);
        CHECK(t.name == "handlers_cpu." + fn);
        CHECK(t.symbol == "bekc_ffi_" + fn);
        CHECK(t.platform == "cpu");
        CHECK(t.command_buffer_compatible);
        CHECK(lib.find(t.symbol) != nullptr);
        CHECK(lib.find(t.symbol + "_nograph") != nullptr);
    }
    CHECK(lib.find("not_exported_helper") == nullptr);
    CHECK(lib.find("attrs_small") == nullptr);
    const auto& small = lib.target("attrs_small");
    CHECK(small.num_args == 1);
    CHECK(small.num_rets == 10);
    using P = std::pair<std::string, std::string>;
    CHECK(small.attrs == std::vector<P>{{"zb", "bool"},
                                        {"Yi8", "int8"},
                                        {"xu8", "uint8"},
                                        {"wi16", "int16"},
                                        {"vu16", "uint16"},
                                        {"ui32", "int32"},
                                        {"tu32", "uint32"},
                                        {"af32", "float32"},
                                        {"bh", "float16"},
                                        {"cbh", "bfloat16"}});
    CHECK(lib.target("attrs_wide").attrs ==
          std::vector<P>{{"mu64", "uint64"}, {"f64", "float64"}, {"i64", "int64"}});
    CHECK(lib.target("checked").source ==
          kernel("handlers_cpu.cpp").string() + ":" +
              std::to_string(line_of(kernel("handlers_cpu.cpp"), "// @BE checked")));
}

// ---------------------------------------------------------------- metadata

namespace {

void check_metadata(BekcXla_Handler* h, bool want_trait, const BekcXla_Api* api, bool other_first) {
    MetadataQuery q(api, other_first);
    BekcXla_CallFrame frame_before = q.frame;
    BekcXla_MetadataExtension ext_before = q.ext;
    const BekcXla_Metadata expected = q.expected(want_trait);

    Outcome o = call(h, q.frame);
    CHECK(o.ok);
    // Exactly the version and the traits changed: not the padding after
    // traits, not state_type_id (which XLA before 0.8 does not even pass).
    CHECK(std::memcmp(&q.metadata, &expected, sizeof expected) == 0);
    CHECK(q.metadata.api_version.struct_size == BEKC_XLA_API_VERSION_STRUCT_SIZE);
    CHECK(q.metadata.api_version.major_version == 0);
    CHECK(q.metadata.api_version.minor_version == 1);
    CHECK(q.metadata.traits ==
          (want_trait ? uint32_t{BEKC_XLA_TRAIT_COMMAND_BUFFER_COMPATIBLE} : 0u));
    CHECK(std::memcmp(&q.frame, &frame_before, sizeof frame_before) == 0);
    CHECK(std::memcmp(&q.ext, &ext_before, sizeof ext_before) == 0);
}

}  // namespace

TEST_CASE("metadata query: API version 0.1, command-buffer trait only without _nograph", "[cpu]") {
    for (const auto& [fn, t] : cpu().targets()) {
        INFO(fn);
        for (const BekcXla_Api* api :
             {harness::fake_api(), static_cast<const BekcXla_Api*>(nullptr)})
            for (bool other_first : {false, true}) {
                check_metadata(cpu().find(t.symbol), true, api, other_first);
                check_metadata(cpu().find(t.symbol + "_nograph"), false, api, other_first);
            }
    }
}

TEST_CASE("metadata query: a larger Metadata (jaxlib 0.8+, with state_type_id) keeps its tail",
          "[cpu]") {
    MetadataQuery q(harness::fake_api());
    q.metadata.struct_size = sizeof(BekcXla_Metadata);
    q.metadata.state_type_id = 0x1122334455667788;
    CHECK(call("affine", q.frame).ok);
    CHECK(q.metadata.state_type_id == 0x1122334455667788);
    CHECK(q.metadata.struct_size == sizeof(BekcXla_Metadata));
    CHECK(q.metadata.traits == 1u);
}

TEST_CASE("metadata query: a Metadata smaller than API 0.1's is an error, never written", "[cpu]") {
    MetadataQuery q(harness::fake_api());
    q.metadata.struct_size = 16;
    std::vector<unsigned char> before(sizeof q.metadata);
    std::memcpy(before.data(), &q.metadata, before.size());
    Outcome o = call("affine", q.frame);
    require_error(o, kInvalidArgument,
                  "bekc handler: XLA's metadata struct is 16 bytes, expected at least 36");
    CHECK(std::memcmp(before.data(), &q.metadata, before.size()) == 0);
}

TEST_CASE("metadata query: a too small Metadata without an API table does not crash", "[cpu]") {
    // Some jaxlib releases send the metadata query with api == NULL; with no
    // Error_Create to call, the handler must still return, writing nothing.
    MetadataQuery q(nullptr);
    q.metadata.struct_size = 16;
    std::vector<unsigned char> before(sizeof q.metadata);
    std::memcpy(before.data(), &q.metadata, before.size());
    reset_log();
    BekcXla_Error* e = cpu().handler("affine")(&q.frame);
    CHECK(harness::api_log().error_creates == 0);
    CHECK(e == nullptr);
    CHECK(std::memcmp(before.data(), &q.metadata, before.size()) == 0);
}

TEST_CASE("an extension chain without metadata is an ordinary call", "[cpu]") {
    AffineCall c;
    BekcXla_CallFrame& f = c.fb.frame();
    BekcXla_InternalExtension other{BEKC_XLA_INTERNAL_EXTENSION_STRUCT_SIZE, 2, nullptr};
    f.extension_start = &other;
    CHECK(call("affine", f).ok);
    for (size_t i = 0; i < c.x.size(); ++i) CHECK(c.y[i] == 2.0f * c.x[i] + -0.5f);
}

// ---------------------------------------------------------------- attributes

TEST_CASE("every attribute type below 64 bits reaches the kernel bit for bit", "[cpu]") {
    struct Values {
        bool b;
        int8_t i8;
        uint8_t u8;
        int16_t i16;
        uint16_t u16;
        int32_t i32;
        uint32_t u32;
        float f32;
        uint16_t f16, bf16;
    };
    std::vector<Values> cases = {
        {true, -7, 200, -30000, 65000, -2000000000, 4000000000u, 3.25f, 0x3E00, 0xC020},
        {false, std::numeric_limits<int8_t>::min(), 255, std::numeric_limits<int16_t>::max(), 1,
         std::numeric_limits<int32_t>::min(), std::numeric_limits<uint32_t>::max(),
         -std::numeric_limits<float>::denorm_min(), 0x7C00, 0x0001},
        {true, 127, 1, -1, 0xFFFF, 123456789, 1u, std::numeric_limits<float>::infinity(), 0xFBFF,
         0x7F80},
    };
    float x = 1.5f;
    for (const auto& v : cases) {
        Slot o[10];
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, &x, {});
        const int32_t ret_dtypes[10] = {BEKC_XLA_DTYPE_PRED, BEKC_XLA_DTYPE_S8,  BEKC_XLA_DTYPE_U8,
                                        BEKC_XLA_DTYPE_S16,  BEKC_XLA_DTYPE_U16, BEKC_XLA_DTYPE_S32,
                                        BEKC_XLA_DTYPE_U32,  BEKC_XLA_DTYPE_F32, BEKC_XLA_DTYPE_F16,
                                        BEKC_XLA_DTYPE_BF16};
        for (int i = 0; i < 10; ++i) fb.ret(ret_dtypes[i], o[i].bytes, {});
        // Added in signature order; the builder sorts them by name as XLA does.
        fb.attr("zb", BEKC_XLA_DTYPE_PRED, v.b)
            .attr("Yi8", BEKC_XLA_DTYPE_S8, v.i8)
            .attr("xu8", BEKC_XLA_DTYPE_U8, v.u8)
            .attr("wi16", BEKC_XLA_DTYPE_S16, v.i16)
            .attr("vu16", BEKC_XLA_DTYPE_U16, v.u16)
            .attr("ui32", BEKC_XLA_DTYPE_S32, v.i32)
            .attr("tu32", BEKC_XLA_DTYPE_U32, v.u32)
            .attr("af32", BEKC_XLA_DTYPE_F32, v.f32)
            .attr("bh", BEKC_XLA_DTYPE_U16, v.f16)
            .attr("cbh", BEKC_XLA_DTYPE_U16, v.bf16);
        Outcome r = call("attrs_small", fb.frame());
        INFO(r.message);
        REQUIRE(r.ok);
        CHECK(o[0].first<bool>() == bytes_of(v.b));
        CHECK(o[1].first<int8_t>() == bytes_of(v.i8));
        CHECK(o[2].first<uint8_t>() == bytes_of(v.u8));
        CHECK(o[3].first<int16_t>() == bytes_of(v.i16));
        CHECK(o[4].first<uint16_t>() == bytes_of(v.u16));
        CHECK(o[5].first<int32_t>() == bytes_of(v.i32));
        CHECK(o[6].first<uint32_t>() == bytes_of(v.u32));
        CHECK(o[7].first<float>() == bytes_of(v.f32));
        CHECK(o[8].first<uint16_t>() == bytes_of(v.f16));
        CHECK(o[9].first<uint16_t>() == bytes_of(v.bf16));
        // Nothing beyond each output's width was written.
        for (int i = 0; i < 10; ++i) {
            size_t width = (i == 0 || i == 1 || i == 2) ? 1 : (i == 5 || i == 6 || i == 7) ? 4 : 2;
            for (size_t k = width; k < sizeof o[i].bytes; ++k) CHECK(o[i].bytes[k] == 0xA5);
        }
    }
}

TEST_CASE("64-bit attributes (int64, uint64, float64) reach the kernel bit for bit", "[cpu]") {
    struct Values {
        int64_t i64;
        uint64_t u64;
        double f64;
    };
    for (const auto& v : {Values{std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<uint64_t>::max(), 3.141592653589793},
                          Values{0x0123456789ABCDEF, 1, -std::numeric_limits<double>::max()}}) {
        float x = 2.0f;
        Slot o[3];
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, &x, {1})
            .ret(BEKC_XLA_DTYPE_S64, o[0].bytes, {})
            .ret(BEKC_XLA_DTYPE_U64, o[1].bytes, {})
            .ret(BEKC_XLA_DTYPE_F64, o[2].bytes, {})
            .attr("mu64", BEKC_XLA_DTYPE_U64, v.u64)
            .attr("f64", BEKC_XLA_DTYPE_F64, v.f64)
            .attr("i64", BEKC_XLA_DTYPE_S64, v.i64);
        REQUIRE(call("attrs_wide", fb.frame()).ok);
        CHECK(o[0].first<int64_t>() == bytes_of(v.i64));
        CHECK(o[1].first<uint64_t>() == bytes_of(v.u64));
        CHECK(o[2].first<double>() == bytes_of(v.f64));
    }
}

// ---------------------------------------------------------------- tensors

TEST_CASE("tensors of rank 0 to 8: shape, strides, numel, data", "[cpu]") {
    const int64_t pattern[8] = {2, 3, 1, 2, 2, 1, 3, 2};
    for (int rank = 0; rank <= 8; ++rank) {
        INFO("rank " << rank);
        std::vector<int64_t> dims(pattern, pattern + rank);
        int64_t numel = 1;
        for (auto d : dims) numel *= d;
        std::vector<float> x = random_floats(static_cast<size_t>(numel), 10 + rank);
        std::vector<int64_t> info(24, -99);
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), dims).ret(BEKC_XLA_DTYPE_S64, info.data(), {24});
        REQUIRE(call("describe", fb.frame()).ok);
        CHECK(info[0] == rank);
        CHECK(info[1] == numel);
        CHECK(info[2] == static_cast<int64_t>(BE::DType::Float32));
        CHECK(info[3] == 4);
        CHECK(info[4] == 4 * numel);
        CHECK(info[5] == 1);
        int64_t stride = 1;
        for (int i = 7; i >= 0; --i) {
            if (i >= rank) {
                CHECK(info[6 + i] == -1);
                CHECK(info[14 + i] == -1);
                continue;
            }
            CHECK(info[6 + i] == dims[i]);
            CHECK(info[14 + i] == stride);
            stride *= dims[i];
        }
        unsigned char first;
        std::memcpy(&first, x.data(), 1);
        CHECK(info[22] == first);
        CHECK(info[23] == 1);

        // And arithmetic over every element, through the same handler path.
        std::vector<float> y(x.size(), -777.0f);
        FrameBuilder fa;
        fa.arg(BEKC_XLA_DTYPE_F32, x.data(), dims)
            .ret(BEKC_XLA_DTYPE_F32, y.data(), dims)
            .attr("b", BEKC_XLA_DTYPE_F32, 0.25f)
            .attr("a", BEKC_XLA_DTYPE_F32, -3.0f);
        REQUIRE(call("affine", fa.frame()).ok);
        for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == -3.0f * x[i] + 0.25f);
    }
}

TEST_CASE("a zero-sized dimension gives numel 0", "[cpu]") {
    float dummy = 1.0f;
    std::vector<int64_t> info(24, -99);
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F32, &dummy, {4, 0, 3}).ret(BEKC_XLA_DTYPE_S64, info.data(), {24});
    REQUIRE(call("describe", fb.frame()).ok);
    CHECK(info[0] == 3);
    CHECK(info[1] == 0);
    CHECK(info[4] == 0);
    CHECK(info[22] == -1);
}

TEST_CASE("every XLA dtype with a BE::DType maps to it", "[cpu]") {
    struct Row {
        int32_t xla;
        BE::DType be;
        int size;
    };
    const Row rows[] = {
        {BEKC_XLA_DTYPE_PRED, BE::DType::Bool, 1},
        {BEKC_XLA_DTYPE_S8, BE::DType::Int8, 1},
        {BEKC_XLA_DTYPE_S16, BE::DType::Int16, 2},
        {BEKC_XLA_DTYPE_S32, BE::DType::Int32, 4},
        {BEKC_XLA_DTYPE_S64, BE::DType::Int64, 8},
        {BEKC_XLA_DTYPE_U8, BE::DType::UInt8, 1},
        {BEKC_XLA_DTYPE_U16, BE::DType::UInt16, 2},
        {BEKC_XLA_DTYPE_U32, BE::DType::UInt32, 4},
        {BEKC_XLA_DTYPE_U64, BE::DType::UInt64, 8},
        {BEKC_XLA_DTYPE_F16, BE::DType::Float16, 2},
        {BEKC_XLA_DTYPE_F32, BE::DType::Float32, 4},
        {BEKC_XLA_DTYPE_F64, BE::DType::Float64, 8},
        {BEKC_XLA_DTYPE_C64, BE::DType::Complex64, 8},
        {BEKC_XLA_DTYPE_BF16, BE::DType::BFloat16, 2},
        {BEKC_XLA_DTYPE_C128, BE::DType::Complex128, 16},
    };
    for (const Row& r : rows) {
        INFO("XLA dtype " << r.xla);
        alignas(16) unsigned char data[3 * 16] = {0x42};
        std::vector<int64_t> info(24, -99);
        FrameBuilder fb;
        fb.arg(r.xla, data, {3}).ret(BEKC_XLA_DTYPE_S64, info.data(), {24});
        REQUIRE(call("describe", fb.frame()).ok);
        CHECK(info[2] == static_cast<int64_t>(r.be));
        CHECK(info[3] == r.size);
        CHECK(info[4] == 3 * r.size);
        CHECK(info[22] == 0x42);
    }
}

TEST_CASE("several outputs of different shapes", "[cpu]") {
    std::vector<float> x = random_floats(12, 3), w = random_floats(12, 4);
    float total = -777.0f;
    std::vector<float> prod(12, -777.0f), rows(3, -777.0f);
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {3, 4})
        .arg(BEKC_XLA_DTYPE_F32, w.data(), {3, 4})
        .ret(BEKC_XLA_DTYPE_F32, &total, {})
        .ret(BEKC_XLA_DTYPE_F32, prod.data(), {3, 4})
        .ret(BEKC_XLA_DTYPE_F32, rows.data(), {3});
    REQUIRE(call("stats", fb.frame()).ok);
    double t = 0;
    for (float v : x) t += v;
    CHECK(total == static_cast<float>(t));
    for (int i = 0; i < 12; ++i) CHECK(prod[i] == x[i] * w[i]);
    for (int r = 0; r < 3; ++r) {
        float s = 0;
        for (int j = 0; j < 4; ++j) s += x[r * 4 + j];
        CHECK(rows[r] == s);
    }
}

TEST_CASE("BE_DISPATCH_FLOATING runs the float32 and float64 instantiations", "[cpu]") {
    std::vector<float> xf = random_floats(5, 5), yf = random_floats(5, 6), of(5, -777.0f);
    FrameBuilder f32;
    f32.arg(BEKC_XLA_DTYPE_F32, xf.data(), {5})
        .arg(BEKC_XLA_DTYPE_F32, yf.data(), {5})
        .ret(BEKC_XLA_DTYPE_F32, of.data(), {5})
        .attr("alpha", BEKC_XLA_DTYPE_F64, 1.5);
    REQUIRE(call("axpy", f32.frame()).ok);
    for (int i = 0; i < 5; ++i) CHECK(of[i] == 1.5f * xf[i] + yf[i]);

    std::vector<double> xd = {1.25, -2.5, 3.0e300}, yd = {0.5, 1e-300, -1.0}, od(3, -777.0);
    FrameBuilder f64;
    f64.arg(BEKC_XLA_DTYPE_F64, xd.data(), {3})
        .arg(BEKC_XLA_DTYPE_F64, yd.data(), {3})
        .ret(BEKC_XLA_DTYPE_F64, od.data(), {3})
        .attr("alpha", BEKC_XLA_DTYPE_F64, 0.1);
    REQUIRE(call("axpy", f64.frame()).ok);
    for (int i = 0; i < 3; ++i) CHECK(od[i] == 0.1 * xd[i] + yd[i]);
}

TEST_CASE("BE_DISPATCH_INTEGRAL runs every integer instantiation", "[cpu]") {
    auto run = [](int32_t xla, auto sample) {
        using T = decltype(sample);
        INFO("XLA dtype " << xla);
        std::vector<T> a = {static_cast<T>(5), static_cast<T>(-3), std::numeric_limits<T>::max(),
                            static_cast<T>(17)};
        std::vector<T> out(a.size(), static_cast<T>(99));
        FrameBuilder fb;
        fb.arg(xla, a.data(), {2, 2}).ret(xla, out.data(), {2, 2});
        REQUIRE(call("int_affine", fb.frame()).ok);
        for (size_t i = 0; i < a.size(); ++i)
            CHECK(out[i] == static_cast<T>(static_cast<T>(3) * a[i] - static_cast<T>(1)));
    };
    run(BEKC_XLA_DTYPE_S8, int8_t{});
    run(BEKC_XLA_DTYPE_S16, int16_t{});
    run(BEKC_XLA_DTYPE_S32, int32_t{});
    run(BEKC_XLA_DTYPE_S64, int64_t{});
    run(BEKC_XLA_DTYPE_U8, uint8_t{});
    run(BEKC_XLA_DTYPE_U16, uint16_t{});
    run(BEKC_XLA_DTYPE_U32, uint32_t{});
    run(BEKC_XLA_DTYPE_U64, uint64_t{});
}

// ---------------------------------------------------------------- exceptions

TEST_CASE(
    "a failing BE_CHECK is an INTERNAL error with target, file:line and text; the next call works",
    "[cpu]") {
    const auto src = kernel("handlers_cpu.cpp");
    std::vector<float> x = random_floats(4, 7), y(4, -777.0f);
    for (int round = 0; round < 3; ++round) {
        FrameBuilder bad;
        bad.arg(BEKC_XLA_DTYPE_F32, x.data(), {4})
            .ret(BEKC_XLA_DTYPE_F32, y.data(), {4})
            .attr("n", BEKC_XLA_DTYPE_S32, int32_t{-3});
        require_error(call("checked", bad.frame()), kInternal,
                      "handlers_cpu.checked: " + src.string() + ":" +
                          std::to_string(line_of(src, "BE_CHECK(n > 0)")) +
                          ": BE_CHECK(n > 0) failed: n must be positive, got -3");
        FrameBuilder good;
        good.arg(BEKC_XLA_DTYPE_F32, x.data(), {4})
            .ret(BEKC_XLA_DTYPE_F32, y.data(), {4})
            .attr("n", BEKC_XLA_DTYPE_S32, int32_t{3});
        REQUIRE(call("checked", good.frame()).ok);
        for (int i = 0; i < 4; ++i) CHECK(y[i] == x[i] * 3);
        std::fill(y.begin(), y.end(), -777.0f);
    }
}

TEST_CASE("an unsupported dtype in BE_DISPATCH_FLOATING is an INTERNAL error naming it", "[cpu]") {
    const auto src = kernel("handlers_cpu.cpp");
    int32_t x[2] = {1, 2}, y[2] = {3, 4}, o[2] = {5, 6};
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_S32, x, {2})
        .arg(BEKC_XLA_DTYPE_S32, y, {2})
        .ret(BEKC_XLA_DTYPE_S32, o, {2})
        .attr("alpha", BEKC_XLA_DTYPE_F64, 1.0);
    // __LINE__ in a macro invocation that spans lines is the line of the macro's name.
    require_error(call("axpy", fb.frame()), kInternal,
                  "handlers_cpu.axpy: " + src.string() + ":" +
                      std::to_string(line_of(src, "BE_DISPATCH_FLOATING(x.dtype()")) +
                      ": BE_DISPATCH_FLOATING(x.dtype()): unsupported dtype int32 "
                      "(supported: float32, float64)");
    CHECK(o[0] == 5);
}

TEST_CASE("data_ptr<T>() on a buffer of another width is an INTERNAL error naming it", "[cpu]") {
    // `stats` reads and writes float32 without checking dtypes; data_ptr<float>()
    // stops it before it reads or writes past a buffer of another width.
    const auto src = kernel("handlers_cpu.cpp");
    auto at = [&](const char* needle) {
        return "handlers_cpu.stats: " + src.string() + ":" + std::to_string(line_of(src, needle)) +
               ": ";
    };
    const std::string hint = "; check the dtype first, or dispatch on it (BE_DISPATCH_*)";
    std::vector<double> wide(12, 1.5);
    std::vector<float> x = random_floats(12, 11), prod(12, -777.0f), rows(3, -777.0f);
    float total = -777.0f;
    SECTION("argument 0 is float64") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F64, wide.data(), {3, 4})
            .arg(BEKC_XLA_DTYPE_F32, x.data(), {3, 4})
            .ret(BEKC_XLA_DTYPE_F32, &total, {})
            .ret(BEKC_XLA_DTYPE_F32, prod.data(), {3, 4})
            .ret(BEKC_XLA_DTYPE_F32, rows.data(), {3});
        require_error(call("stats", fb.frame()), kInternal,
                      at("const float* a = x.data_ptr<float>()") +
                          "data_ptr<float>() on argument 0 (float64): float has 4 bytes, float64 "
                          "elements have 8" +
                          hint);
    }
    SECTION("result 1 is int16") {
        std::vector<int16_t> narrow(12, 99);
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {3, 4})
            .arg(BEKC_XLA_DTYPE_F32, x.data(), {3, 4})
            .ret(BEKC_XLA_DTYPE_F32, &total, {})
            .ret(BEKC_XLA_DTYPE_S16, narrow.data(), {3, 4})
            .ret(BEKC_XLA_DTYPE_F32, rows.data(), {3});
        require_error(call("stats", fb.frame()), kInternal,
                      at("prod.data_ptr<float>()") +
                          "data_ptr<float>() on result 1 (int16): float has 4 bytes, int16 "
                          "elements have 2" +
                          hint);
        CHECK(std::all_of(narrow.begin(), narrow.end(), [](int16_t v) { return v == 99; }));
    }
    SECTION("a same-width view is allowed: int32 read as float") {
        std::vector<int32_t> bits(12, 0x3F800000);  // the bits of 1.0f
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_S32, bits.data(), {3, 4})
            .arg(BEKC_XLA_DTYPE_U32, bits.data(), {3, 4})
            .ret(BEKC_XLA_DTYPE_F32, &total, {})
            .ret(BEKC_XLA_DTYPE_F32, prod.data(), {3, 4})
            .ret(BEKC_XLA_DTYPE_F32, rows.data(), {3});
        REQUIRE(call("stats", fb.frame()).ok);
        CHECK(total == 12.0f);
        CHECK(rows[2] == 4.0f);
    }
    CHECK(std::all_of(prod.begin(), prod.end(), [](float v) { return v == -777.0f || v == 1.0f; }));
}

TEST_CASE("std::exception and non-standard exceptions become INTERNAL errors", "[cpu]") {
    float x = 1.0f, y = -777.0f;
    FrameBuilder a;
    a.arg(BEKC_XLA_DTYPE_F32, &x, {}).ret(BEKC_XLA_DTYPE_F32, &y, {});
    require_error(call("throws_std", a.frame()), kInternal,
                  "handlers_cpu.throws_std: a plain std::runtime_error");
    FrameBuilder b;
    b.arg(BEKC_XLA_DTYPE_F32, &x, {}).ret(BEKC_XLA_DTYPE_F32, &y, {});
    require_error(call("throws_int", b.frame()), kInternal,
                  "handlers_cpu.throws_int: unknown C++ exception");
}

// ---------------------------------------------------------------- error paths

TEST_CASE("the valid affine call succeeds (baseline of the error tests)", "[cpu]") {
    AffineCall c;
    REQUIRE(call("affine", c.fb.frame()).ok);
    for (size_t i = 0; i < c.x.size(); ++i) CHECK(c.y[i] == 2.0f * c.x[i] - 0.5f);
}

TEST_CASE("wrong number of arguments, results or attributes", "[cpu]") {
    std::vector<float> x = random_floats(6, 2), y(6, -777.0f);
    SECTION("two arguments") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {6}).arg(BEKC_XLA_DTYPE_F32, x.data(), {6});
        fb.ret(BEKC_XLA_DTYPE_F32, y.data(), {6})
            .attr("a", BEKC_XLA_DTYPE_F32, 1.0f)
            .attr("b", BEKC_XLA_DTYPE_F32, 1.0f);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "expected 1 arguments, got 2");
    }
    SECTION("no argument") {
        FrameBuilder fb;
        fb.ret(BEKC_XLA_DTYPE_F32, y.data(), {6})
            .attr("a", BEKC_XLA_DTYPE_F32, 1.0f)
            .attr("b", BEKC_XLA_DTYPE_F32, 1.0f);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "expected 1 arguments, got 0");
    }
    SECTION("two results") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {6}).ret(BEKC_XLA_DTYPE_F32, y.data(), {6});
        fb.ret(BEKC_XLA_DTYPE_F32, y.data(), {6})
            .attr("a", BEKC_XLA_DTYPE_F32, 1.0f)
            .attr("b", BEKC_XLA_DTYPE_F32, 1.0f);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "expected 1 results, got 2");
    }
    SECTION("one attribute") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {6}).ret(BEKC_XLA_DTYPE_F32, y.data(), {6});
        fb.attr("a", BEKC_XLA_DTYPE_F32, 1.0f);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "expected 2 attributes, got 1");
    }
    SECTION("three attributes") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {6}).ret(BEKC_XLA_DTYPE_F32, y.data(), {6});
        fb.attr("a", BEKC_XLA_DTYPE_F32, 1.0f)
            .attr("b", BEKC_XLA_DTYPE_F32, 1.0f)
            .attr("c", BEKC_XLA_DTYPE_F32, 1.0f);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "expected 2 attributes, got 3");
    }
    SECTION("no attributes for a function with ten") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {6});
        for (int i = 0; i < 10; ++i) fb.ret(BEKC_XLA_DTYPE_F32, y.data(), {});
        require_error(call("attrs_small", fb.frame()), kInvalidArgument,
                      "handlers_cpu.attrs_small: expected 10 attributes, got 0");
    }
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == -777.0f; }));
}

TEST_CASE("wrong attribute name", "[cpu]") {
    std::vector<float> x = random_floats(6, 2), y(6, -777.0f);
    SECTION("second attribute renamed") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {6}).ret(BEKC_XLA_DTYPE_F32, y.data(), {6});
        fb.attr("a", BEKC_XLA_DTYPE_F32, 1.0f).attr("c", BEKC_XLA_DTYPE_F32, 1.0f);
        require_error(
            call("affine", fb.frame()), kInvalidArgument,
            kAffine + "unexpected attribute 'c' (expected 'b'; attributes are matched by name)");
    }
    SECTION("case matters") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {6}).ret(BEKC_XLA_DTYPE_F32, y.data(), {6});
        fb.attr("A", BEKC_XLA_DTYPE_F32, 1.0f).attr("b", BEKC_XLA_DTYPE_F32, 1.0f);
        require_error(
            call("affine", fb.frame()), kInvalidArgument,
            kAffine + "unexpected attribute 'A' (expected 'a'; attributes are matched by name)");
    }
    SECTION("a prefix of the name") {
        FrameBuilder ax;
        std::vector<float> w = random_floats(6, 3);
        ax.arg(BEKC_XLA_DTYPE_F32, x.data(), {6}).arg(BEKC_XLA_DTYPE_F32, w.data(), {6});
        ax.ret(BEKC_XLA_DTYPE_F32, y.data(), {6}).attr("alph", BEKC_XLA_DTYPE_F64, 1.0);
        require_error(
            call("axpy", ax.frame()), kInvalidArgument,
            "handlers_cpu.axpy: unexpected attribute 'alph' (expected 'alpha'; attributes "
            "are matched by name)");
    }
    SECTION("not sorted by name") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {6}).ret(BEKC_XLA_DTYPE_F32, y.data(), {6});
        fb.attr("b", BEKC_XLA_DTYPE_F32, 1.0f)
            .attr("a", BEKC_XLA_DTYPE_F32, 1.0f)
            .keep_attr_order();
        require_error(
            call("affine", fb.frame()), kInvalidArgument,
            kAffine + "unexpected attribute 'b' (expected 'a'; attributes are matched by name)");
    }
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == -777.0f; }));
}

TEST_CASE("wrong scalar dtype or attribute kind", "[cpu]") {
    std::vector<float> x = random_floats(6, 2), y(6, -777.0f);
    auto frame_with_a = [&](FrameBuilder& fb) -> FrameBuilder& {
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {6}).ret(BEKC_XLA_DTYPE_F32, y.data(), {6});
        fb.attr("b", BEKC_XLA_DTYPE_F32, 1.0f);
        return fb;
    };
    const std::string hint =
        " (pass e.g. np.float32(value), or call through bekc.load, which casts)";
    SECTION("int32 for float32") {
        FrameBuilder fb;
        frame_with_a(fb).attr("a", BEKC_XLA_DTYPE_S32, int32_t{2});
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "attribute 'a' must be float32, got int32" + hint);
    }
    SECTION("float64 for float32") {
        FrameBuilder fb;
        frame_with_a(fb).attr("a", BEKC_XLA_DTYPE_F64, 2.0);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "attribute 'a' must be float32, got float64" + hint);
    }
    SECTION("float16 for float32") {
        FrameBuilder fb;
        frame_with_a(fb).attr("a", BEKC_XLA_DTYPE_F16, uint16_t{0x3C00});
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "attribute 'a' must be float32, got float16" + hint);
    }
    SECTION("half attributes: raw bits as uint16 (how JAX must send them) or typed") {
        // XLA refuses F16/BF16 scalar attributes, so callers send the bits as U16.
        auto run = [](int32_t h_dtype, int32_t bh_dtype) {
            float in = 1.0f;
            Slot o[10];
            FrameBuilder fb;
            fb.arg(BEKC_XLA_DTYPE_F32, &in, {});
            const int32_t d[10] = {1, 2, 6, 3, 7, 4, 8, 11, 10, 16};
            for (int i = 0; i < 10; ++i) fb.ret(d[i], o[i].bytes, {});
            fb.attr("zb", BEKC_XLA_DTYPE_PRED, true)
                .attr("Yi8", BEKC_XLA_DTYPE_S8, int8_t{1})
                .attr("xu8", BEKC_XLA_DTYPE_U8, uint8_t{1})
                .attr("wi16", BEKC_XLA_DTYPE_S16, int16_t{1})
                .attr("vu16", BEKC_XLA_DTYPE_U16, uint16_t{1})
                .attr("ui32", BEKC_XLA_DTYPE_S32, int32_t{1})
                .attr("tu32", BEKC_XLA_DTYPE_U32, uint32_t{1})
                .attr("af32", BEKC_XLA_DTYPE_F32, 1.0f)
                .attr("bh", h_dtype, uint16_t{0x3C00})
                .attr("cbh", bh_dtype, uint16_t{0x3F80});
            Outcome r = call("attrs_small", fb.frame());
            std::vector<std::vector<unsigned char>> got = {o[8].first<uint16_t>(),
                                                           o[9].first<uint16_t>()};
            return std::make_pair(r, got);
        };
        for (auto [h, bh] : {std::pair{BEKC_XLA_DTYPE_U16, BEKC_XLA_DTYPE_U16},
                             {BEKC_XLA_DTYPE_F16, BEKC_XLA_DTYPE_U16},
                             {BEKC_XLA_DTYPE_U16, BEKC_XLA_DTYPE_BF16}}) {
            auto [r, got] = run(h, bh);
            INFO(r.message);
            REQUIRE(r.ok);
            CHECK(got[0] == bytes_of(uint16_t{0x3C00}));
            CHECK(got[1] == bytes_of(uint16_t{0x3F80}));
        }
        require_error(run(BEKC_XLA_DTYPE_S16, BEKC_XLA_DTYPE_U16).first, kInvalidArgument,
                      "handlers_cpu.attrs_small: attribute 'bh' must be float16 (its bits as a "
                      "uint16 scalar), got int16 (pass e.g. np.float16(value).view(np.uint16), or "
                      "call through bekc.load, which casts)");
        require_error(
            run(BEKC_XLA_DTYPE_U16, BEKC_XLA_DTYPE_F32).first, kInvalidArgument,
            "handlers_cpu.attrs_small: attribute 'cbh' must be bfloat16 (its bits as a "
            "uint16 scalar), got float32 (pass e.g. ml_dtypes.bfloat16(value).view(np.uint16), "
            "or call through bekc.load, which casts)");
        require_error(
            run(BEKC_XLA_DTYPE_BF16, BEKC_XLA_DTYPE_U16).first, kInvalidArgument,
            "handlers_cpu.attrs_small: attribute 'bh' must be float16 (its bits as a "
            "uint16 scalar), got bfloat16 (pass e.g. np.float16(value).view(np.uint16), or "
            "call through bekc.load, which casts)");
    }
    SECTION("uint16 for int16 is still wrong") {
        float in = 1.0f;
        Slot o[10];
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, &in, {});
        const int32_t d[10] = {1, 2, 6, 3, 7, 4, 8, 11, 10, 16};
        for (int i = 0; i < 10; ++i) fb.ret(d[i], o[i].bytes, {});
        fb.attr("zb", BEKC_XLA_DTYPE_PRED, true)
            .attr("Yi8", BEKC_XLA_DTYPE_S8, int8_t{1})
            .attr("xu8", BEKC_XLA_DTYPE_U8, uint8_t{1})
            .attr("wi16", BEKC_XLA_DTYPE_U16, uint16_t{1})
            .attr("vu16", BEKC_XLA_DTYPE_U16, uint16_t{1})
            .attr("ui32", BEKC_XLA_DTYPE_S32, int32_t{1})
            .attr("tu32", BEKC_XLA_DTYPE_U32, uint32_t{1})
            .attr("af32", BEKC_XLA_DTYPE_F32, 1.0f)
            .attr("bh", BEKC_XLA_DTYPE_F16, uint16_t{0x3C00})
            .attr("cbh", BEKC_XLA_DTYPE_BF16, uint16_t{0x3F80});
        require_error(
            call("attrs_small", fb.frame()), kInvalidArgument,
            "handlers_cpu.attrs_small: attribute 'wi16' must be int16, got uint16 (pass e.g. "
            "np.int16(value), or call through bekc.load, which casts)");
        for (const Slot& s : o) CHECK(s.untouched());
    }
    SECTION("int32 for int64") {
        float in = 1.0f;
        Slot o[3];
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, &in, {})
            .ret(BEKC_XLA_DTYPE_S64, o[0].bytes, {})
            .ret(BEKC_XLA_DTYPE_U64, o[1].bytes, {})
            .ret(BEKC_XLA_DTYPE_F64, o[2].bytes, {})
            .attr("mu64", BEKC_XLA_DTYPE_U64, uint64_t{1})
            .attr("f64", BEKC_XLA_DTYPE_F64, 1.0)
            .attr("i64", BEKC_XLA_DTYPE_S32, int32_t{1});
        require_error(
            call("attrs_wide", fb.frame()), kInvalidArgument,
            "handlers_cpu.attrs_wide: attribute 'i64' must be int64, got int32 (pass e.g. "
            "np.int64(value), or call through bekc.load, which casts)");
    }
    SECTION("an array attribute") {
        FrameBuilder fb;
        frame_with_a(fb).attr_of_kind("a", BEKC_XLA_ATTR_ARRAY);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "attribute 'a' must be a scalar");
    }
    SECTION("a string attribute") {
        FrameBuilder fb;
        frame_with_a(fb).attr_of_kind("a", BEKC_XLA_ATTR_STRING);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "attribute 'a' must be a scalar");
    }
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == -777.0f; }));
}

TEST_CASE("wrong execution stage", "[cpu]") {
    for (int32_t stage : {0, 1, 2, 4, 17}) {
        AffineCall c;
        BekcXla_CallFrame& f = c.fb.frame();
        f.stage = stage;
        require_error(
            call("affine", f), kInvalidArgument,
            kAffine + "wrong execution stage: expected 3 (execute), got " + std::to_string(stage));
        CHECK(c.output_untouched());
    }
}

TEST_CASE("call frame struct_size: too small is an error, larger (a newer XLA) is fine", "[cpu]") {
    for (size_t size : {size_t{0}, size_t{8}, size_t{160}, size_t{167}}) {
        AffineCall c;
        BekcXla_CallFrame& f = c.fb.frame();
        f.struct_size = size;
        require_error(
            call("affine", f), kInvalidArgument,
            kAffine + "call frame is " + std::to_string(size) + " bytes, expected at least 168");
        CHECK(c.output_untouched());
    }
    for (size_t size : {size_t{168}, size_t{176}, size_t{256}}) {
        AffineCall c;
        BekcXla_CallFrame& f = c.fb.frame();
        f.struct_size = size;
        CHECK(call("affine", f).ok);
        CHECK_FALSE(c.output_untouched());
    }
}

TEST_CASE("buffer dtypes without a BE::DType are rejected, never a zero-sized tensor", "[cpu]") {
    struct Case {
        int32_t dtype;
        const char* name;
    };
    const Case cases[] = {{20, "float8_e4m3fn"}, {19, "float8_e5m2"},     {21, "int4"},
                          {17, "token"},         {0, "invalid"},          {33, "float8_e8m0fnu"},
                          {13, "type 13"},       {99, "an unknown type"}, {-1, "an unknown type"}};
    for (const Case& k : cases) {
        INFO("dtype " << k.dtype);
        {
            AffineCall c;
            c.fb.arg_buffer(0).dtype = k.dtype;
            require_error(
                call("affine", c.fb.frame()), kInvalidArgument,
                kAffine + "argument 0 has dtype " + k.name + ", which BE::Tensor cannot represent");
            CHECK(c.output_untouched());
        }
        {
            AffineCall c;
            c.fb.ret_buffer(0).dtype = k.dtype;
            require_error(
                call("affine", c.fb.frame()), kInvalidArgument,
                kAffine + "result 0 has dtype " + k.name + ", which BE::Tensor cannot represent");
            CHECK(c.output_untouched());
        }
    }
    // The second buffer of several is named by its own index.
    std::vector<float> x = random_floats(4, 9), y(4), w(4);
    float total;
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F32, x.data(), {4})
        .arg(BEKC_XLA_DTYPE_F8E4M3FN, x.data(), {4})
        .ret(BEKC_XLA_DTYPE_F32, &total, {})
        .ret(BEKC_XLA_DTYPE_F32, y.data(), {4})
        .ret(BEKC_XLA_DTYPE_F32, w.data(), {1});
    require_error(call("stats", fb.frame()), kInvalidArgument,
                  "handlers_cpu.stats: argument 1 has dtype float8_e4m3fn, which BE::Tensor cannot "
                  "represent");
}

TEST_CASE("rank above 8 (or negative) is rejected", "[cpu]") {
    std::vector<float> x = random_floats(512, 4), y(512, -777.0f);
    std::vector<int64_t> nine(9, 2), eight(8, 2);
    SECTION("argument of rank 9") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), nine).ret(BEKC_XLA_DTYPE_F32, y.data(), {512});
        fb.attr("a", BEKC_XLA_DTYPE_F32, 1.0f).attr("b", BEKC_XLA_DTYPE_F32, 1.0f);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "argument 0 has rank 9; BE::Tensor supports 0 to 8 dimensions");
    }
    SECTION("result of rank 9") {
        FrameBuilder fb;
        fb.arg(BEKC_XLA_DTYPE_F32, x.data(), eight).ret(BEKC_XLA_DTYPE_F32, y.data(), nine);
        fb.attr("a", BEKC_XLA_DTYPE_F32, 1.0f).attr("b", BEKC_XLA_DTYPE_F32, 1.0f);
        require_error(call("affine", fb.frame()), kInvalidArgument,
                      kAffine + "result 0 has rank 9; BE::Tensor supports 0 to 8 dimensions");
    }
    SECTION("negative rank") {
        AffineCall c;
        c.fb.arg_buffer(0).rank = -1;
        require_error(call("affine", c.fb.frame()), kInvalidArgument,
                      kAffine + "argument 0 has rank -1; BE::Tensor supports 0 to 8 dimensions");
    }
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == -777.0f; }));
}

TEST_CASE("an argument or result that is not a buffer", "[cpu]") {
    {
        AffineCall c;
        BekcXla_CallFrame& f = c.fb.frame();
        c.fb.arg_types()[0] = 2;
        require_error(call("affine", f), kInvalidArgument, kAffine + "argument 0 is not a buffer");
    }
    {
        AffineCall c;
        BekcXla_CallFrame& f = c.fb.frame();
        c.fb.ret_types()[0] = 0;
        require_error(call("affine", f), kInvalidArgument, kAffine + "result 0 is not a buffer");
    }
}

TEST_CASE("a negative dimension is an INVALID_ARGUMENT error before the user's code runs",
          "[cpu]") {
    AffineCall c;
    c.fb.arg_buffer(0).dims[0] = -2;
    Outcome o = call("affine", c.fb.frame());
    REQUIRE_FALSE(o.ok);
    CHECK(o.code == kInvalidArgument);
    INFO(o.message);
    CHECK(o.message == kAffine + "argument 0 has a negative dimension 0: -2");
    CHECK(c.output_untouched());
}

TEST_CASE("a CPU handler never asks for a stream", "[cpu]") {
    AffineCall c;
    REQUIRE(call("affine", c.fb.frame()).ok);
    CHECK(harness::api_log().stream_gets == 0);
}

// ---------------------------------------------------------------- CUDA (stream)

#ifdef HARNESS_WITH_CUDA
namespace {
// A .cu library built with nvcc for sm_90; its handler is called with host
// memory and never launches, so no GPU is needed.
const BuiltLibrary& cuda() {
    static const std::unique_ptr<BuiltLibrary> lib = std::make_unique<BuiltLibrary>(
        bekc_binary(), kernel("handlers_stream.cu"), std::vector<std::string>{"--arch", "sm_90"});
    return *lib;
}
}  // namespace

TEST_CASE("CUDA handler: the stream comes from Stream_Get with the frame's context", "[cuda]") {
    const harness::Target& t = cuda().target("stream_probe");
    CHECK(t.platform == "CUDA");
    CHECK(t.symbol == "bekc_ffi_stream_probe");
    float x = 1.0f;
    int64_t out = -1;
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F32, &x, {})
        .ret(BEKC_XLA_DTYPE_S64, &out, {})
        .attr("launch", BEKC_XLA_DTYPE_PRED, false);
    BekcXla_CallFrame& f = fb.frame();
    static int fake_stream_object;
    harness::api_log().stream = &fake_stream_object;
    Outcome o = call(cuda().handler("stream_probe"), f);
    harness::api_log().stream = nullptr;
    REQUIRE(o.ok);
    CHECK(out == reinterpret_cast<int64_t>(&fake_stream_object));
    CHECK(harness::api_log().stream_gets == 1);
    CHECK(harness::api_log().stream_get_struct_size == BEKC_XLA_STREAM_GET_ARGS_STRUCT_SIZE);
    CHECK(harness::api_log().stream_get_ctx == fb.ctx());
}

TEST_CASE("CUDA handler: an error from Stream_Get is returned as is, the kernel not called",
          "[cuda]") {
    float x = 1.0f;
    int64_t out = -1;
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F32, &x, {})
        .ret(BEKC_XLA_DTYPE_S64, &out, {})
        .attr("launch", BEKC_XLA_DTYPE_PRED, false);
    auto* stream_error = new BekcXla_Error{BEKC_XLA_ERROR_UNAVAILABLE, "no stream today"};
    harness::api_log().stream_error = stream_error;
    reset_log();
    BekcXla_Error* e = cuda().handler("stream_probe")(&fb.frame());
    harness::api_log().stream_error = nullptr;
    CHECK(e == stream_error);
    CHECK(harness::api_log().error_creates == 0);
    CHECK(out == -1);
    delete stream_error;
}

TEST_CASE("CUDA handler: metadata and the checks before the stream", "[cuda]") {
    check_metadata(cuda().find("bekc_ffi_stream_probe"), true, harness::fake_api(), false);
    check_metadata(cuda().find("bekc_ffi_stream_probe_nograph"), false, nullptr, true);
    float x = 1.0f;
    int64_t out = -1;
    FrameBuilder fb;
    fb.arg(BEKC_XLA_DTYPE_F32, &x, {})
        .ret(BEKC_XLA_DTYPE_S64, &out, {})
        .attr("launch", BEKC_XLA_DTYPE_S32, 0);
    require_error(
        call(cuda().handler("stream_probe"), fb.frame()), kInvalidArgument,
        "handlers_stream.stream_probe: attribute 'launch' must be bool, got int32 (pass e.g. "
        "np.bool_(value), or call through bekc.load, which casts)");
    CHECK(harness::api_log().stream_gets == 0);
}
#endif
