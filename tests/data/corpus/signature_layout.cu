// signature_layout.cu -- 1-D convolution, pooling, embedding and dropout.
//
// The signatures here are laid out the way people actually write them:
// split over many lines, commented per parameter, tab-indented, with
// references for read-only tensors.  All arg_specs are inferred.

#include <cuda_runtime.h>
#include <curand_kernel.h>
#include <cstdint>
#include "brainevent/common.h"

__global__ void conv1d_kernel(const float* x, const float* w, const float* b, float* y,
                              int64_t n_out, int64_t k, int32_t dilation) {
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i >= n_out) return;
	float acc = b ? b[0] : 0.f;
	for (int64_t j = 0; j < k; ++j) acc += x[i + j * dilation] * w[j];
	y[i] = acc;
}

__global__ void pool_kernel(const float* x, float* y, int64_t n_out, int32_t window,
                            int32_t stride_) {
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i >= n_out) return;
	float m = x[i * stride_];
	for (int32_t j = 1; j < window; ++j) m = fmaxf(m, x[i * stride_ + j]);
	y[i] = m;
}

__global__ void gather_rows(const float* table, const int32_t* ids, float* out,
                            int64_t n_ids, int64_t dim) {
	int64_t r = blockIdx.x;
	if (r >= n_ids) return;
	for (int64_t c = threadIdx.x; c < dim; c += blockDim.x)
		out[r * dim + c] = table[(int64_t)ids[r] * dim + c];
}

__global__ void dropout_kernel(const float* x, float* y, uint8_t* keep, int64_t n,
                               float p, uint64_t seed) {
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i >= n) return;
	curandStatePhilox4_32_10_t st;
	curand_init(seed, i, 0, &st);
	const bool k = curand_uniform(&st) >= p;
	keep[i] = k;
	y[i] = k ? x[i] / (1.f - p) : 0.f;
}

// @BE conv1d_valid_f32
void conv1d_valid_f32(
	const BE::Tensor x,       // input signal, shape (n,)
	const BE::Tensor weight,  // filter taps, shape (k,)
	const BE::Tensor bias,    /* shape (1,) -- may be all zeros */
	BE::Tensor y,             // output, shape (n - (k-1)*dilation,)
	int32_t dilation,         // >= 1
	int64_t stream            // cudaStream_t, cast below
) {
	BE_CHECK(dilation >= 1) << "conv1d_valid_f32: dilation must be >= 1";
	const int64_t k = weight.numel();
	const int64_t n_out = y.numel();
	conv1d_kernel<<<(unsigned)((n_out + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
		x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
		y.data_ptr<float>(), n_out, k, dilation);
	BE_CHECK_KERNEL_LAUNCH();
}

// @BE max_pool1d_f32
void
max_pool1d_f32 (const BE::Tensor x,
                BE::Tensor y,
                int32_t window,
                int32_t stride_,
                int64_t stream)
{
	const int64_t n_out = y.numel();
	pool_kernel<<<(unsigned)((n_out + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
		x.data_ptr<float>(), y.data_ptr<float>(), n_out, window, stride_);
	BE_CHECK_KERNEL_LAUNCH();
}

// Read-only tensors by const reference are inputs, like const by value.
// @BE embedding_lookup_f32
void embedding_lookup_f32(const BE::Tensor& table,
			  const BE::Tensor &ids,
			  BE::Tensor out,
			  int64_t stream) {
	BE_CHECK(table.ndim() == 2) << "embedding_lookup_f32: table must be 2-D";
	const int64_t n_ids = ids.numel(), dim = table.size(1);
	gather_rows<<<(unsigned)n_ids, 128, 0, (cudaStream_t)stream>>>(
		table.data_ptr<float>(), ids.data_ptr<int32_t>(), out.data_ptr<float>(),
		n_ids, dim);
	BE_CHECK_KERNEL_LAUNCH();
}

// @BE dropout_f32
void dropout_f32(const BE::Tensor x /* activations, any shape */,
                 BE::Tensor y /* scaled output, same shape as x */,
                 BE::Tensor keep /* uint8 mask (1 = kept), same shape */,
                 float p /* drop probability, in [0, 1) */,
                 uint64_t seed /* Philox seed */,
                 int64_t stream /* , trailing comma inside a comment */) {
	BE_CHECK(p >= 0.f && p < 1.f) << "dropout_f32: p must be in [0, 1)";
	const int64_t n = x.numel();
	dropout_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
		x.data_ptr<float>(), y.data_ptr<float>(), keep.data_ptr<uint8_t>(), n, p, seed);
	BE_CHECK_KERNEL_LAUNCH();
}

	// @BE  embedding_bag_sum_f32
	void  embedding_bag_sum_f32( const  BE::Tensor  table ,  const  BE::Tensor&  ids ,
				     BE::Tensor  out ,  int32_t  bag_size ,  int64_t  stream )
	{
		const int64_t n_bags = out.size(0), dim = table.size(1);
		BE_CHECK(ids.numel() == n_bags * bag_size) << "embedding_bag: bad ids length";
		BE_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), (cudaStream_t)stream));
		(void)dim;
	}
