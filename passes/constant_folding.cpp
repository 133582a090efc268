// constant_folding: evaluates, at compile time, every node whose inputs are all constants (and
// Shape / Size of a statically shaped tensor), with the same host kernels the runtime uses, so
// folding is bit-exact. A result larger than PassContext::fold_limit_bytes is not materialized
// (the importer applies the same cap): a small constant expanded into a huge one would cost more
// weight memory than the op costs time.
#include "opset/eval.h"
#include "opset/fold_limit.h"
#include "passes/core/pass.h"
#include "passes/core/rewriter.h"

namespace npuc {
namespace {

bool allInputsConstant(const Node& n) {
  bool any = false;
  for (const Value* in : n.inputs()) {
    if (!in) continue;
    if (!in->isConstant()) return false;
    any = true;
  }
  return any;
}

// Shape, Size and EyeLike need the input's type, not its data (OpTrait::ReadsShapeOnly).
bool isShapeQueryOfStaticTensor(const Node& n) {
  return opTraits(n).has(OpTrait::ReadsShapeOnly) && n.input(0) && n.input(0)->shapeIsStatic();
}

class ConstantFoldingPass : public Pass {
 public:
  const char* name() const override { return "constant_folding"; }
  const char* description() const override {
    return "evaluates nodes whose inputs are all constants (results up to fold_limit_bytes)";
  }

  size_t run(Graph& graph, PassContext& ctx) override {
    Rewriter rw(graph, ctx);
    rw.setCurrentPattern("fold");
    size_t folded = 0;
    // Topological order lets a chain of foldable nodes collapse in one sweep. Erasing the current
    // node (and its now-dead constant-fed producers, all earlier) is safe for NodeRange.
    for (Node* n : graph.nodes()) {
      if (!allInputsConstant(*n) && !isShapeQueryOfStaticTensor(*n)) continue;
      if (tryFold(*n, rw)) ++folded;
    }
    return folded;
  }

 private:
  static bool tryFold(Node& n, Rewriter& rw) {
    const OpSchema* schema = OpRegistry::instance().find(n);
    if (!schema || !schema->foldable) return false;
    const int64_t bytes = foldOutputBytes(n);
    if (bytes < 0) return false;
    if (bytes > rw.context().fold_limit_bytes) {
      rw.recordMatchFailure(n, "result of " + std::to_string(bytes) + " bytes exceeds the fold limit of " +
                                   std::to_string(rw.context().fold_limit_bytes) + " bytes");
      return false;
    }
    for (const Value* out : n.outputs()) {
      if (out->isGraphOutput() && n.numOutputs() > 1) return false;  // keep multi-output API nodes simple
    }
    std::vector<Tensor> results;
    if (isShapeQueryOfStaticTensor(n) && !allInputsConstant(n)) {
      // Shape with start/end (opset 15) is left to the kernel path once its input is constant.
      if (n.opType() == "Shape" && (n.attrs().has("start") || n.attrs().has("end"))) return false;
      const Shape& s = n.input(0)->shape();
      if (n.opType() == "EyeLike") {
        // The kernel never reads the input's elements; a placeholder of its type stands in.
        const Tensor placeholder(n.input(0)->dtype(), s);
        results = evalNode(n, {&placeholder});
      } else {
        results.push_back(n.opType() == "Shape" ? Tensor::fromVector(s, {static_cast<int64_t>(s.size())})
                                                : Tensor::scalar<int64_t>(shapeNumel(s)));
      }
    } else {
      std::vector<const Tensor*> ins;
      for (const Value* in : n.inputs()) ins.push_back(in ? &in->constant() : nullptr);
      try {
        results = evalNode(n, ins);
      } catch (const UnsupportedOpError& e) {
        rw.recordMatchFailure(n, std::string("cannot evaluate: ") + e.what());
        return false;
      }
    }
    std::vector<Value*> replacements;
    for (size_t i = 0; i < results.size(); ++i) {
      replacements.push_back(rw.constant(std::move(results[i]), n.output(i)->name()));
    }
    rw.replaceOp(&n, replacements);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> createConstantFoldingPass() {
  return std::make_unique<ConstantFoldingPass>();
}

}  // namespace npuc
