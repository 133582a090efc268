// scatter_nd_to_concat: a ScatterND whose constant indices write one box of data, in order,
// becomes Slices of data around the box and Concats that put the updates in place. This is what
// in-place slice assignment exports to (YOLOv5's Detect head: y[..., 0:2] = f(y[..., 0:2]) gives
// ScatterND(y, indices [1, 3, ny, nx, 2, 5], updates [1, 3, ny, nx, 2])), and unlike ScatterND,
// Slice and Concat are data movement the NPU runs.
//
// Matched form: reduction "none", indices a constant of shape [u_0, ..., u_{k-1}, k] (one index
// dim per coordinate), updates [u_0, ..., u_{k-1}] + data[k:], static shapes, and
//     indices[i_0, ..., i_{k-1}, j] == start_j + i_j   (after wrapping negative values)
// for every position, with 0 <= start_j and start_j + u_j <= data[j]. ScatterND then writes
// data[start + i] = updates[i] over the box [start_j, start_j + u_j) of the first k axes, each
// element once, and keeps data everywhere else.
//
// Rewrite, with P the axes where the box does not cover the whole dim, taken innermost first:
// `cur` starts as updates (the box). For axis a, D = data cut to the box on the axes of P before
// a; then cur = Concat_a(D[.., 0:start_a, ..], cur, D[.., start_a + u_a:, ..]) (empty pieces
// left out). After axis a, cur covers the box on the axes of P before a and everything from a
// on, so after the outermost axis it is the whole output. Pure copies: exact at every level.
//
// The next statement of such code reads the tensor it just assigned (y[..., 2:4] after
// y[..., 0:2] = ...): a Slice of the new Concat. When everything that Slice takes lies inside one
// Concat input, it slices that input instead (slice_through_concat). Besides dropping a
// dependency, this matters for INT8: the Concat's range covers the written pixel coordinates, so a
// copy of sigmoid outputs taken from it would sit on a grid of several pixels and round to zero;
// taken from the sigmoid tensor it keeps that tensor's parameters.
#include <algorithm>
#include <limits>

#include "passes/core/ir_helpers.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"
#include "passes/slice_util.h"

namespace npuc {
namespace {

struct Box {
  std::vector<int64_t> start;  // per coordinate axis
  std::vector<int64_t> size;   // u_j
};

// The box written by `scatter`, or the reason it is not one.
std::string describeBox(const Node& scatter, Box& box) {
  if (scatter.attrs().s("reduction", "none") != "none") return "it reduces (reduction != none)";
  const Value* data = scatter.input(0);
  const Value* idx = scatter.input(1);
  const Value* upd = scatter.input(2);
  if (!data->shapeIsStatic() || !upd->shapeIsStatic()) return "data or updates has no static shape";
  const auto values = constantInts(idx);
  if (!values) return "its indices are not a constant";
  const Shape& ishape = idx->shape();
  const Shape& dshape = data->shape();
  const int64_t k = ishape.back();
  if (static_cast<int64_t>(ishape.size()) != k + 1)
    return "indices " + shapeStr(ishape) + " do not have one dim per coordinate";
  if (k > static_cast<int64_t>(dshape.size())) return "indices address more dims than data has";
  const int64_t count = static_cast<int64_t>(values->size()) / std::max<int64_t>(k, 1);
  if (count == 0) return "it writes nothing";
  box.start.assign(static_cast<size_t>(k), 0);
  box.size.assign(ishape.begin(), ishape.end() - 1);
  // Walk the positions in row-major order, keeping the multi-index in `pos`.
  std::vector<int64_t> pos(static_cast<size_t>(k), 0);
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = dshape[static_cast<size_t>(j)];
      int64_t v = (*values)[static_cast<size_t>(t * k + j)];
      if (v < -dim || v >= dim) return "index " + std::to_string(v) + " is out of range for axis " + std::to_string(j);
      if (v < 0) v += dim;
      if (t == 0) box.start[static_cast<size_t>(j)] = v;
      if (v != box.start[static_cast<size_t>(j)] + pos[static_cast<size_t>(j)])
        return "its indices do not walk one box in order";
    }
    for (int64_t j = k; j-- > 0;) {
      if (++pos[static_cast<size_t>(j)] < box.size[static_cast<size_t>(j)]) break;
      pos[static_cast<size_t>(j)] = 0;
    }
  }
  for (int64_t j = 0; j < k; ++j) {
    if (box.start[static_cast<size_t>(j)] + box.size[static_cast<size_t>(j)] > dshape[static_cast<size_t>(j)])
      return "the box runs past the end of axis " + std::to_string(j);
  }
  return "";
}

