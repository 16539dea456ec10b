f=arg,ret,attr.alpha:float32
void f(const BE::Tensor x, BE::Tensor y, float alpha) {}
void f(const BE::Tensor, BE::Tensor, float);
