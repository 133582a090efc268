// Ops that cut, split or regroup a tensor: STRIDED_SLICE, SLICE, SQUEEZE, EXPAND_DIMS, SPLIT,
// SPLIT_V, DEPTH_TO_SPACE, SPACE_TO_DEPTH. Axes are remapped to NCHW where the result stays 4-D;
// ops that change the rank work on the file's layout (tflite_builder.h).
#include <cstdint>

#include "common/error.h"
#include "frontend/tflite/tflite_ops.h"

namespace npuc::tflite {

namespace {

// Slices [begin, end) with steps on the listed file axes; a 4-D NCHW input slices in NCHW (each
// axis remapped) when the result stays 4-D, else in the file's layout. `squeeze` lists file axes
// removed afterwards (STRIDED_SLICE's shrink_axis_mask).
void emitSlice(Builder& b, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> steps,
               const std::vector<int64_t>& squeeze) {
  const int64_t rank = static_cast<int64_t>(starts.size());
  const bool nchw = b.inputIsNchw(0) && squeeze.empty();
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) axes[static_cast<size_t>(d)] = nchw ? nhwcAxisToNchw(d) : d;
  Value* x = nchw ? b.input(0) : b.inputFile(0);
  Value* y = b.node("Slice", {x, b.int64s(starts, "starts"), b.int64s(ends, "ends"), b.int64s(axes, "axes"),
                              b.int64s(steps, "steps")}, squeeze.empty() ? "" : "slice")->output();
  if (!squeeze.empty()) y = b.node("Squeeze", {y, b.int64s(squeeze, "squeeze_axes")})->output();
  if (!nchw && b.outputShape(0).size() == 4) {  // a 4-D result of a file-layout slice
    b.setOutput(0, b.toNchw(y, b.outputShape(0), "to_nchw"), true);
    return;
  }
  b.setOutput(0, y, nchw);
}

}  // namespace

void convertStridedSlice(Builder& b) {
  b.expectArity(3, 4, 1);
  const auto* o = b.op().builtin_options_as_StridedSliceOptions();
  const int begin_mask = o ? o->begin_mask() : 0, end_mask = o ? o->end_mask() : 0, shrink = o ? o->shrink_axis_mask() : 0;
  if (o && (o->ellipsis_mask() || o->new_axis_mask() || o->offset())) {
    b.unsupported("ellipsis_mask, new_axis_mask and offset are not supported");
  }
  const Shape in = b.inputShape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> begin = constInts(b, 1, "begin"), end = constInts(b, 2, "end");
  std::vector<int64_t> steps = b.hasInput(3) ? constInts(b, 3, "strides") : std::vector<int64_t>(begin.size(), 1);
  if (static_cast<int64_t>(begin.size()) != rank || end.size() != begin.size() || steps.size() != begin.size()) {
    b.fail("begin/end/strides must have one entry per dim of " + shapeStr(in));
  }
  std::vector<int64_t> squeeze;
  for (int64_t d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    if (steps[i] == 0) b.fail("stride 0 in dim " + std::to_string(d));
    // Masked ends run to the edge in the step's direction (ONNX clamps out-of-range bounds).
    if (begin_mask & (1 << d)) begin[i] = steps[i] > 0 ? 0 : INT64_MAX;
    if (end_mask & (1 << d)) end[i] = steps[i] > 0 ? INT64_MAX : INT64_MIN;
    if (shrink & (1 << d)) {  // one element at begin, then the dim goes
      const int64_t s = begin[i] < 0 ? begin[i] + in[i] : begin[i];
      begin[i] = s;
      end[i] = s + 1;
      steps[i] = 1;
      squeeze.push_back(d);
    }
  }
  emitSlice(b, begin, end, steps, squeeze);
}

void convertSlice(Builder& b) {
  b.expectArity(3, 3, 1);
  const Shape in = b.inputShape(0);
  std::vector<int64_t> begin = constInts(b, 1, "begin"), size = constInts(b, 2, "size");
  if (begin.size() != in.size() || size.size() != in.size()) b.fail("begin/size must have one entry per dim of " + shapeStr(in));
  std::vector<int64_t> end(in.size());
  for (size_t i = 0; i < in.size(); ++i) end[i] = size[i] < 0 ? INT64_MAX : begin[i] + size[i];  // -1: to the end
  emitSlice(b, begin, end, std::vector<int64_t>(in.size(), 1), {});
}

