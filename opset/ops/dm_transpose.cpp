// Axis permutations: Transpose, and DepthToSpace / SpaceToDepth, which are transposes of a 6-D
// view of their 4-D input. All run on dm::StridedCopy (its 2-D tile path is the fast path for
// NCHW<->NHWC and every other "move one axis" permutation).
#include <numeric>

#include "opset/ops/dm_common.h"

namespace npuc {
namespace {

using dm::StridedCopy;

std::vector<int64_t> transposePerm(const Node& node, int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  if (!node.attrs().has("perm")) {
    std::iota(perm.rbegin(), perm.rend(), 0);  // default: reverse the axes
    return perm;
  }
  perm = node.attrs().ints("perm");
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  bool ok = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t& p : perm) {
    if (!ok) break;
    if (p < 0) p += rank;
    ok = p >= 0 && p < rank && !seen[static_cast<size_t>(p)];
    if (ok) seen[static_cast<size_t>(p)] = true;
  }
  if (!ok) {
    throw ShapeError("perm " + dm::dimsStr(node.attrs().ints("perm")) + " is not a permutation of the " +
                     std::to_string(rank) + " input axes");
  }
  return perm;
}

// The copy that writes `view` (the input, reshaped without moving data) permuted by `perm`.
StridedCopy permutedCopy(const Shape& view, const std::vector<int64_t>& perm, size_t elem) {
  const std::vector<int64_t> in_strides = StridedCopy::contiguousStrides(view, elem);
  Shape out_shape(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    out_shape[k] = view[static_cast<size_t>(perm[k])];
    strides[k] = in_strides[static_cast<size_t>(perm[k])];
  }
  return StridedCopy(out_shape, strides, 0, elem);
}

// One StridedCopy from input 0 to output 0, prepared in the constructor.
class PermuteKernel : public Kernel {
 public:
  explicit PermuteKernel(StridedCopy copy) : copy_(std::move(copy)) {}
  void run(const KernelIO& io) const override { copy_.run(io.inputs[0].data, io.outputs[0].data); }

 private:
  StridedCopy copy_;
};

void inferTranspose(InferContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  const auto perm = transposePerm(ctx.node(), static_cast<int64_t>(in.size()));
  Shape out(in.size());
  for (size_t k = 0; k < perm.size(); ++k) out[k] = in[static_cast<size_t>(perm[k])];
  ctx.setOutput(0, ctx.inputDType(0), out);
}

std::unique_ptr<Kernel> makeTranspose(const KernelContext& ctx) {
  const TensorView& in = ctx.input_types[0];
  return std::make_unique<PermuteKernel>(
      permutedCopy(in.shape, transposePerm(ctx.node, in.rank()), dtypeSize(in.dtype)));
}

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

struct BlockParams {
  int64_t n, c, h, w, bs;
};

BlockParams blockParams(const Node& node, const Shape& in) {
  if (in.size() != 4) throw ShapeError("input must be 4-D NCHW, got " + shapeStr(in));
  const int64_t bs = node.attrs().i("blocksize");
  if (bs <= 0) throw ShapeError("blocksize must be positive, got " + std::to_string(bs));
  dm::dimMul(bs, bs, "blocksize^2");  // every later use multiplies by it
  return {in[0], in[1], in[2], in[3], bs};
}

bool isCrdMode(const Node& node) {
  const std::string mode = node.attrs().s("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    throw ShapeError("DepthToSpace mode must be DCR or CRD, got '" + mode + "'");
  return mode == "CRD";
}

void inferDepthToSpace(InferContext& ctx) {
  const BlockParams p = blockParams(ctx.node(), ctx.inputShape(0));
  isCrdMode(ctx.node());
  if (p.c % (p.bs * p.bs) != 0) {
    throw ShapeError("channels " + std::to_string(p.c) +
                     " are not divisible by blocksize^2 = " + std::to_string(p.bs * p.bs));
  }
  ctx.setOutput(0, ctx.inputDType(0),
                {p.n, p.c / (p.bs * p.bs), dm::dimMul(p.h, p.bs, "DepthToSpace output height"),
                 dm::dimMul(p.w, p.bs, "DepthToSpace output width")});
}

std::unique_ptr<Kernel> makeDepthToSpace(const KernelContext& ctx) {
  const TensorView& in = ctx.input_types[0];
  const BlockParams p = blockParams(ctx.node, in.shape);
  const int64_t oc = p.c / (p.bs * p.bs);
  const size_t elem = dtypeSize(in.dtype);
  // Output [N, C', H, bs, W, bs] read from the channel dim split as (bs, bs, C') in DCR order or
  // (C', bs, bs) in CRD order.
  if (isCrdMode(ctx.node)) {
    return std::make_unique<PermuteKernel>(
        permutedCopy({p.n, oc, p.bs, p.bs, p.h, p.w}, {0, 1, 4, 2, 5, 3}, elem));
  }
  return std::make_unique<PermuteKernel>(
      permutedCopy({p.n, p.bs, p.bs, oc, p.h, p.w}, {0, 3, 4, 1, 5, 2}, elem));
}

void inferSpaceToDepth(InferContext& ctx) {
  const BlockParams p = blockParams(ctx.node(), ctx.inputShape(0));
  if (p.h % p.bs != 0 || p.w % p.bs != 0) {
    throw ShapeError("spatial dims " + std::to_string(p.h) + "x" + std::to_string(p.w) +
                     " are not divisible by blocksize " + std::to_string(p.bs));
  }
  ctx.setOutput(0, ctx.inputDType(0),
                {p.n, dm::dimMul(p.c, p.bs * p.bs, "SpaceToDepth output channels"), p.h / p.bs, p.w / p.bs});
}

std::unique_ptr<Kernel> makeSpaceToDepth(const KernelContext& ctx) {
  const TensorView& in = ctx.input_types[0];
  const BlockParams p = blockParams(ctx.node, in.shape);
  // Input viewed as [N, C, H', bs, W', bs]; output channels are ordered (bs_h, bs_w, C).
  return std::make_unique<PermuteKernel>(
      permutedCopy({p.n, p.c, p.h / p.bs, p.bs, p.w / p.bs, p.bs}, {0, 3, 5, 1, 2, 4}, dtypeSize(in.dtype)));
}

}  // namespace

void registerDmTransposeOps(OpRegistry& reg) {
  const auto any = dm::allStorableTypes();
  reg.add("Transpose")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::DataMovement)
      .inputs(1)
      .infer(dm::namedInfer(inferTranspose))
      .kernel(dm::namedKernel(makeTranspose))
      .types(any)
      .doc("permutes axes (default perm: reversed)");
  reg.add("DepthToSpace")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::DataMovement)
      .inputs(1)
      .infer(dm::namedInfer(inferDepthToSpace))
      .kernel(dm::namedKernel(makeDepthToSpace))
      .types(any)
      .doc("moves channel blocks into spatial blocks (DCR or CRD order)");
  reg.add("SpaceToDepth")
      .traits(OpTrait::DataMovement)
      .quantClass(QuantClass::DataMovement)
      .inputs(1)
      .infer(dm::namedInfer(inferSpaceToDepth))
      .kernel(dm::namedKernel(makeSpaceToDepth))
      .types(any)
      .doc("moves spatial blocks into channels");
}

}  // namespace npuc
