#include "quant/sim/accumulator_check.h"

#include <cstdlib>

#include "common/error.h"
#include "quant/int_limits.h"

namespace npuc::quant {

void checkAccumulatorBound(const int8_t* weights, int64_t channels, int64_t depth, const std::vector<int32_t>& bias,
                           const std::string& what) {
  for (int64_t c = 0; c < channels; ++c) {
    int64_t abs_sum = 0;
    for (int64_t k = 0; k < depth; ++k) abs_sum += std::abs(int32_t{weights[c * depth + k]});
    const int64_t headroom = biasHeadroom(abs_sum);
    const int64_t b = std::llabs(int64_t{bias[static_cast<size_t>(c)]});
    if (headroom <= 0) {
      throw ConfigError(what + ": output channel " + std::to_string(c) + " adds " + std::to_string(depth) +
                        " int8 products (sum of |weight| " + std::to_string(abs_sum) +
                        ") whose worst case exceeds the int32 accumulator; run this layer in FP16 "
                        "(hybrid_layers) or split its reduction");
    }
    if (b > headroom) {
      throw ConfigError(what + ": output channel " + std::to_string(c) + ": int32 bias " +
                        std::to_string(bias[static_cast<size_t>(c)]) + " leaves too little headroom for its " +
                        std::to_string(depth) + " products in the int32 accumulator; the channel's weight scale " +
                        "is below the bias floor the quantizer applies (docs/quantization.md, 'Weight scales " +
                        "and int32 biases')");
    }
  }
}

}  // namespace npuc::quant
