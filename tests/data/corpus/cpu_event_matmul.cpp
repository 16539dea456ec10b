// cpu_event_matmul.cpp -- event-driven dense matrix products on the host.
//
//   cpu_event_mm<SUFFIX>   out[b, j] = sum_{i : s[b, i]} W[i, j]
//   cpu_event_mm_t<SUFFIX> out[b, i] = sum_{j : s[b, j]} W[i, j]
//
// Both come from one family, selected by the TRANS flag; the weight type and
// the spike type vary independently.

#include <cstdint>
#include <cstring>
#include <vector>
#include "brainevent/common.h"

namespace {

template <typename S> inline bool is_on(S s) { return s != S(0); }

template <typename W, typename S, bool TRANS>
void event_mm(const W* w, const S* s, W* out, int64_t batch, int64_t n_pre, int64_t n_post) {
	const int64_t n_in = TRANS ? n_post : n_pre;
	const int64_t n_out = TRANS ? n_pre : n_post;
	std::memset(out, 0, sizeof(W) * batch * n_out);
	std::vector<int64_t> active;
	active.reserve(n_in);
	for (int64_t b = 0; b < batch; ++b) {
		active.clear();
		for (int64_t i = 0; i < n_in; ++i)
			if (is_on(s[b * n_in + i])) active.push_back(i);
		W* ob = out + b * n_out;
		if (!TRANS) {
			for (int64_t i : active)
				for (int64_t j = 0; j < n_post; ++j) ob[j] += w[i * n_post + j];
		} else {
			for (int64_t i = 0; i < n_pre; ++i) {
				W acc = W(0);
				for (int64_t j : active) acc += w[i * n_post + j];
				ob[i] = acc;
			}
		}
	}
}

}  // namespace

#define BE_DEFINE_CPU_EVENT_MM(NAME, W, S, TRANS)				\
	void NAME(const BE::Tensor weights,					\
		  const BE::Tensor spikes,					\
		  BE::Tensor out) {						\
		BE_CHECK(weights.ndim() == 2 && spikes.ndim() == 2)		\
			<< #NAME ": expected 2-D weights and spikes";		\
		event_mm<W, S, TRANS>(weights.data_ptr<W>(), spikes.data_ptr<S>(),	\
				      out.data_ptr<W>(), spikes.size(0),	\
				      weights.size(0), weights.size(1));	\
	}

// @BE cpu_event_mm_bool_f32
/* the common case: boolean spikes, float32 weights */
BE_DEFINE_CPU_EVENT_MM(cpu_event_mm_bool_f32, float, bool, false)
// @BE cpu_event_mm_bool_f64
BE_DEFINE_CPU_EVENT_MM(cpu_event_mm_bool_f64, double, bool, false)
// @BE cpu_event_mm_f32_f32
BE_DEFINE_CPU_EVENT_MM(cpu_event_mm_f32_f32, float, float, false)
// @BE cpu_event_mm_u8_f32
BE_DEFINE_CPU_EVENT_MM(cpu_event_mm_u8_f32, float, uint8_t, false)
// @BE cpu_event_mm_t_bool_f32
BE_DEFINE_CPU_EVENT_MM(cpu_event_mm_t_bool_f32, float, bool, true)
// @BE cpu_event_mm_t_bool_f64
BE_DEFINE_CPU_EVENT_MM(cpu_event_mm_t_bool_f64, double, bool, true)
// @BE cpu_event_mm_t_f32_f32
BE_DEFINE_CPU_EVENT_MM(cpu_event_mm_t_f32_f32, float, float, true)
// @BE cpu_event_mm_t_u8_f32
BE_DEFINE_CPU_EVENT_MM(cpu_event_mm_t_u8_f32, float, uint8_t, true)

// Spike counts per batch row, to size the event lists on the Python side.
// @BE cpu_event_count
void cpu_event_count(const BE::Tensor spikes, BE::Tensor counts) {
	const int64_t batch = spikes.size(0), n = spikes.size(1);
	const bool* s = spikes.data_ptr<bool>();
	int32_t* c = counts.data_ptr<int32_t>();
	for (int64_t b = 0; b < batch; ++b) {
		int32_t k = 0;
		for (int64_t i = 0; i < n; ++i) k += s[b * n + i];
		c[b] = k;
	}
}
