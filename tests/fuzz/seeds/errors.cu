// @BE a agr ret
void a(const BE::Tensor x, BE::Tensor y) {}
// @BE b ret attr.k:flaot32
void b(BE::Tensor y, float k) {}
// @BE c ret stream stream
void c(BE::Tensor y, int64_t s, int64_t stream) {}
// @BE c
// @BE for
// @BE d ret attr.n
void d(BE::Tensor y, const int* n) {}
// @BE e
void e(BE::Tensor& y, float, cudaStream_t stream) {}
// @BE missing
