// Compress(input, condition) -> the slices of input along `axis` (or the elements of the
// flattened input when axis is absent) whose condition entry is true. condition may be shorter
// than the axis (the rest is dropped) but not longer.
//
// npuc needs condition as a constant: it alone decides the output size, and with it known the
// op is a static gather that runs on any (also computed) input. A computed condition is refused
// by shape inference ("must be a constant"), since the output would feed further static-shaped
// nodes in any real model.
#include <cstring>

#include "opset/ops/detect_ops.h"

namespace npuc {
namespace detect {
namespace {

struct Layout {
  int64_t outer = 1, len = 0, inner = 1;  // input viewed as [outer, len, inner]
};

Layout layoutOf(const Node& n, const Shape& in) {
  Layout l;
  if (!n.attrs().has("axis")) {
    l.len = shapeNumel(in);
    return l;
  }
  const int64_t axis = normalizeAxis(n.attrs().i("axis"), static_cast<int64_t>(in.size()), "Compress axis");
  for (int64_t d = 0; d < axis; ++d) l.outer *= in[static_cast<size_t>(d)];
  l.len = in[static_cast<size_t>(axis)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < in.size(); ++d) l.inner *= in[d];
  return l;
}

std::vector<int64_t> selected(const Tensor& cond, int64_t len, const Shape& in) {
  if (cond.rank() != 1) throw ShapeError("Compress condition must be 1-D, got " + shapeStr(cond.shape()));
  if (cond.numel() > len) {
    throw ShapeError("Compress condition has " + std::to_string(cond.numel()) + " entries, more than the " +
                     std::to_string(len) + " of the selected axis of " + shapeStr(in));
  }
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < cond.numel(); ++i) {
    if (cond.doubleAt(i) != 0.0) idx.push_back(i);
  }
  return idx;
}

void inferCompress(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const Tensor& cond = ctx.requireConstInput(1, "Compress condition");
  const Layout l = layoutOf(ctx.node(), in);
  const auto k = static_cast<int64_t>(selected(cond, l.len, in).size());
  Shape out;
  if (!ctx.attrs().has("axis")) {
    out = {k};
  } else {
    out = in;
    out[static_cast<size_t>(normalizeAxis(ctx.attrs().i("axis"), static_cast<int64_t>(in.size())))] = k;
  }
  ctx.setOutput(0, ctx.inputDType(0), out);
}

class CompressKernel : public Kernel {
 public:
  explicit CompressKernel(const KernelContext& ctx)
      : layout_(layoutOf(ctx.node, ctx.input_types.at(0).shape)), es_(dtypeSize(ctx.input_types[0].dtype)) {
    const Tensor* cond = ctx.constInput(1);
    if (!cond) throw ShapeError("Compress condition (input 1) must be a constant");
    idx_ = selected(*cond, layout_.len, ctx.input_types[0].shape);
  }
  void run(const KernelIO& io) const override {
    const auto* src = static_cast<const uint8_t*>(io.inputs[0].data);
    auto* dst = static_cast<uint8_t*>(io.outputs[0].data);
    const size_t slice = static_cast<size_t>(layout_.inner) * es_;
    for (int64_t o = 0; o < layout_.outer; ++o) {
      for (int64_t i : idx_) {
        std::memcpy(dst, src + (static_cast<size_t>(o * layout_.len + i)) * slice, slice);
        dst += slice;
      }
    }
  }

 private:
  Layout layout_;
  size_t es_;
  std::vector<int64_t> idx_;
};

}  // namespace

void registerCompressOp(OpRegistry& reg) {
  reg.add("Compress")
      .quantClass(QuantClass::Float)
      .inputs(2)
      .infer(inferCompress)
      .kernel([](const KernelContext& c) { return std::make_unique<CompressKernel>(c); })
      .since(11)
      .cpuOnly("its output size depends on the condition data")
      .doc(
          "slices of input (flattened without axis) where the condition is true; condition must be a "
          "constant");
}

}  // namespace detect
}  // namespace npuc
