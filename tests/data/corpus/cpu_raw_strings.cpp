// cpu_raw_strings.cpp -- spike raster encoding / decoding on the host.
//
// The module embeds a CUDA fallback as a raw string (compiled at run time by
// a JIT elsewhere).  Annotations inside that string are text, not exports.

#include <cstdint>
#include <cstring>
#include <string>
#include "brainevent/common.h"

static const char* kCudaFallback = R"cuda(
#include "brainevent/common.h"
// @BE raster_encode_cuda arg ret stream
void raster_encode_cuda(const BE::Tensor spikes, BE::Tensor packed, int64_t stream) {
    launch_pack(spikes, packed, (cudaStream_t)stream);   // ")" inside
}
)cuda";

static const char* kHelp = R"(Usage:
  // @BE raster_help arg ret
  Pack spikes 32 per word; see raster_encode.)";

static constexpr int64_t kMaxNeurons = 1'000'000;   // digit separators
static constexpr char kSep = '\'';
static constexpr char kSlash = '/';

const char* raster_fallback_source() { return kCudaFallback; }
const char* raster_help() { return kHelp; }

// Pack a [T, N] boolean raster into [T, ceil(N/32)] uint32 words.
// @BE raster_encode
void raster_encode(const BE::Tensor spikes, BE::Tensor packed) {
    BE_CHECK(spikes.ndim() == 2) << "raster_encode: expected [T, N], got rank "
                                 << spikes.ndim();
    const int64_t steps = spikes.size(0), n = spikes.size(1);
    BE_CHECK(n <= kMaxNeurons) << "raster_encode: at most " << kMaxNeurons << " neurons";
    const int64_t words = (n + 31) / 32;
    const bool* s = spikes.data_ptr<bool>();
    uint32_t* p = packed.data_ptr<uint32_t>();
    std::memset(p, 0, sizeof(uint32_t) * steps * words);
    for (int64_t t = 0; t < steps; ++t)
        for (int64_t i = 0; i < n; ++i)
            if (s[t * n + i]) p[t * words + i / 32] |= 1u << (i % 32);
}

// @BE raster_decode arg ret attr.n_neurons:int64
void raster_decode(const BE::Tensor packed, BE::Tensor spikes, int64_t n_neurons) {
    const int64_t steps = packed.size(0), words = packed.size(1);
    BE_CHECK((n_neurons + 31) / 32 == words) << "raster_decode: n_neurons " << n_neurons
                                             << " does not match " << words << " words";
    const uint32_t* p = packed.data_ptr<uint32_t>();
    bool* s = spikes.data_ptr<bool>();
    for (int64_t t = 0; t < steps; ++t)
        for (int64_t i = 0; i < n_neurons; ++i)
            s[t * n_neurons + i] = (p[t * words + i / 32] >> (i % 32)) & 1u;
}

// Delimiter characters in char literals must not confuse the scanner: '"' '/'
static char kQuoteChar = '"';

// @BE raster_count_per_step
void raster_count_per_step(const BE::Tensor packed, BE::Tensor counts) {
    (void)kSep; (void)kSlash; (void)kQuoteChar;
    const int64_t steps = packed.size(0), words = packed.size(1);
    const uint32_t* p = packed.data_ptr<uint32_t>();
    int32_t* c = counts.data_ptr<int32_t>();
    for (int64_t t = 0; t < steps; ++t) {
        int32_t k = 0;
        for (int64_t w = 0; w < words; ++w) k += __builtin_popcount(p[t * words + w]);
        c[t] = k;
    }
}

static std::string describe(const BE::Tensor& t) {
    std::string s = "Tensor(\"";
    s += BE::dtype_name(t.dtype());
    s += "\") // @BE not_an_export";
    return s;
}

// @BE raster_window_sum
void raster_window_sum(const BE::Tensor packed, BE::Tensor out, int32_t window,
                       bool normalize) {
    BE_CHECK(window > 0) << "raster_window_sum: " << describe(packed) << " window <= 0";
    const int64_t steps = packed.size(0), words = packed.size(1);
    const uint32_t* p = packed.data_ptr<uint32_t>();
    float* o = out.data_ptr<float>();
    for (int64_t t = 0; t < steps; ++t) {
        int64_t k = 0;
        for (int64_t u = t; u > t - window && u >= 0; --u)
            for (int64_t w = 0; w < words; ++w) k += __builtin_popcount(p[u * words + w]);
        o[t] = normalize ? float(k) / float(window) : float(k);
    }
}
