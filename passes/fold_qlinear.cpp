// fold_qlinear: ONNX's integer operator forms become their QDQ equivalents, so the float pipeline
// (fusions, the partitioner, the NPU) sees ordinary Conv / MatMul nodes:
//
//   QLinearConv(x, sx, zx, w, sw, zw, sy, zy, B)  ->  Q(Conv(DQ(x, sx, zx), DQ(w, sw, zw, axis 0),
//                                                        DQ(B, sx * sw, axis 0)), sy, zy)
//   QLinearMatMul(a, sa, za, b, sb, zb, sy, zy)   ->  Q(MatMul(DQ(a, sa, za), DQ(b, sb, zb, last axis)), sy,
//   zy) ConvInteger(x, w, zx, zw)                     ->  Cast<int32>(Conv(DQ(x, 1, zx), DQ(w, 1, zw, axis
//   0))) MatMulInteger(a, b, za, zb)                   ->  Cast<int32>(MatMul(DQ(a, 1, za, row axis), DQ(b,
//   1, zb, last axis)))
//
// Constant folding then turns DQ(constant weights) into float weights.
//
// Numerics. ConvInteger / MatMulInteger: every float term is an integer product and every partial
// sum stays below 2^24 (checked from the weights, or from K when they are not constant), so float
// sums are exact in any order and the rewrite is bit-exact. QLinearConv / QLinearMatMul: the integer
// kernel rounds float(acc) * (sa * sb / sy) once; the float form rounds each product and sum, so
// a result within float rounding of a half-way point can round the other way: at most 1 LSB of
// the output (tests/cpp/test_ops_qops.cc measures it). Those two patterns run at level 3 only.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "opset/registry.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

