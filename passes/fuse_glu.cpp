// fuse_glu: the gated linear unit as exporters write it becomes one ai.npuc GLU(axis):
//
//   a, b = Split(x, 2 equal halves along axis)      a = Slice(x, [0, C/2) on axis)
//   y = Mul(a, Sigmoid(b))                    or    b = Slice(x, [C/2, C) on axis)
//                                                   y = Mul(a, Sigmoid(b))
//
// Mul operands in either order. The halves must be the first and second half in that order
// (Mul(b, Sigmoid(a)) is a different function and is left alone). GLU computes a * sigmoid(b)
// with the same float operations, but its sigmoid kernel need not round like the Sigmoid op's:
// level 3 only. With a target SoC whose NPU runs the Split/Slice, Sigmoid and Mul but not GLU, the
// fusion is refused (it would put one CPU op and two hand-overs where the NPU ran everything).
#include <algorithm>

#include "opset/registry.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"
#include "passes/npu_candidate.h"

namespace npuc {
namespace {

using fusion::producerIs;

// The source tensor and axis of two values that are its first and second halves, or nullopt.
struct Halves {
  Value* source = nullptr;
  int64_t axis = 0;
  std::vector<Node*> producers;  // the Split, or the two Slices
};

// Sizes the Split node gives its outputs along `axis` (nullopt if not constant).
std::optional<std::vector<int64_t>> splitSizes(const Node& split, int64_t dim) {
  if (split.input(1)) return constantInts(split.input(1));
  if (split.attrs().has("split")) return split.attrs().ints("split");
  const int64_t n = static_cast<int64_t>(split.numOutputs());
  if (dim % n != 0) return std::nullopt;
  return std::vector<int64_t>(static_cast<size_t>(n), dim / n);
}

std::optional<Halves> splitHalves(Value* first, Value* second, std::string& why) {
  Node* split = producerIs(first, "Split");
  if (!split || second->producer() != split || split->numOutputs() != 2 || first->producerIndex() != 0 ||
      second->producerIndex() != 1)
    return std::nullopt;
  Value* x = split->input(0);
  if (!x->shapeIsStatic()) return std::nullopt;
  const int64_t axis =
      split->attrs().i("axis", 0) < 0 ? split->attrs().i("axis", 0) + x->rank() : split->attrs().i("axis", 0);
  const auto sizes = splitSizes(*split, x->shape()[static_cast<size_t>(axis)]);
  if (!sizes || sizes->size() != 2 || (*sizes)[0] != (*sizes)[1]) {
    why = "Split '" + split->name() + "' does not cut its input into two equal halves";
    return std::nullopt;
  }
  return Halves{x, axis, {split}};
}

// [begin, end) a single-axis, unit-step Slice takes along its axis, clamped to the dim.
struct SliceRange {
  Value* source = nullptr;
  int64_t axis = 0, begin = 0, end = 0;
};

std::optional<SliceRange> sliceRange(const Node* slice) {
  if (!slice || !slice->input(0)->shapeIsStatic()) return std::nullopt;
  auto starts = constantInts(slice->input(1)), ends = constantInts(slice->input(2));
  using Ints = std::vector<int64_t>;
  auto axes = slice->input(3) ? constantInts(slice->input(3)) : std::optional<Ints>(Ints{0});
  auto steps = slice->input(4) ? constantInts(slice->input(4)) : std::optional<Ints>(Ints{1});
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 || axes->size() != 1 ||
      steps->size() != 1 || (*steps)[0] != 1)
    return std::nullopt;
  const Value* x = slice->input(0);
  SliceRange r;
  r.source = slice->input(0);
  r.axis = (*axes)[0] < 0 ? (*axes)[0] + x->rank() : (*axes)[0];
  if (r.axis < 0 || r.axis >= x->rank()) return std::nullopt;
  const int64_t dim = x->shape()[static_cast<size_t>(r.axis)];
  auto clamp = [dim](int64_t v) { return std::max<int64_t>(0, std::min(dim, v < 0 ? v + dim : v)); };
  r.begin = clamp((*starts)[0]);
  r.end = clamp((*ends)[0]);
  return r;
}

std::optional<Halves> sliceHalves(Value* first, Value* second, std::string& why) {
  Node* s1 = producerIs(first, "Slice");
  Node* s2 = producerIs(second, "Slice");
  const auto r1 = sliceRange(s1), r2 = sliceRange(s2);
  if (!r1 || !r2 || r1->source != r2->source || r1->axis != r2->axis) return std::nullopt;
  const int64_t dim = r1->source->shape()[static_cast<size_t>(r1->axis)];
  if (dim % 2 != 0 || r1->begin != 0 || r1->end != dim / 2 || r2->begin != dim / 2 || r2->end != dim) {
    why = "Slices '" + s1->name() + "' and '" + s2->name() + "' are not the first and second half of '" +
          r1->source->name() + "'";
    return std::nullopt;
  }
  return Halves{r1->source, r1->axis, {s1, s2}};
}

class FuseGlu : public RewritePattern {
 public:
  FuseGlu() : RewritePattern("fuse_glu", {"Mul"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    if (root.numInputs() != 2) return failure();
    for (size_t i = 0; i < 2; ++i) {
      Node* sigmoid = producerIs(root.input(1 - i), "Sigmoid");
      if (!sigmoid) continue;
      Value* first = root.input(i);
      Value* second = sigmoid->input(0);
      std::string why;
      std::optional<Halves> h = splitHalves(first, second, why);
      if (!h && why.empty()) h = sliceHalves(first, second, why);
      auto refuse = [&](const std::string& reason) {
        return rw.notifyMatchFailure(root, "GLU at node '" + root.name() + "' not fused: " + reason);
      };
      if (!why.empty()) return refuse(why);
      if (!h) continue;
      for (const Value* v : {first, second, sigmoid->output()}) {
        if (std::string p = m::interiorUseProblem(*v); !p.empty()) return refuse(p);
      }
      if (!fusion::isStaticFloat32(h->source))
        return refuse("'" + h->source->name() + "' is not static float32");
      Attributes a;
      a.set("axis", h->axis);
      std::vector<const Node*> parts(h->producers.begin(), h->producers.end());
      parts.push_back(sigmoid);
      parts.push_back(&root);
      if (std::string p =
              fusionLeavesNpu(rw.context(), parts, "GLU", kNpucDomain, {{DType::Float32, h->source->shape()}},
                              a, DType::Float32, root.output()->shape());
          !p.empty())
        return refuse(p);
      rw.setInsertionPointBefore(&root);
      Node* glu = fusion::createNpucOp(rw, DType::Float32, root.output()->shape(), "GLU", {h->source}, a,
                                       root.name());
      rw.replaceOp(&root, {glu->output()});
      return success();
    }
    return failure();
  }
};

class FuseGluPass : public PatternPass {
 public:
  const char* name() const override { return "fuse_glu"; }
  const char* description() const override { return "Split/Slice halves + Sigmoid + Mul -> ai.npuc GLU"; }
  bool changesNumerics() const override { return true; }

 protected:
  void populate(PatternSet& p) const override { p.add<FuseGlu>(); }
};

}  // namespace

std::unique_ptr<Pass> createFuseGluPass() {
  return std::make_unique<FuseGluPass>();
}

}  // namespace npuc
