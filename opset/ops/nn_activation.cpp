#include "opset/ops/nn_activation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"

namespace npuc::nn {

namespace {
// ONNX defaults of the corresponding standalone ops.
constexpr float kLeakyReluDefaultAlpha = 0.01f;
// ONNX HardSwish is x * clamp(x / 6 + 1 / 2, 0, 1).
constexpr float kHardSwishSlope = 1.f / 6.f;
constexpr float kHardSwishOffset = 0.5f;
}  // namespace

Activation parseActivation(const Attributes& attrs) {
  const std::string name = attrs.s("activation", "");
  Activation act;
  if (name.empty()) {
    act.kind = ActKind::None;
  } else if (name == "Relu") {
    act.kind = ActKind::Relu;
  } else if (name == "LeakyRelu") {
    act.kind = ActKind::LeakyRelu;
    act.alpha = attrs.f("act_alpha", kLeakyReluDefaultAlpha);
  } else if (name == "Clip") {
    act.kind = ActKind::Clip;
    act.alpha = attrs.f("act_alpha", std::numeric_limits<float>::lowest());
    act.beta = attrs.f("act_beta", std::numeric_limits<float>::max());
  } else if (name == "Sigmoid") {
    act.kind = ActKind::Sigmoid;
  } else if (name == "Tanh") {
    act.kind = ActKind::Tanh;
  } else if (name == "HardSwish") {
    act.kind = ActKind::HardSwish;
  } else if (name == "SiLU") {
    act.kind = ActKind::SiLU;
  } else {
    throw UnsupportedOpError(
        "ConvAct activation '" + name +
        "' is not supported (expected one of \"\", Relu, LeakyRelu, Clip, Sigmoid, Tanh, "
        "HardSwish, SiLU)");
  }
  return act;
}

void appendEltwise(dnnl::post_ops& ops, const Activation& act) {
  constexpr float kScale = 1.f;  // eltwise post-op output scale
  using A = dnnl::algorithm;
  switch (act.kind) {
    case ActKind::None: return;
    case ActKind::Relu: return ops.append_eltwise(kScale, A::eltwise_relu, 0.f, 0.f);
    case ActKind::LeakyRelu: return ops.append_eltwise(kScale, A::eltwise_relu, act.alpha, 0.f);
    case ActKind::Clip: return ops.append_eltwise(kScale, A::eltwise_clip_v2, act.alpha, act.beta);
    case ActKind::Sigmoid: return ops.append_eltwise(kScale, A::eltwise_logistic, 0.f, 0.f);
    case ActKind::Tanh: return ops.append_eltwise(kScale, A::eltwise_tanh, 0.f, 0.f);
    case ActKind::HardSwish:
      return ops.append_eltwise(kScale, A::eltwise_hardswish, kHardSwishSlope, kHardSwishOffset);
    case ActKind::SiLU: return ops.append_eltwise(kScale, A::eltwise_swish, 1.f, 0.f);  // x * sigmoid(1 * x)
  }
}

}  // namespace npuc::nn

namespace npuc::nn {

void applyActivation(const Activation& act, float* y, int64_t n) {
  switch (act.kind) {
    case ActKind::None: return;
    case ActKind::Relu:
      for (int64_t i = 0; i < n; ++i) y[i] = std::max(y[i], 0.f);
      return;
    case ActKind::LeakyRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] >= 0.f ? y[i] : act.alpha * y[i];
      return;
    case ActKind::Clip:
      for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i], act.alpha), act.beta);
      return;
    case ActKind::Sigmoid:
      for (int64_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-y[i]));
      return;
    case ActKind::Tanh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(y[i]);
      return;
    case ActKind::HardSwish:
      for (int64_t i = 0; i < n; ++i) {
        y[i] *= std::min(std::max(y[i] * kHardSwishSlope + kHardSwishOffset, 0.f), 1.f);
      }
      return;
    case ActKind::SiLU:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] / (1.f + std::exp(-y[i]));
      return;
  }
}

}  // namespace npuc::nn