// A constant float tensor of `n` values v (shape [] for one value, [n] otherwise).
Tensor filled(float v, int64_t n) {
  Tensor t(DType::Float32, n == 1 ? Shape{} : Shape{n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = v;
  return t;
}

// Scale/zero-point pairs: Quantize/DequantizeLinear want both of one shape, while the QLinear ops
// allow a single zero point beside a per-channel scale (or the reverse, or [] beside [1]). The pair
// can be made equal when they already are or the single value is a constant to broadcast.
bool paramShapesMatchable(const Value* scale, const Value* zp) {
  if (!zp || zp->shape() == scale->shape()) return true;
  const Value* single = shapeNumel(scale->shape()) == 1 ? scale : zp;
  return single->isConstant() && shapeNumel(single->shape()) == 1;
}

// Precondition: paramShapesMatchable(scale, zp). Replaces the single value by a broadcast constant.
void matchParamShapes(Rewriter& rw, Value*& scale, Value*& zp, const std::string& hint) {
  if (!zp || zp->shape() == scale->shape()) return;
  const bool scale_single = shapeNumel(scale->shape()) == 1;
  Value*& single = scale_single ? scale : zp;
  const Tensor& src = single->constant();
  Tensor t(src.dtype(), (scale_single ? zp : scale)->shape());
  const size_t es = dtypeSize(src.dtype());
  for (int64_t i = 0; i < t.numel(); ++i) std::memcpy(static_cast<char*>(t.raw()) + i * es, src.raw(), es);
  single = rw.constant(std::move(t), hint);
}

Attributes axisAttr(int64_t axis) {
  Attributes a;
  a.set("axis", axis);
  return a;
}

// DQ(x, scale, zp) with `axis` when the scale is per channel.
Value* dequantize(Rewriter& rw, Value* x, Value* scale, Value* zp, int64_t axis, const std::string& hint) {
  std::vector<Value*> in{x, scale};
  if (zp) in.push_back(zp);
  const bool per_channel = shapeNumel(scale->shape()) > 1;
  return rw.create("DequantizeLinear", in, per_channel ? axisAttr(axis) : Attributes{}, hint)->output();
}

Value* input(const Node& n, size_t i) {
  return n.hasInput(i) ? n.input(i) : nullptr;
}

// Largest |x - zero_point| of a uint8/int8 operand: 255 unless the zero point is a known constant.
int64_t maxCentered(const Value* x, const Value* zp) {
  const int64_t lo = x->dtype() == DType::Int8 ? -128 : 0, hi = lo + 255;
  if (!zp) return std::max(-lo, hi);
  if (!zp->isConstant()) return 255;
  int64_t m = 0;
  for (int64_t i = 0; i < zp->constant().numel(); ++i) {
    const int64_t z = zp->constant().intAt(i);
    m = std::max({m, z - lo, hi - z});
  }
  return m;
}

// Largest sum over one output of |w - zw|, `terms` terms per output: exact from constant weights,
// else terms * the largest |w - zw|. Outputs are rows (Conv W: M rows of `terms`; by_row) or the
// columns of a 2-D MatMul B (K x outputs).
int64_t maxWeightSum(const Value* w, const Value* zw, int64_t outputs, int64_t terms, bool by_row) {
  const bool two_d = by_row || w->rank() == 2;
  if (!w->isConstant() || (zw && !zw->isConstant()) || !two_d) return terms * maxCentered(w, zw);
  const Tensor& t = w->constant();
  std::vector<int64_t> sums(static_cast<size_t>(outputs), 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t out = by_row ? i / terms : i % outputs;
    const int64_t z = zw ? zw->constant().intAt(zw->constant().numel() == 1 ? 0 : out) : 0;
    sums[static_cast<size_t>(out)] += std::llabs(t.intAt(i) - z);
  }
  return *std::max_element(sums.begin(), sums.end());
}

constexpr int64_t kExactFloatSum = int64_t{1} << 24;

class FoldQLinearConv : public RewritePattern {
 public:
  FoldQLinearConv() : RewritePattern("fold_qlinear_conv", {"QLinearConv"}, /*changes_numerics=*/true) {}
  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value *x = root.input(0), *sx = root.input(1), *zx = input(root, 2), *w = root.input(3),
          *sw = root.input(4), *zw = input(root, 5), *sy = root.input(6), *zy = input(root, 7),
          *bias = input(root, 8);
    if (bias && !(sx->isConstant() && sw->isConstant())) {
      return rw.notifyMatchFailure(
          root, "QLinearConv '" + root.name() + "': the bias scale x_scale * w_scale needs constant scales");
    }
    if (!paramShapesMatchable(sx, zx) || !paramShapesMatchable(sw, zw) || !paramShapesMatchable(sy, zy)) {
      return rw.notifyMatchFailure(root,
                                   "QLinearConv '" + root.name() +
                                       "': a scale and its zero point differ in shape and the single one "
                                       "is not a constant to broadcast");
    }
    rw.setInsertionPointBefore(&root);
    const std::string& n = root.name();
    matchParamShapes(rw, sx, zx, n + "_x_param");
    matchParamShapes(rw, sw, zw, n + "_w_param");
    matchParamShapes(rw, sy, zy, n + "_y_param");
    std::vector<Value*> conv_in{dequantize(rw, x, sx, zx, 1, n + "_x"),
                                dequantize(rw, w, sw, zw, 0, n + "_w")};
    if (bias) {
      // The bias is int32 on the grid x_scale * w_scale[m] (ONNX Runtime's exporters write it so).
      const Tensor& ws = sw->constant();
      Tensor bs = filled(0.f, ws.numel());
      const float xs = static_cast<float>(sx->constant().doubleAt(0));
      for (int64_t i = 0; i < ws.numel(); ++i) bs.data<float>()[i] = xs * static_cast<float>(ws.doubleAt(i));
      conv_in.push_back(
          dequantize(rw, bias, rw.constant(std::move(bs), n + "_bias_scale"), nullptr, 0, n + "_b"));
    }
    Value* yf = rw.create("Conv", conv_in, root.attrs(), n)->output();
    std::vector<Value*> q_in{yf, sy};
    if (zy) q_in.push_back(zy);
    rw.replaceOp(&root, {rw.create("QuantizeLinear", q_in, {}, n + "_y")->output()});
    return success();
  }
};

class FoldQLinearMatMul : public RewritePattern {
 public:
  FoldQLinearMatMul() : RewritePattern("fold_qlinear_matmul", {"QLinearMatMul"}, /*changes_numerics=*/true) {}
  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value *a = root.input(0), *sa = root.input(1), *za = input(root, 2), *b = root.input(3),
          *sb = root.input(4), *zb = input(root, 5), *sy = root.input(6), *zy = input(root, 7);
    const bool per_column = shapeNumel(sb->shape()) > 1 || (zb && shapeNumel(zb->shape()) > 1);
    if (per_column && b->rank() < 2)
      return rw.notifyMatchFailure(root, "QLinearMatMul per-column B needs rank >= 2");
    if (!paramShapesMatchable(sa, za) || !paramShapesMatchable(sb, zb) || !paramShapesMatchable(sy, zy)) {
      return rw.notifyMatchFailure(root,
                                   "QLinearMatMul '" + root.name() +
                                       "': a scale and its zero point differ in shape and the single one "
                                       "is not a constant to broadcast");
    }
    rw.setInsertionPointBefore(&root);
    const std::string& n = root.name();
    matchParamShapes(rw, sa, za, n + "_a_param");
    matchParamShapes(rw, sb, zb, n + "_b_param");
    matchParamShapes(rw, sy, zy, n + "_y_param");
    Value* mm = rw.create("MatMul",
                          {dequantize(rw, a, sa, za, 0, n + "_a"),
                           dequantize(rw, b, sb, zb, b->rank() - 1, n + "_b")},
                          {}, n)
                    ->output();
    std::vector<Value*> q_in{mm, sy};
    if (zy) q_in.push_back(zy);
    rw.replaceOp(&root, {rw.create("QuantizeLinear", q_in, {}, n + "_y")->output()});
    return success();
  }
};

