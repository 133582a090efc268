// The int32 accumulator check shared by the int8 Conv and Gemm/MatMul kernels: the worst case of
// each output channel from its real weights and bias (quant/int_limits.h, kAccumulatorTermBound).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::quant {

// `weights` holds `channels` rows of `depth` int8 weights, `bias` one int32 per channel. Throws
// ConfigError naming `what`, the first channel that could overflow and its cause: a reduction
// too deep for int32 at int8 (the remedy is FP16 for the layer or a split reduction), or a bias
// too large for its weight scale (the quantizer floors weight scales so this cannot happen; only
// parameters that bypass it can).
void checkAccumulatorBound(const int8_t* weights, int64_t channels, int64_t depth, const std::vector<int32_t>& bias,
                           const std::string& what);

}  // namespace npuc::quant
