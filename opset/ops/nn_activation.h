// The activation that ConvAct (npuc's fused convolution) applies after conv + bias (+ Sum), and
// its mapping onto a oneDNN eltwise post-op.
#pragma once

#include <dnnl.hpp>
#include <string>

#include "ir/attribute.h"

namespace npuc::nn {

enum class ActKind { None, Relu, LeakyRelu, Clip, Sigmoid, Tanh, HardSwish, SiLU };

struct Activation {
  ActKind kind = ActKind::None;
  float alpha = 0.f;  // LeakyRelu slope / Clip min
  float beta = 0.f;   // Clip max
};

// Reads ConvAct's `activation`, `act_alpha`, `act_beta`. Unknown names are an UnsupportedOpError
// listing the accepted ones.
Activation parseActivation(const Attributes& attrs);

// Appends the activation as an eltwise post-op (nothing for ActKind::None).
void appendEltwise(dnnl::post_ops& ops, const Activation& act);

}  // namespace npuc::nn

namespace npuc::nn {

// Applies the activation in place to n contiguous values (for kernels that do not run on oneDNN).
void applyActivation(const Activation& act, float* y, int64_t n);

}  // namespace npuc::nn
