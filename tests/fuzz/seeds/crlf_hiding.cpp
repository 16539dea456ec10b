// @BE f arg \
 ret attr.alpha
void f(const BE::Tensor& x, BE::Tensor y,
       /* c */ float alpha) {}
#if 0
// @BE g ret
#else
// @BE h
void h(BE::Tensor y) {}
#endif
const char* s = R"x(// @BE i ret)x";
