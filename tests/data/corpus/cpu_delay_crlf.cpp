// cpu_delay_crlf.cpp -- ring buffers for axonal delays (host).
//
// Saved with CRLF line endings and tab indentation (it came from a Windows
// workstation).  One macro defines the push and the read of a dtype, so two
// annotations sit above each invocation.

#include <cstdint>
#include <cstring>
#include "brainevent/common.h"

namespace delay {

template <typename T>
void push(const T* buffer, const T* values, T* buffer_out, int64_t depth, int64_t n,
	  int32_t head) {
	std::memcpy(buffer_out, buffer, sizeof(T) * depth * n);
	std::memcpy(buffer_out + (int64_t)head * n, values, sizeof(T) * n);
}

template <typename T>
void read(const T* buffer, const int32_t* delays, T* out, int64_t depth, int64_t n,
	  int32_t head) {
	for (int64_t i = 0; i < n; ++i) {
		int64_t slot = (head - delays[i]) % depth;
		if (slot < 0) slot += depth;
		out[i] = buffer[slot * n + i];
	}
}

}  // namespace delay

#define BE_DEFINE_CPU_DELAY(SUFFIX, T)						\
	void cpu_delay_push##SUFFIX(const BE::Tensor	buffer,			\
				    const BE::Tensor	values,			\
				    BE::Tensor		buffer_out,		\
				    int32_t		head) {			\
		BE_CHECK(buffer.ndim() == 2) << "delay push: buffer must be [D, N]";	\
		delay::push<T>(buffer.data_ptr<T>(), values.data_ptr<T>(),	\
			       buffer_out.data_ptr<T>(), buffer.size(0),	\
			       buffer.size(1), head);				\
	}									\
	void cpu_delay_read##SUFFIX(const BE::Tensor	buffer,			\
				    const BE::Tensor	delays,			\
				    BE::Tensor		out,			\
				    int32_t		head) {			\
		delay::read<T>(buffer.data_ptr<T>(), delays.data_ptr<int32_t>(),	\
			       out.data_ptr<T>(), buffer.size(0),		\
			       buffer.size(1), head);				\
	}

// @BE cpu_delay_push_f32
// @BE cpu_delay_read_f32
BE_DEFINE_CPU_DELAY(_f32, float)

// @BE cpu_delay_push_f64
// @BE cpu_delay_read_f64
BE_DEFINE_CPU_DELAY(_f64, double)

// @BE cpu_delay_push_bool
// @BE cpu_delay_read_bool
BE_DEFINE_CPU_DELAY(_bool, bool)

// @BE cpu_delay_push_i32
// @BE cpu_delay_read_i32
BE_DEFINE_CPU_DELAY(_i32, int32_t)

// Only the read is exported for uint8 spike buffers.
// @BE cpu_delay_read_u8
BE_DEFINE_CPU_DELAY(_u8, uint8_t)

// @BE cpu_delay_advance_head
void cpu_delay_advance_head(const BE::Tensor	head,
			    BE::Tensor		head_out,
			    int32_t		depth) {
	const int32_t h = *head.data_ptr<int32_t>();
	*head_out.data_ptr<int32_t>() = (h + 1) % depth;
}
