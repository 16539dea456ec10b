// cpu_connectivity.cpp -- build random CSR connectivity on the host.
//
// Mixed linkage and storage: extern "C" entry points for a C harness, static
// and inline ones for internal use, templated helpers in nested namespaces,
// and a function that is declared before it is defined.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>
#include "brainevent/common.h"

namespace brainevent {
namespace conn {
namespace detail {

template <typename Rng>
std::vector<int32_t> sample_row(Rng& rng, int32_t n_post, double prob, bool allow_self,
                                int32_t self) {
    std::vector<int32_t> cols;
    std::bernoulli_distribution coin(prob);
    for (int32_t j = 0; j < n_post; ++j)
        if ((allow_self || j != self) && coin(rng)) cols.push_back(j);
    return cols;
}

template <typename Idx>
void write_csr(const std::vector<std::vector<int32_t>>& rows, BE::Tensor& indices,
               BE::Tensor& indptr) {
    Idx* ptr = indptr.data_ptr<Idx>();
    Idx* idx = indices.data_ptr<Idx>();
    ptr[0] = 0;
    Idx k = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
        for (int32_t c : rows[r]) {
            BE_CHECK(k < indices.numel()) << "connectivity: indices buffer too small";
            idx[k++] = static_cast<Idx>(c);
        }
        ptr[r + 1] = k;
    }
    std::fill(idx + k, idx + indices.numel(), Idx(-1));
}

}  // namespace detail
}  // namespace conn
}  // namespace brainevent

namespace bc = brainevent::conn;

// Declared here (with its annotation), defined at the end of the file.
// @BE conn_fixed_prob_i64
void conn_fixed_prob_i64(BE::Tensor indices, BE::Tensor indptr,
                         double prob, uint64_t seed, bool allow_self);

// @BE conn_fixed_prob_i32
extern "C" void conn_fixed_prob_i32(BE::Tensor indices, BE::Tensor indptr,
                                    double prob, uint64_t seed, bool allow_self) {
    const int32_t n_pre = static_cast<int32_t>(indptr.numel() - 1);
    std::mt19937_64 rng(seed);
    std::vector<std::vector<int32_t>> rows(n_pre);
    for (int32_t i = 0; i < n_pre; ++i)
        rows[i] = bc::detail::sample_row(rng, n_pre, prob, allow_self, i);
    bc::detail::write_csr<int32_t>(rows, indices, indptr);
}

// @BE conn_fixed_in_degree
static void conn_fixed_in_degree(const BE::Tensor n_post_tensor, BE::Tensor indices,
                                 BE::Tensor indptr, int32_t in_degree, uint32_t seed) {
    const int32_t n_post = *n_post_tensor.data_ptr<int32_t>();
    const int32_t n_pre = static_cast<int32_t>(indptr.numel() - 1);
    std::mt19937 rng(seed);
    std::vector<int32_t> all(n_post);
    std::iota(all.begin(), all.end(), 0);
    std::vector<std::vector<int32_t>> rows(n_pre);
    for (int32_t i = 0; i < n_pre; ++i) {
        std::shuffle(all.begin(), all.end(), rng);
        rows[i].assign(all.begin(), all.begin() + std::min(in_degree, n_post));
        std::sort(rows[i].begin(), rows[i].end());
    }
    bc::detail::write_csr<int32_t>(rows, indices, indptr);
}

// @BE conn_row_lengths arg ret
inline void conn_row_lengths(const BE::Tensor indptr, BE::Tensor lengths) {
    const int32_t* p = indptr.data_ptr<int32_t>();
    int32_t* l = lengths.data_ptr<int32_t>();
    for (int64_t i = 0; i + 1 < indptr.numel(); ++i) l[i] = p[i + 1] - p[i];
}

extern "C" {
// @BE conn_nnz
void conn_nnz(const BE::Tensor& indptr, BE::Tensor nnz) {
    *nnz.data_ptr<int64_t>() = indptr.data_ptr<int32_t>()[indptr.numel() - 1];
}
}

void conn_fixed_prob_i64(BE::Tensor indices, BE::Tensor indptr,
                         double prob, uint64_t seed, bool allow_self) {
    const int64_t n_pre = indptr.numel() - 1;
    std::mt19937_64 rng(seed ^ 0x5bd1e995ull);
    std::vector<std::vector<int32_t>> rows(n_pre);
    for (int64_t i = 0; i < n_pre; ++i)
        rows[i] = bc::detail::sample_row(rng, static_cast<int32_t>(n_pre), prob, allow_self,
                                         static_cast<int32_t>(i));
    bc::detail::write_csr<int64_t>(rows, indices, indptr);
}
