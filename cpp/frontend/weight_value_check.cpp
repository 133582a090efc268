#include "frontend/weight_value_check.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "opset/op_traits.h"

namespace npuc {

namespace {

enum class NonFinite { None, NaN, Inf };

// Ops whose constant operands are weights / biases / normalization parameters: an Inf there makes
// every output it touches Inf or NaN, so it is a broken export, not a mask.
bool takesWeights(const Node& n) {
  return opTraits(n).has(OpTrait::LearnedParameters);
}

NonFinite classify(double v) {
  if (std::isnan(v)) return NonFinite::NaN;
  if (std::isinf(v)) return NonFinite::Inf;
  return NonFinite::None;
}

NonFinite classifyHalf(uint16_t h) {
  constexpr uint16_t kExponent = 0x7C00, kMantissa = 0x03FF;
  if ((h & kExponent) != kExponent) return NonFinite::None;
  return (h & kMantissa) ? NonFinite::NaN : NonFinite::Inf;
}

// Index of the first NaN (nan_only) or of the first NaN or Inf, or -1; `kind` says which.
int64_t findNonFinite(const Tensor& t, bool nan_only, NonFinite& kind) {
  const int64_t n = t.numel();
  auto hit = [&](NonFinite k) {
    if (k == NonFinite::None || (nan_only && k != NonFinite::NaN)) return false;
    kind = k;
    return true;
  };
  switch (t.dtype()) {
    case DType::Float32: {
      const float* p = static_cast<const float*>(t.raw());
      for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i]) && hit(classify(p[i]))) return i;
      break;
    }
    case DType::Float64: {
      const double* p = static_cast<const double*>(t.raw());
      for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i]) && hit(classify(p[i]))) return i;
      break;
    }
    case DType::Float16: {
      const uint16_t* p = static_cast<const uint16_t*>(t.raw());
      for (int64_t i = 0; i < n; ++i)
        if (hit(classifyHalf(p[i]))) return i;
      break;
    }
    default: break;
  }
  return -1;
}

// The first weight-taking consumer of `v`, or null.
const Node* weightUser(const Value& v) {
  for (const Use& u : v.uses())
    if (takesWeights(*u.user)) return u.user;
  return nullptr;
}

}  // namespace

void checkWeightValues(const Graph& graph) {
  for (const Value* v : graph.values()) {
    if (!v->isConstant() || !isFloating(v->dtype())) continue;
    const Tensor& t = v->constant();
    const Node* user = weightUser(*v);
    NonFinite kind = NonFinite::None;
    const int64_t at = findNonFinite(t, /*nan_only=*/user == nullptr, kind);
    if (at < 0) continue;
    const std::string where =
        "tensor '" + v->name() + "' (" + dtypeName(t.dtype()) + shapeStr(t.shape()) + ")";
    if (kind == NonFinite::NaN)
      throw ModelLoadError(where + " holds NaN at index " + std::to_string(at) +
                           "; a NaN weight makes every result it reaches NaN (re-export the model)");
    throw ModelLoadError(where + " holds " + (std::signbit(t.doubleAt(at)) ? "-Inf" : "+Inf") + " at index " +
                         std::to_string(at) + ", and it is an operand of " + user->opType() + " '" +
                         user->name() +
                         "' (Inf is only accepted outside Conv/ConvTranspose/Gemm/MatMul/BatchNormalization "
                         "weights, e.g. in attention masks)");
  }
}

}  // namespace npuc
