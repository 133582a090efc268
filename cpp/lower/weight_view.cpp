#include "lower/weight_view.h"

namespace npuc::lower {

std::optional<NpuWeightView> npuWeightView(const Node& anchor) {
  const std::string& op = anchor.opType();
  if ((op != "Conv" && op != "Gemm" && op != "MatMul") || anchor.inputs().size() < 2) return std::nullopt;
  const Value* w = anchor.input(1);
  if (!w || !w->isConstant() || w->dtype() != DType::Float32) return std::nullopt;
  const Shape& s = w->shape();
  NpuWeightView v;
  if (op == "Conv") {
    if (s.size() != 4) return std::nullopt;
    const int64_t group = anchor.attrs().i("group", 1);
    v.depthwise = group > 1 && s[1] == 1 && group == s[0];
    v.dims = v.depthwise ? Nchw{1, s[0], s[2], s[3]} : Nchw{s[0], s[1], s[2], s[3]};
    return v;
  }
  if (s.size() != 2) return std::nullopt;
  v.transposed = !(op == "Gemm" && anchor.attrs().i("transB", 0) != 0);
  v.dims = v.transposed ? Nchw{s[1], s[0], 1, 1} : Nchw{s[0], s[1], 1, 1};
  return v;
}

}  // namespace npuc::lower
