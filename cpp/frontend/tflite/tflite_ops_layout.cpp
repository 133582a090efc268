// Ops whose parameters name axes or dims of the NHWC tensor, remapped to NCHW here: RESHAPE,
// CONCATENATION, PAD/PADV2, RESIZE_BILINEAR/RESIZE_NEAREST_NEIGHBOR, MEAN (and the other
// reductions), SOFTMAX, TRANSPOSE; and DEQUANTIZE/QUANTIZE, which become constants or nothing.
// (Slices, splits and block moves: tflite_ops_slice.cpp.)
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/error.h"
#include "frontend/tflite/tflite_ops.h"

namespace npuc::tflite {

int64_t normalizeAxis(Builder& b, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) b.fail(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> constInts(Builder& b, int i, const std::string& what) {
  return b.constInput(i, what).toInt64Vector();
}

void convertReshape(Builder& b) {
  b.expectArity(1, 2, 1);
  // The file's output shape is the truth (new_shape / the shape input may hold -1).
  const Shape out = b.outputShape(0);
  const Shape in = b.inputShape(0);
  if (shapeNumel(out) != shapeNumel(in)) b.fail("reshapes " + shapeStr(in) + " (" + std::to_string(shapeNumel(in)) + " elements) to " + shapeStr(out));
  if (b.inputIsNchw(0) && out == in) {  // a no-op reshape keeps the NCHW value
    b.setOutput(0, b.node("Identity", {b.input(0)})->output(), true);
    return;
  }
  // Reshape is defined on the NHWC element order: go back to it, reshape, and come to NCHW again
  // if the result is 4-D.
  Value* y = b.node("Reshape", {b.inputFile(0), b.int64s(out, "shape")})->output();
  if (out.size() == 4) {
    b.setOutput(0, b.toNchw(y, out, "to_nchw"), true);
    return;
  }
  b.setOutput(0, y, false);
}

void convertConcatenation(Builder& b) {
  if (b.numInputs() < 1) b.fail("has no inputs");
  b.expectArity(1, -1, 1);
  const auto* o = b.op().builtin_options_as_ConcatenationOptions();
  if (!o) b.fail("has no ConcatenationOptions");
  const Shape out = b.outputShape(0);
  const int64_t rank = static_cast<int64_t>(out.size());
  int64_t axis = normalizeAxis(b, o->axis(), rank, "axis");
  std::vector<Value*> ins;
  const bool nchw = rank == 4;
  for (int i = 0; i < b.numInputs(); ++i) {
    if (b.inputShape(i).size() != out.size()) b.fail("input " + std::to_string(i) + " has shape " + shapeStr(b.inputShape(i)) + ", output " + shapeStr(out));
    ins.push_back(nchw ? b.inputNchw(i) : b.inputFile(i));
  }
  if (nchw) axis = nhwcAxisToNchw(axis);
  Node* n = b.node("Concat", ins);
  n->attrs().set("axis", axis);
  b.setOutput(0, b.fusedActivation(n->output(), o->fused_activation_function()), nchw);
}

void convertPad(Builder& b) {
  b.expectArity(2, 3, 1);
  const Shape in = b.inputShape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  const Tensor& p = b.constInput(1, "paddings");
  if (p.numel() != 2 * rank) b.fail("paddings have shape " + shapeStr(p.shape()) + ", expected [" + std::to_string(rank) + ", 2]");
  const std::vector<int64_t> pv = p.toInt64Vector();
  const bool nchw = rank == 4;
  std::vector<int64_t> pads(static_cast<size_t>(2 * rank));
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t to = nchw ? nhwcAxisToNchw(d) : d;
    pads[static_cast<size_t>(to)] = pv[static_cast<size_t>(2 * d)];
    pads[static_cast<size_t>(to + rank)] = pv[static_cast<size_t>(2 * d + 1)];
    if (pv[static_cast<size_t>(2 * d)] < 0 || pv[static_cast<size_t>(2 * d + 1)] < 0) b.fail("negative padding in dim " + std::to_string(d));
  }
  std::vector<Value*> args{nchw ? b.inputNchw(0) : b.inputFile(0), b.int64s(pads, "pads")};
  if (b.hasInput(2)) {  // PADV2's constant value
    const Tensor& cv = b.constInput(2, "the constant value");
    if (cv.numel() != 1) b.fail("constant value has shape " + shapeStr(cv.shape()) + ", expected one element");
    args.push_back(b.constant(Tensor::scalar(static_cast<float>(cv.doubleAt(0))), "value"));
  }
  Node* n = b.node("Pad", args);
  n->attrs().set("mode", std::string("constant"));
  b.setOutput(0, n->output(), nchw);
}

void convertResize(Builder& b) {
  b.expectArity(2, 2, 1);
  const bool bilinear = b.file().builtinCode(b.op(), 0) == fb::BuiltinOperator_RESIZE_BILINEAR;
  bool align = false, half = false;
  if (bilinear) {
    if (const auto* o = b.op().builtin_options_as_ResizeBilinearOptions()) align = o->align_corners(), half = o->half_pixel_centers();
  } else if (const auto* o = b.op().builtin_options_as_ResizeNearestNeighborOptions()) {
    align = o->align_corners(), half = o->half_pixel_centers();
  }
  if (align && half) b.unsupported("align_corners together with half_pixel_centers is not supported");
  const Shape in = b.inputShape(0), out = b.outputShape(0);
  if (in.size() != 4 || out.size() != 4) b.fail("input " + shapeStr(in) + " and output " + shapeStr(out) + " must be 4-D NHWC");
  const std::vector<int64_t> size = constInts(b, 1, "the output size");
  if (size.size() != 2 || size[0] != out[1] || size[1] != out[2]) b.fail("size input does not match the output shape " + shapeStr(out));
  Node* n = b.node("Resize", {b.inputNchw(0), nullptr, nullptr, b.int64s({out[0], out[3], out[1], out[2]}, "sizes")});
  // TF's sampling in ONNX terms: bilinear half_pixel_centers is half_pixel (edges clamp the same);
  // nearest with half_pixel_centers floors (x + 0.5) * in/out, which is tf_half_pixel_for_nn;
  // align_corners nearest rounds half away from zero (round_prefer_ceil on coordinates >= 0).
  n->attrs().set("mode", std::string(bilinear ? "linear" : "nearest"));
  std::string coord = align ? "align_corners" : half ? (bilinear ? "half_pixel" : "tf_half_pixel_for_nn") : "asymmetric";
  n->attrs().set("coordinate_transformation_mode", coord);
  if (!bilinear) n->attrs().set("nearest_mode", std::string(align ? "round_prefer_ceil" : "floor"));
  b.setOutput(0, n->output(), true);
}

void convertMean(Builder& b) {
  b.expectArity(2, 2, 1);
  std::string op_type;
  switch (b.file().builtinCode(b.op(), 0)) {
    case fb::BuiltinOperator_MEAN: op_type = "ReduceMean"; break;
    case fb::BuiltinOperator_SUM: op_type = "ReduceSum"; break;
    case fb::BuiltinOperator_REDUCE_MAX: op_type = "ReduceMax"; break;
    case fb::BuiltinOperator_REDUCE_MIN: op_type = "ReduceMin"; break;
    default: op_type = "ReduceProd"; break;
  }
  const auto* o = b.op().builtin_options_as_ReducerOptions();
  const bool keep = o && o->keep_dims();
  const Shape in = b.inputShape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = constInts(b, 1, "the axes");
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    a = normalizeAxis(b, a, rank, "axis");
    reduced[static_cast<size_t>(a)] = true;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  bool in_nchw = rank == 4;
  if (in_nchw && !keep) {
    // Without keep_dims the result keeps the NHWC order of the dims left; reducing the NCHW
    // tensor gives the same order unless C and a spatial dim both survive.
    const bool c_left = !reduced[3] && in[3] != 1, hw_left = (!reduced[1] && in[1] != 1) || (!reduced[2] && in[2] != 1);
    if (c_left && hw_left) in_nchw = false;
  }
  Value* x = in_nchw ? b.inputNchw(0) : b.inputFile(0);
  if (in_nchw)
    for (int64_t& a : axes) a = nhwcAxisToNchw(a);
  Node* n = b.node(op_type, {x, b.int64s(axes, "axes")});
  n->attrs().set("keepdims", int64_t{keep ? 1 : 0});
  b.setOutput(0, n->output(), in_nchw && keep);
}

void convertSoftmax(Builder& b) {
  b.expectArity(1, 1, 1);
  const auto* o = b.op().builtin_options_as_SoftmaxOptions();
  const float beta = o ? o->beta() : 1.f;
  Value* x = b.input(0);
  const bool nchw = b.inputIsNchw(0);
  if (beta != 1.f) x = b.node("Mul", {x, b.constant(Tensor::scalar(beta), "beta")}, "beta")->output();
  Node* n = b.node("Softmax", {x});
  n->attrs().set("axis", int64_t{nchw ? 1 : -1});  // TFLite's softmax runs over the last (channel) dim
  b.setOutput(0, n->output(), nchw);
}

void convertDequantize(Builder& b) {
  b.expectArity(1, 1, 1);
  // float16 or int8 weights stored compactly and widened at run time: fold to an FP32 constant.
  if (const Tensor* c = b.constInputOrNull(0)) {
    b.setOutput(0, b.constant(c->dtype() == DType::Float32 ? *c : c->castTo(DType::Float32), "fp32"), false);
    return;
  }
  // On an activation the graph is already float: the op is nothing.
  b.aliasOutput(0, b.input(0), b.inputIsNchw(0));
}

void convertQuantize(Builder& b) {
  b.expectArity(1, 1, 1);
  // npuc's graph is float; the file's quantization becomes ranges (tflite_import.h). A QUANTIZE
  // (float -> int, or a requantization int -> int) is then nothing.
  b.aliasOutput(0, b.input(0), b.inputIsNchw(0));
}

void convertTranspose(Builder& b) {
  b.expectArity(2, 2, 1);
  const Shape in = b.inputShape(0);
  std::vector<int64_t> perm = constInts(b, 1, "the permutation");
  if (perm.size() != in.size()) b.fail("permutation has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(in.size()));
  for (int64_t& p : perm) p = normalizeAxis(b, p, static_cast<int64_t>(in.size()), "permutation entry");
  if (in.size() == 4) {
    // In NCHW terms: to NHWC, the file's perm, back to NCHW, composed into one perm.
    std::vector<int64_t> c(4);
    for (size_t i = 0; i < 4; ++i) c[i] = kToNhwc[static_cast<size_t>(perm[static_cast<size_t>(kToNchw[i])])];
    b.setOutput(0, b.transpose(b.inputNchw(0), c, ""), true);
    return;
  }
  b.setOutput(0, b.transpose(b.inputFile(0), perm, ""), false);
}

}  // namespace npuc::tflite