void convertSqueeze(Builder& b) {
  b.expectArity(1, 1, 1);
  const Shape in = b.inputShape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (const auto* o = b.op().builtin_options_as_SqueezeOptions(); o && o->squeeze_dims()) {
    for (int32_t a : *o->squeeze_dims()) axes.push_back(normalizeAxis(b, a, rank, "squeeze dim"));
  }
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      if (in[static_cast<size_t>(d)] == 1) axes.push_back(d);
  // The result has fewer dims than 4: squeeze the file-layout tensor.
  Value* y = b.node("Squeeze", {b.inputFile(0), b.int64s(axes, "axes")})->output();
  b.setOutput(0, y, false);
}



void convertDepthSpace(Builder& b) {
  b.expectArity(1, 1, 1);
  const bool to_space = b.file().builtinCode(b.op(), 0) == fb::BuiltinOperator_DEPTH_TO_SPACE;
  int64_t block = 0;
  if (to_space) {
    if (const auto* o = b.op().builtin_options_as_DepthToSpaceOptions()) block = o->block_size();
  } else if (const auto* o = b.op().builtin_options_as_SpaceToDepthOptions()) {
    block = o->block_size();
  }
  if (block < 1) b.fail("block_size is " + std::to_string(block) + ", must be positive");
  if (b.inputShape(0).size() != 4) b.fail("input has shape " + shapeStr(b.inputShape(0)) + ", expected 4-D NHWC");
  // TF orders the moved channels as (row in block, column in block, channel): ONNX's DCR mode for
  // DepthToSpace, and the only order of ONNX SpaceToDepth.
  Node* n = b.node(to_space ? "DepthToSpace" : "SpaceToDepth", {b.inputNchw(0)});
  n->attrs().set("blocksize", block);
  if (to_space) n->attrs().set("mode", std::string("DCR"));
  b.setOutput(0, n->output(), true);
}

void convertExpandDims(Builder& b) {
  b.expectArity(2, 2, 1);
  const int64_t out_rank = static_cast<int64_t>(b.outputShape(0).size());
  const std::vector<int64_t> axis = constInts(b, 1, "the axis");
  if (axis.size() != 1) b.fail("axis must hold one value");
  const int64_t a = normalizeAxis(b, axis[0], out_rank, "axis");
  Value* y = b.node("Unsqueeze", {b.inputFile(0), b.int64s({a}, "axes")})->output();
  if (out_rank == 4) {
    b.setOutput(0, b.toNchw(y, b.outputShape(0), "to_nchw"), true);
    return;
  }
  b.setOutput(0, y, false);
}

void convertSplit(Builder& b) {
  // SPLIT: (axis, data) into num_splits equal parts; SPLIT_V: (data, size_splits, axis).
  const bool v = b.file().builtinCode(b.op(), 0) == fb::BuiltinOperator_SPLIT_V;
  const int outs = b.numOutputs();
  if (outs < 1) b.fail("has no outputs");
  b.expectArity(v ? 3 : 2, v ? 3 : 2, outs);
  const int data = v ? 0 : 1;
  const Shape in = b.inputShape(data);
  const int64_t rank = static_cast<int64_t>(in.size());
  const std::vector<int64_t> axis_v = constInts(b, v ? 2 : 0, "the axis");
  if (axis_v.size() != 1) b.fail("axis must hold one value");
  int64_t axis = normalizeAxis(b, axis_v[0], rank, "axis");
  std::vector<int64_t> sizes;
  for (int i = 0; i < outs; ++i) {
    const Shape o = b.outputShape(i);
    if (static_cast<int64_t>(o.size()) != rank) b.fail("output " + std::to_string(i) + " has shape " + shapeStr(o) + " for input " + shapeStr(in));
    sizes.push_back(o[static_cast<size_t>(axis)]);
  }
  const bool nchw = b.inputIsNchw(data);
  Value* x = b.input(data);
  if (nchw) axis = nhwcAxisToNchw(axis);
  Node* n = b.node("Split", {x, b.int64s(sizes, "split")}, "", static_cast<size_t>(outs));
  n->attrs().set("axis", axis);
  for (int i = 0; i < outs; ++i) b.setOutput(i, n->output(static_cast<size_t>(i)), nchw);
}

}  // namespace npuc::tflite
