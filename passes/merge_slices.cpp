// merge_slices: Slice(Slice(x)) is one Slice when the composition is exactly expressible, which
// with constant parameters and static shapes it always is: per axis, a slice picks the indices
// first + k * step (k < count); picking from those again gives first1 + (first2 + j * step2) *
// step1, again an arithmetic progression. Axes sliced by only one of the two carry over as is.
#include <map>

#include "passes/core/ir_helpers.h"
#include "passes/core/matcher.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

// The indices one Slice takes along one axis: first, first + step, ... (count of them).
struct AxisRange {
  int64_t first = 0;
  int64_t step = 1;
  int64_t count = 0;
};

int64_t clamp(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// ONNX Slice semantics for one axis of size `dim`.
AxisRange resolve(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  AxisRange r;
  r.step = step;
  if (step > 0) {
    start = clamp(start, 0, dim);
    end = clamp(end, 0, dim);
    r.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = clamp(start, 0, dim - 1);
    end = clamp(end, -1, dim - 1);
    r.count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  r.first = start;
  return r;
}

// Per-axis ranges of a Slice node on an input of shape `shape`, or nullopt when its parameters
// are not constant.
std::optional<std::map<int64_t, AxisRange>> sliceRanges(const Node& n, const Shape& shape) {
  auto starts = constantInts(n.input(1)), ends = constantInts(n.input(2));
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes(starts->size()), steps(starts->size(), 1);
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (n.input(3)) {
    auto a = constantInts(n.input(3));
    if (!a || a->size() != axes.size()) return std::nullopt;
    axes = *a;
  }
  if (n.input(4)) {
    auto s = constantInts(n.input(4));
    if (!s || s->size() != steps.size()) return std::nullopt;
    steps = *s;
  }
  std::map<int64_t, AxisRange> out;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || steps[i] == 0 || out.count(axis)) return std::nullopt;
    out[axis] = resolve((*starts)[i], (*ends)[i], steps[i], shape[static_cast<size_t>(axis)]);
  }
  return out;
}

class MergeSlicePair : public RewritePattern {
 public:
  MergeSlicePair() : RewritePattern("merge_slice_pair", {"Slice"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Value* x = nullptr;
    Node* inner = nullptr;
    auto pat = m::op("Slice", m::op("Slice", m::any(&x)).allowExtraInputs().bind(&inner)).allowExtraInputs();
    if (m::matchRoot(root, pat, rw).failed()) return failure();
    Value* mid = root.input(0);
    if (!x->shapeIsStatic() || !mid->shapeIsStatic())
      return rw.notifyMatchFailure(root, "shapes are not static");
    auto r1 = sliceRanges(*inner, x->shape()), r2 = sliceRanges(root, mid->shape());
    if (!r1 || !r2) return rw.notifyMatchFailure(root, "slice parameters are not valid constants");
    std::map<int64_t, AxisRange> merged = *r1;
    for (const auto& [axis, second] : *r2) {
      auto it = merged.find(axis);
      if (it == merged.end()) {
        merged[axis] = second;
        continue;
      }
      const AxisRange first = it->second;
      if (second.count == 0 || first.count == 0) {
        return rw.notifyMatchFailure(root,
                                     "an empty slice on axis " + std::to_string(axis) + " is left alone");
      }
      it->second = {first.first + second.first * first.step, first.step * second.step, second.count};
    }
    std::vector<int64_t> starts, ends, axes, steps;
    for (const auto& [axis, r] : merged) {
      if (r.count == 0) return rw.notifyMatchFailure(root, "an empty slice is left alone");
      const int64_t last = r.first + (r.count - 1) * r.step;
      starts.push_back(r.first);
      // One past the last index, in the direction of travel. Going backwards past index 0 cannot be
      // written as -1 (that means "the last element"); -dim-1 resolves to "before index 0".
      const int64_t dim = x->shape()[static_cast<size_t>(axis)];
      ends.push_back(r.step > 0 ? last + 1 : (last == 0 ? -dim - 1 : last - 1));
      axes.push_back(axis);
      steps.push_back(r.step);
    }
    const std::string hint = root.name() + "_merged";
    std::vector<Value*> ins = {
        x, rw.constant(int64Vector(starts), hint + "_starts"), rw.constant(int64Vector(ends), hint + "_ends"),
        rw.constant(int64Vector(axes), hint + "_axes"), rw.constant(int64Vector(steps), hint + "_steps")};
    Node* slice = rw.createLike(*root.output(), "Slice", ins, {}, root.name());
    rw.replaceOp(&root, {slice->output()});
    return success();
  }
};

class MergeSlicesPass : public PatternPass {
 public:
  const char* name() const override { return "merge_slices"; }
  const char* description() const override { return "merges consecutive Slices into one"; }

 protected:
  void populate(PatternSet& p) const override { p.add<MergeSlicePair>(); }
};

}  // namespace

std::unique_ptr<Pass> createMergeSlicesPass() {
  return std::make_unique<MergeSlicesPass>();
}

}  // namespace npuc
