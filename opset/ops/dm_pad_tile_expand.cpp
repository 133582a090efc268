// Size-changing copies: Pad (constant / reflect / edge / wrap), Tile and Expand. Tile and Expand
// are strided views with zero strides, run on dm::StridedCopy; Pad maps every output index of
// every dim to an input index (or to "padding") once, in the constructor.
#include <algorithm>

#include "opset/ops/dm_common.h"

namespace npuc {
namespace {

using dm::StridedCopy;

// ---------------------------------------------------------------- Pad

enum class PadMode { Constant, Reflect, Edge, Wrap };

PadMode padMode(const Node& node) {
  const std::string m = node.attrs().s("mode", "constant");
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "edge") return PadMode::Edge;
  if (m == "wrap") return PadMode::Wrap;
  throw UnsupportedOpError("Pad mode '" + m + "' is not supported (constant, reflect, edge, wrap)");
}

// Per-dim begin/end pads for all dims, from the pads input and the optional axes input.
struct PadAmounts {
  std::vector<int64_t> begin, end;
};

PadAmounts padAmounts(const Shape& in, const Tensor& pads_t, const Tensor* axes_t) {
  const int64_t rank = static_cast<int64_t>(in.size());
  const auto pads = dm::intValues(pads_t, "Pad pads");
  std::vector<int64_t> axes;
  if (axes_t) {
    axes = dm::normalizedAxes(dm::intValues(*axes_t, "Pad axes"), rank, "Pad axis");
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size()) {
    throw ShapeError("Pad pads " + dm::dimsStr(pads) + " must have 2 x " + std::to_string(axes.size()) +
                     " entries (begins, then ends)");
  }
  PadAmounts p{std::vector<int64_t>(in.size(), 0), std::vector<int64_t>(in.size(), 0)};
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = static_cast<size_t>(axes[i]);
    p.begin[a] = pads[i];
    p.end[a] = pads[i + axes.size()];
    if (in[a] + p.begin[a] + p.end[a] < 0) {
      throw ShapeError("Pad pads " + dm::dimsStr(pads) + " crop more than the " + std::to_string(in[a]) +
                       " elements of axis " + std::to_string(a));
    }
  }
  return p;
}

Shape paddedShape(const Shape& in, const PadAmounts& p) {
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    out[d] = dm::dimAdd(dm::dimAdd(in[d], p.begin[d], "Pad output dim"), p.end[d], "Pad output dim");
  return out;
}

void inferPad(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const PadMode mode = padMode(ctx.node());
  const Tensor* axes = ctx.hasInput(3) ? &ctx.requireConstInput(3, "Pad axes") : nullptr;
  const PadAmounts p = padAmounts(in, ctx.requireConstInput(1, "Pad pads"), axes);
  const Shape out = paddedShape(in, p);
  for (size_t d = 0; d < in.size(); ++d) {
    if (mode != PadMode::Constant && in[d] == 0 && out[d] > 0) {
      throw ShapeError("Pad cannot pad the empty axis " + std::to_string(d) + " in a non-constant mode");
    }
  }
  ctx.setOutput(0, ctx.inputDType(0), out);
}

// Input index that output index i (= input index i - begin) reads in `mode`; -1 for padding.
int64_t padSource(int64_t i, int64_t begin, int64_t dim, PadMode mode) {
  int64_t x = i - begin;
  if (x >= 0 && x < dim) return x;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return std::clamp<int64_t>(x, 0, dim - 1);
    case PadMode::Wrap: return ((x % dim) + dim) % dim;
    case PadMode::Reflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);  // reflect without repeating the edge element
      x = ((x % period) + period) % period;
      return x < dim ? x : period - x;
    }
  }
  return -1;
}

class PadKernel : public Kernel {
 public:
  explicit PadKernel(const KernelContext& ctx) {
    const Shape& in = ctx.input_types[0].shape;
    const Tensor* pads = ctx.constInput(1);
    if (!pads) throw ShapeError("Pad pads (input 1) must be a constant");
    const PadAmounts p = padAmounts(in, *pads, ctx.node.hasInput(3) ? ctx.constInput(3) : nullptr);
    const PadMode mode = padMode(ctx.node);
    const Shape out = paddedShape(in, p);
    std::vector<std::vector<int64_t>> maps(in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      for (int64_t i = 0; i < out[d]; ++i) maps[d].push_back(padSource(i, p.begin[d], in[d], mode));
    }
    gather_ = dm::IndexMapGather(in, maps, dtypeSize(ctx.input_types[0].dtype));
  }

