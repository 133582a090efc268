// dst[i] = halfToFloat(floatToHalf(src[i])): float32 values rounded to IEEE half (round to
// nearest even, subnormal halves kept, overflow to infinity, NaN to the quiet NaN with its sign),
// what the FP16 steps apply to every input and output. With F16C on AVX-512, 16 lanes per step
// by the conversion instructions (NaN lanes set as the scalar codec sets them); the portable loop
// otherwise and in tests, as the peer. Both give the same bits.
#pragma once
#include <cstdint>

namespace npuc::quant {

void roundFloatsToHalf(const float* src, int64_t n, float* dst);
void roundFloatsToHalfScalar(const float* src, int64_t n, float* dst);

}  // namespace npuc::quant
