// Internal: softmax rows of at most 16 floats on AVX-512, one register per row (decision 142; nn.cc
// defines it). The one implementation behind the softmax / log_softmax ops' short rows (misc.cc through
// softmax_rows_f32) and fused_attention's score rows (attention.cc).
#pragma once

#include <cstdint>

namespace oar_cpu {

// out = softmax (log: log_softmax) of each of `rows` rows of n (1..16) floats at in (rows contiguous, n
// apart); out may be in. Before the softmax each row is multiplied by scale (when it is not 1) and gets
// mask row i added (at mask + i * mrs, element j at + j * mcs, mcs 0 or 1; mask may be null). The bits are
// the softmax op's row loop's (nn.cc softmax_row_v: the max ignoring NaN, fast_exp of the shifted
// scores, row_sum's order, the scaling in double; log: (x - max) - log(sum)). Only when vec_isa() == 2.
void softmax_rows16_avx512(float* out, const float* in, int64_t rows, int64_t n, float scale,
                           const float* mask, int64_t mrs, int64_t mcs, bool log);

}  // namespace oar_cpu
