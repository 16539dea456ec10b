#define A(x) x x x x x x x x x x
#define B(x) A(A(A(A(A(A(A(x)))))))
// @BE f
void f(BE::Tensor y) {}
B(1)
