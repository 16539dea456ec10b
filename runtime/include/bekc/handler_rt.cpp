// The definitions of bekc/handler.h's support functions. bekc compiles this
// file once per host compiler (and runtime version) into an object in its
// cache, <cache>/runtime/<hash>/obj/<compiler>/bekc_rt.o, and links that
// object into every library it builds; the wrappers only declare them.
#define BEKC_RT_IMPLEMENTATION
#include "bekc/handler.h"
