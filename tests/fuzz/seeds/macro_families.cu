#define PARAMS(T) const BE::Tensor x, BE::Tensor y, T alpha
#define INNER(NAME, T) void NAME(PARAMS(T), int64_t stream) {}
#define OUTER(S, T) INNER(scale##S, T)
#define PASTE(a, b) a##b
#define XPASTE(a, b) PASTE(a, b)
#define RULE(NAME, ...) void NAME(const BE::Tensor w, BE::Tensor out, __VA_ARGS__) {}
#define PAIR(OP, T) \
    void OP##_fwd(const BE::Tensor x, BE::Tensor y, T slope) {} \
    void OP##_bwd(const BE::Tensor x, const BE::Tensor dy, BE::Tensor dx, T slope) {}
// @BE scale_f16
OUTER(_f16, uint16_t)
// @BE stdp
RULE(stdp, float eta, double tau, bool clip)
// @BE leaky_fwd
// @BE leaky_bwd
PAIR(leaky, float)
// @BE axpy_f32 arg arg ret attr.alpha:float32 stream
BE_DEFINE_AXPY(_f32, float)
