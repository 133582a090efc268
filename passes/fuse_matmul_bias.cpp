// fuse_matmul_bias: a MatMul by a constant matrix followed by the Add of a constant bias (how
// exporters write nn.Linear on inputs of rank > 2) becomes one Gemm with the bias as input C:
//
//   y = Add(MatMul(x[..., K], W[K, N]), b)        ->   x2 = Reshape(x, [-1, K])
//   b: constant of N elements, shape [N] or            g  = Gemm(x2, W, b[N])
//      [1, ..., 1, N] (broadcast along the last axis)  y  = Reshape(g, shape of y)
//
// Why: the NPU's fully connected layer adds its bias in the int32 accumulator. As two ops the
// MatMul result is rounded to int8 before the bias is added and rounded again; one Gemm rounds
// once (on tiny_vit it lifts the INT8 output cosine, bench/quant_accuracy.py). Gemm adds the bias
// after the same dot products, but a different kernel may sum in another order: level 3 only.
// The Reshapes keep int8 parameters unchanged and merge with neighbouring Reshapes.
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"

namespace npuc {
namespace {

using fusion::producerIs;

// The bias of `add` (the operand other than `product`) as a 1-D [n] float tensor, if it is a
// float32 constant of n elements broadcasting along the last axis only.
std::optional<Tensor> lastAxisBias(const Node& add, const Value* product, int64_t n) {
  const Value* c = fusion::otherOperand(add, product);
  if (!c || !c->isConstant() || c->dtype() != DType::Float32 || c->constant().numel() != n)
    return std::nullopt;
  const Shape& s = c->shape();
  if (s.empty() || s.back() != n || static_cast<int64_t>(s.size()) > product->rank()) return std::nullopt;
  Tensor bias(DType::Float32, Shape{n});
  const float* src = c->constant().data<float>();
  std::copy(src, src + n, bias.data<float>());
  return bias;
}

class FuseMatMulBias : public RewritePattern {
 public:
  FuseMatMulBias() : RewritePattern("fuse_matmul_bias", {"Add"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& add, Rewriter& rw) const override {
    if (add.numInputs() != 2) return failure();
    for (size_t i = 0; i < 2; ++i) {
      Node* matmul = producerIs(add.input(i), "MatMul");
      if (!matmul) continue;
      Value* x = matmul->input(0);
      const Value* w = matmul->input(1);
      Value* product = matmul->output();
      if (!w->isConstant() || w->rank() != 2 || w->dtype() != DType::Float32) continue;
      auto refuse = [&](const std::string& reason) {
        return rw.notifyMatchFailure(add, "MatMul '" + matmul->name() + "' + bias not fused: " + reason);
      };
      if (!fusion::isStaticFloat32(x) || x->rank() < 2)
        return refuse("input is not static float32 of rank >= 2");
      if (std::string p = m::interiorUseProblem(*product); !p.empty()) return refuse(p);
      const int64_t k = w->shape()[0], n = w->shape()[1];
      std::optional<Tensor> bias = lastAxisBias(add, product, n);
      if (!bias)
        return refuse("the other Add operand is not a constant bias of " + std::to_string(n) + " values");
      if (!sameStaticShape(*product, *add.output()))
        return refuse("the Add broadcasts beyond the MatMul result");

      rw.setInsertionPointBefore(&add);
      Value* rows = x;
      if (x->rank() != 2) {
        rows = rw.create("Reshape", {x, rw.constant(int64Vector({-1, k}), matmul->name() + "_rows")}, {},
                         matmul->name())
                   ->output();
      }
      Value* b = rw.constant(std::move(*bias), add.name() + "_bias");
      Node* gemm = rw.create("Gemm", {rows, matmul->input(1), b}, {}, matmul->name());
      Value* y = gemm->output();
      if (x->rank() != 2) {
        const Shape& out = add.output()->shape();
        y = rw.createLike(*add.output(), "Reshape",
                          {y, rw.constant(int64Vector(std::vector<int64_t>(out.begin(), out.end())),
                                          add.name() + "_shape")},
                          {}, add.name())
                ->output();
      }
      rw.replaceOp(&add, {y});
      return success();
    }
    return failure();
  }
};

class FuseMatMulBiasPass : public PatternPass {
 public:
  const char* name() const override { return "fuse_matmul_bias"; }
  const char* description() const override {
    return "MatMul(x, constant W) + constant bias -> Gemm with bias (Reshapes around it for rank > 2)";
  }
  bool changesNumerics() const override { return true; }

 protected:
  void populate(PatternSet& p) const override { p.add<FuseMatMulBias>(); }
};

}  // namespace

std::unique_ptr<Pass> createFuseMatMulBiasPass() {
  return std::make_unique<FuseMatMulBiasPass>();
}

}  // namespace npuc