// ConvInteger / MatMulInteger: scale-1 DequantizeLinears give the exact centred integers in float.
class FoldIntegerMac : public RewritePattern {
 public:
  FoldIntegerMac() : RewritePattern("fold_integer_mac", {"ConvInteger", "MatMulInteger"}) {}
  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    const bool conv = root.opType() == "ConvInteger";
    Value *x = root.input(0), *w = root.input(1), *zx = input(root, 2), *zw = input(root, 3);
    if (!x->hasShape() || !w->hasShape() || w->rank() < (conv ? 3 : 1)) return failure();
    // Terms per output: Conv W is M x (C/group x kernel); MatMul B is K x N (per column).
    const int64_t outputs = conv ? w->shape()[0] : (w->rank() == 1 ? 1 : w->shape().back());
    const int64_t k =
        conv ? shapeNumel(w->shape()) / outputs : w->shape()[w->rank() == 1 ? 0 : w->rank() - 2];
    const int64_t bound = maxCentered(x, zx) * maxWeightSum(w, zw, outputs, k, conv);
    if (bound >= kExactFloatSum) {
      return rw.notifyMatchFailure(root, root.opType() + " '" + root.name() + "': a sum may reach " +
                                             std::to_string(bound) +
                                             " >= 2^24, which float would not hold exactly");
    }
    if (!conv && zx && shapeNumel(zx->shape()) > 1 && x->rank() < 2) return failure();
    rw.setInsertionPointBefore(&root);
    const std::string& n = root.name();
    // Scale 1 of the zero point's shape, so DequantizeLinear gives x - zero_point exactly.
    auto unit = [&](Value* v, Value* zp, int64_t axis, const std::string& hint) {
      Tensor one(DType::Float32, zp ? zp->shape() : Shape{});
      for (int64_t i = 0; i < one.numel(); ++i) one.data<float>()[i] = 1.f;
      return dequantize(rw, v, rw.constant(std::move(one), hint + "_one"), zp, axis, hint);
    };
    Value* xf = unit(x, zx, conv ? 1 : std::max<int64_t>(0, x->rank() - 2), n + "_x");
    Value* wf = unit(w, zw, conv ? 0 : w->rank() - 1, n + "_w");
    Value* y = rw.create(conv ? "Conv" : "MatMul", {xf, wf}, conv ? root.attrs() : Attributes{}, n)->output();
    Attributes to;
    to.set("to", int64_t{6});  // ONNX TensorProto INT32
    rw.replaceOp(&root, {rw.create("Cast", {y}, to, n + "_int32")->output()});
    return success();
  }
};

class FoldQLinearPass : public PatternPass {
 public:
  const char* name() const override { return "fold_qlinear"; }
  const char* description() const override {
    return "QLinearConv/QLinearMatMul/ConvInteger/MatMulInteger -> DequantizeLinear, float Conv/MatMul, "
           "QuantizeLinear (or Cast to int32)";
  }
  bool changesNumerics() const override { return false; }  // two of its patterns do; they say so

 protected:
  void populate(PatternSet& p) const override {
    p.add<FoldQLinearConv>();
    p.add<FoldQLinearMatMul>();
    p.add<FoldIntegerMac>();
  }
};

}  // namespace

std::unique_ptr<Pass> createFoldQLinearPass() {
  return std::make_unique<FoldQLinearPass>();
}

}  // namespace npuc