class ScatterNdToConcat : public RewritePattern {
 public:
  ScatterNdToConcat() : RewritePattern("scatter_nd_to_concat", {"ScatterND"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Box box;
    if (std::string why = describeBox(root, box); !why.empty())
      return rw.notifyMatchFailure(root, "ScatterND '" + root.name() + "' stays (CPU): " + why);
    Value* data = root.input(0);
    Value* updates = root.input(2);
    const Shape& dshape = data->shape();
    std::vector<int64_t> partial;  // axes of P, outermost first
    for (size_t a = 0; a < box.start.size(); ++a) {
      if (box.start[a] != 0 || box.size[a] != dshape[a]) partial.push_back(static_cast<int64_t>(a));
    }
    if (partial.empty()) {
      // Every element is overwritten: the output is the updates.
      if (!rw.canReplace(*root.output(), *updates))
        return rw.notifyMatchFailure(root, "ScatterND '" + root.name() + "' overwrites everything but its "
                                           "updates cannot take the output's name");
      rw.replaceOp(&root, {updates});
      return success();
    }
    rw.setInsertionPointBefore(&root);
    const std::string base = root.name();
    Value* cur = updates;
    for (size_t p = partial.size(); p-- > 0;) {
      const int64_t a = partial[p];
      const size_t ua = static_cast<size_t>(a);
      // D's cut on the outer partial axes, plus one range on axis a.
      auto piece = [&](int64_t from, int64_t to) -> Value* {
        std::vector<int64_t> starts, ends, axes;
        for (size_t q = 0; q < p; ++q) {
          const size_t b = static_cast<size_t>(partial[q]);
          starts.push_back(box.start[b]);
          ends.push_back(box.start[b] + box.size[b]);
          axes.push_back(partial[q]);
        }
        starts.push_back(from);
        ends.push_back(to);
        axes.push_back(a);
        const std::string tag = base + "_ax" + std::to_string(a) + "_" + std::to_string(from);
        return rw
            .create("Slice",
                    {data, rw.constant(int64Vector(starts), tag + "_starts"), rw.constant(int64Vector(ends), tag + "_ends"),
                     rw.constant(int64Vector(axes), tag + "_axes")},
                    {}, tag)
            ->output();
      };
      std::vector<Value*> parts;
      if (box.start[ua] > 0) parts.push_back(piece(0, box.start[ua]));
      parts.push_back(cur);
      if (box.start[ua] + box.size[ua] < dshape[ua]) parts.push_back(piece(box.start[ua] + box.size[ua], dshape[ua]));
      Attributes attrs;
      attrs.set("axis", a);
      cur = p == 0 ? rw.createLike(*root.output(), "Concat", parts, attrs, base)->output()
                   : rw.create("Concat", parts, attrs, base + "_ax" + std::to_string(a))->output();
    }
    rw.replaceOp(&root, {cur});
    return success();
  }
};

class SliceThroughConcat : public RewritePattern {
 public:
  SliceThroughConcat() : RewritePattern("slice_through_concat", {"Slice"}) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    Node* concat = fusion::producerIs(root.input(0), "Concat");
    if (!concat || !concat->output()->shapeIsStatic()) return failure();
    const auto maps = slicing::constantSliceMaps(root);
    if (!maps) return failure();
    const int64_t rank = concat->output()->rank();
    int64_t concat_axis = concat->attrs().i("axis", 0);
    if (concat_axis < 0) concat_axis += rank;
    if (concat_axis < 0 || concat_axis >= rank) return failure();
    const size_t axis = static_cast<size_t>(concat_axis);
    const slicing::AxisMap& m = (*maps)[axis];
    if (m.count == 0) return failure();
    const int64_t lo = std::min(m.start, m.start + m.step * (m.count - 1));
    const int64_t hi = std::max(m.start, m.start + m.step * (m.count - 1));
    int64_t offset = 0;
    Value* source = nullptr;
    for (Value* in : concat->inputs()) {
      if (!in->shapeIsStatic()) return failure();
      const int64_t len = in->shape()[axis];
      if (lo >= offset && hi < offset + len) {
        source = in;
        break;
      }
      offset += len;
    }
    if (!source)
      return rw.notifyMatchFailure(root, "Slice '" + root.name() + "' takes elements of several Concat inputs");
    // The same Slice on `source`, its start on the Concat axis moved by the input's offset.
    std::vector<int64_t> starts, ends, axes, steps;
    for (size_t a = 0; a < maps->size(); ++a) {
      slicing::AxisMap am = (*maps)[a];
      if (a == axis) am.start -= offset;
      const int64_t dim = source->shape()[a];
      if (am.start == 0 && am.step == 1 && am.count == dim) continue;
      int64_t end = am.start + am.step * am.count;
      if (end < 0) end = std::numeric_limits<int64_t>::min();  // a negative step down to index 0
      starts.push_back(am.start);
      ends.push_back(end);
      axes.push_back(static_cast<int64_t>(a));
      steps.push_back(am.step);
    }
    Value* result = source;
    if (!axes.empty()) {
      rw.setInsertionPointBefore(&root);
      const std::string& n = root.name();
      result = rw.createLike(*root.output(), "Slice",
                             {source, rw.constant(int64Vector(starts), n + "_starts"),
                              rw.constant(int64Vector(ends), n + "_ends"), rw.constant(int64Vector(axes), n + "_axes"),
                              rw.constant(int64Vector(steps), n + "_steps")},
                             {}, n)
                   ->output();
    } else if (!rw.canReplace(*root.output(), *source)) {
      return rw.notifyMatchFailure(root, "Slice '" + root.name() + "' is a whole Concat input that cannot take "
                                         "the output's name");
    }
    rw.replaceOp(&root, {result});
    return success();
  }
};

class ScatterNdToConcatPass : public PatternPass {
 public:
  const char* name() const override { return "scatter_nd_to_concat"; }
  const char* description() const override {
    return "ScatterND writing one box at constant indices (in-place slice assignment) -> Slice + Concat; a "
           "Slice of a Concat inside one input slices that input";
  }

 protected:
  void populate(PatternSet& p) const override {
    p.add<ScatterNdToConcat>();
    p.add<SliceThroughConcat>();
  }
};

}  // namespace

std::unique_ptr<Pass> createScatterNdToConcatPass() {
  return std::make_unique<ScatterNdToConcatPass>();
}

}  // namespace npuc