  void run(const KernelIO& io) const override {
    static constexpr unsigned char kZero[16] = {};  // the default padding value, any dtype
    const bool has_value = io.inputs.size() > 2 && io.inputs[2].present() && io.inputs[2].numel() > 0;
    gather_.run(io.inputs[0].data, io.outputs[0].data, has_value ? io.inputs[2].data : kZero);
  }

 private:
  dm::IndexMapGather gather_;
};

// ---------------------------------------------------------------- Expand

void inferExpand(InferContext& ctx) {
  const auto target = dm::intValues(ctx.requireConstInput(1, "Expand shape"), "Expand shape");
  ctx.setOutput(0, ctx.inputDType(0), broadcastShapes(ctx.inputShape(0), target));
}

// Strides (bytes) reading `in` broadcast to `out`: right-aligned, 0 along broadcast dims.
std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out, size_t elem) {
  const std::vector<int64_t> contiguous = StridedCopy::contiguousStrides(in, elem);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) strides[lead + d] = in[d] == 1 ? 0 : contiguous[d];
  return strides;
}

class StridedViewKernel : public Kernel {
 public:
  explicit StridedViewKernel(StridedCopy copy) : copy_(std::move(copy)) {}
  void run(const KernelIO& io) const override { copy_.run(io.inputs[0].data, io.outputs[0].data); }

 private:
  StridedCopy copy_;
};

std::unique_ptr<Kernel> makeExpand(const KernelContext& ctx) {
  const TensorView& in = ctx.input_types[0];
  const Shape& out = ctx.output_types[0].shape;
  const size_t elem = dtypeSize(in.dtype);
  return std::make_unique<StridedViewKernel>(
      StridedCopy(out, broadcastStrides(in.shape, out, elem), 0, elem));
}

// ---------------------------------------------------------------- Tile

std::vector<int64_t> tileRepeats(const Shape& in, const Tensor& repeats_t) {
  const auto repeats = dm::intValues(repeats_t, "Tile repeats");
  if (repeats.size() != in.size()) {
    throw ShapeError("Tile repeats " + dm::dimsStr(repeats) + " must have one entry per dim of " +
                     shapeStr(in));
  }
  for (int64_t r : repeats) {
    if (r < 0) throw ShapeError("Tile repeats " + dm::dimsStr(repeats) + " has a negative entry");
  }
  return repeats;
}

void inferTile(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const auto repeats = tileRepeats(in, ctx.requireConstInput(1, "Tile repeats"));
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d) out[d] = dm::dimMul(in[d], repeats[d], "Tile output dim");
  ctx.setOutput(0, ctx.inputDType(0), out);
}

// The output viewed as [r_0, d_0, r_1, d_1, ...] reads the input with strides [0, s_0, 0, s_1, ...]
// (row-major (r, j) over dims (repeats, dim) is exactly output index r * dim + j).
std::unique_ptr<Kernel> makeTile(const KernelContext& ctx) {
  const TensorView& in = ctx.input_types[0];
  const Tensor* repeats_t = ctx.constInput(1);
  if (!repeats_t) throw ShapeError("Tile repeats (input 1) must be a constant");
  const auto repeats = tileRepeats(in.shape, *repeats_t);
  const size_t elem = dtypeSize(in.dtype);
  const std::vector<int64_t> contiguous = StridedCopy::contiguousStrides(in.shape, elem);
  Shape view;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    view.insert(view.end(), {repeats[d], in.shape[d]});
    strides.insert(strides.end(), {0, contiguous[d]});
  }
  return std::make_unique<StridedViewKernel>(StridedCopy(view, strides, 0, elem));
}

}  // namespace

void registerDmPadTileExpandOps(OpRegistry& reg) {
  const auto any = dm::allStorableTypes();
  reg.add("Pad")
      .traits(OpTrait::SizeChange)
      .quantClass(QuantClass::SharedScale)
      .inputs(2, 4)
      .infer(dm::namedInfer(inferPad))
      .kernel(dm::namedKernel(dm::kernelOf<PadKernel>()))
      .types(any)
      .doc("pads (or crops, with negative pads) in constant, reflect, edge or wrap mode");
  reg.add("Expand")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::DataMovement)
      .inputs(2)
      .infer(dm::namedInfer(inferExpand))
      .kernel(dm::namedKernel(makeExpand))
      .types(any)
      .doc("broadcasts to a shape (bidirectionally)");
  reg.add("Tile")
      .traits(OpTrait::DataMovement | OpTrait::SizeChange)
      .quantClass(QuantClass::DataMovement)
      .inputs(2)
      .infer(dm::namedInfer(inferTile))
      .kernel(dm::namedKernel(makeTile))
      .types(any)
      .doc("repeats the input along each dim");
}

}  // namespace npuc
