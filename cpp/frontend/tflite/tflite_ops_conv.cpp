// CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV (and mediapipe's Convolution2DTransposeBias),
// FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D. Weights are permuted to npuc's layouts here:
// OHWI -> OIHW, depthwise [1,H,W,C*M] -> grouped OIHW [C*M,1,H,W], transposed OHWI -> IOHW.
#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "frontend/tflite/tflite_ops.h"

namespace npuc::tflite {

namespace {

const std::vector<int64_t> kOhwiToIohw{3, 0, 1, 2};

int64_t samePadTotal(int64_t in, int64_t k, int64_t s, int64_t d) {
  const int64_t out = (in + s - 1) / s;
  const int64_t eff_k = (k - 1) * d + 1;
  return std::max<int64_t>((out - 1) * s + eff_k - in, 0);
}

void checkPositive(Builder& b, const char* what, int64_t v) {
  if (v <= 0) b.fail(std::string(what) + " is " + std::to_string(v) + ", must be positive");
}

Value* weightsIn(Builder& b, int i, const std::vector<int64_t>& perm, const char* what) {
  const Tensor* w = b.constInputOrNull(i);
  if (!w) b.unsupported(std::string(what) + " (" + b.file().tensorWhat(b.inputIndex(i)) + ") are not constant; npuc needs constant weights");
  if (w->rank() != static_cast<int64_t>(perm.size())) b.fail(std::string(what) + " have shape " + shapeStr(w->shape()) + ", expected rank " + std::to_string(perm.size()));
  Value* v = b.constant(permuteConstant(*w, perm), "weights");
  b.recordWeightScales(v, i, perm);
  return v;
}

// The optional bias input `i` as an FP32 [n] constant, or null when omitted.
Value* biasIn(Builder& b, int i, int64_t n) {
  if (!b.hasInput(i)) return nullptr;
  const Tensor& bias = b.constInput(i, "the bias");
  if (bias.numel() != n) b.fail("bias has shape " + shapeStr(bias.shape()) + ", expected [" + std::to_string(n) + "]");
  Tensor t = bias.dtype() == DType::Float32 ? bias.reshaped({n}) : bias.castTo(DType::Float32).reshaped({n});
  return b.constant(std::move(t), "bias");
}

void conv(Builder& b, Value* w, Value* bias, int64_t group, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
          int64_t dh, int64_t dw, bool same, int8_t act) {
  checkPositive(b, "stride_h", sh);
  checkPositive(b, "stride_w", sw);
  checkPositive(b, "dilation_h_factor", dh);
  checkPositive(b, "dilation_w_factor", dw);
  const Shape in = b.inputShape(0);
  if (in.size() != 4) b.fail("input has shape " + shapeStr(in) + ", expected 4-D NHWC");
  std::vector<Value*> ins{b.inputNchw(0), w};
  if (bias) ins.push_back(bias);
  Node* n = b.node("Conv", ins);
  n->attrs().set("kernel_shape", std::vector<int64_t>{kh, kw});
  n->attrs().set("strides", std::vector<int64_t>{sh, sw});
  n->attrs().set("dilations", std::vector<int64_t>{dh, dw});
  n->attrs().set("pads", tfPads(same, in[1], in[2], kh, kw, sh, sw, dh, dw));
  n->attrs().set("group", group);
  b.setOutput(0, b.fusedActivation(n->output(), act), true);
}

template <typename Options>
const Options& options(Builder& b, const Options* o, const char* name) {
  if (!o) b.fail(std::string("has no ") + name);
  return *o;
}

void convTranspose(Builder& b, int input_i, int weights_i, int bias_i, bool same, int64_t sh, int64_t sw, int8_t act) {
  checkPositive(b, "stride_h", sh);
  checkPositive(b, "stride_w", sw);
  const Shape in = b.inputShape(input_i);
  const Shape out = b.outputShape(0);
  if (in.size() != 4 || out.size() != 4) b.fail("input " + shapeStr(in) + " and output " + shapeStr(out) + " must be 4-D NHWC");
  Value* w = weightsIn(b, weights_i, kOhwiToIohw, "weights");
  const Shape& ws = w->constant().shape();  // [I, O, KH, KW]
  if (ws[0] != in[3] || ws[1] != out[3]) b.fail("weights " + shapeStr(ws) + " (IOHW) do not match input channels " + std::to_string(in[3]) + " and output channels " + std::to_string(out[3]));
  const int64_t kh = ws[2], kw = ws[3];
  // TF computes the padding as for the forward conv from the output to the input; the odd pixel
  // goes to the end. ONNX ConvTranspose removes pads from the full output (in-1)*s + k; an output
  // larger than that (VALID with an explicit output_shape) is output_padding.
  std::vector<int64_t> pads(4, 0), out_pad(2, 0);
  const int64_t ins[2] = {in[1], in[2]}, outs[2] = {out[1], out[2]}, ks[2] = {kh, kw}, ss[2] = {sh, sw};
  for (int d = 0; d < 2; ++d) {
    const int64_t begin = same ? samePadTotal(outs[d], ks[d], ss[d], 1) / 2 : 0;
    int64_t end = (ins[d] - 1) * ss[d] + ks[d] - begin - outs[d];
    if (end < 0) {
      out_pad[static_cast<size_t>(d)] = -end;
      end = 0;
    }
    pads[static_cast<size_t>(d)] = begin;
    pads[static_cast<size_t>(d) + 2] = end;
  }
  std::vector<Value*> args{b.inputNchw(input_i), w};
  if (Value* bias = biasIn(b, bias_i, out[3])) args.push_back(bias);
  Node* n = b.node("ConvTranspose", args);
  n->attrs().set("kernel_shape", std::vector<int64_t>{kh, kw});
  n->attrs().set("strides", std::vector<int64_t>{sh, sw});
  n->attrs().set("dilations", std::vector<int64_t>{1, 1});
  n->attrs().set("pads", pads);
  n->attrs().set("group", int64_t{1});
  if (out_pad[0] || out_pad[1]) n->attrs().set("output_padding", out_pad);
  b.setOutput(0, b.fusedActivation(n->output(), act), true);
}

void pool(Builder& b, const std::string& op_type) {
  b.expectArity(1, 1, 1);
  const auto& o = options(b, b.op().builtin_options_as_Pool2DOptions(), "Pool2DOptions");
  checkPositive(b, "filter_height", o.filter_height());
  checkPositive(b, "filter_width", o.filter_width());
  checkPositive(b, "stride_h", o.stride_h());
  checkPositive(b, "stride_w", o.stride_w());
  const Shape in = b.inputShape(0);
  if (in.size() != 4) b.fail("input has shape " + shapeStr(in) + ", expected 4-D NHWC");
  Node* n = b.node(op_type, {b.inputNchw(0)});
  n->attrs().set("kernel_shape", std::vector<int64_t>{o.filter_height(), o.filter_width()});
  n->attrs().set("strides", std::vector<int64_t>{o.stride_h(), o.stride_w()});
  n->attrs().set("pads", tfPads(o.padding() == fb::Padding_SAME, in[1], in[2], o.filter_height(), o.filter_width(),
                                o.stride_h(), o.stride_w(), 1, 1));
  // TFLite's average pool divides by the number of real (non-padding) pixels in the window.
  if (op_type == "AveragePool") n->attrs().set("count_include_pad", int64_t{0});
  b.setOutput(0, b.fusedActivation(n->output(), o.fused_activation_function()), true);
}

}  // namespace

std::vector<int64_t> tfPads(bool same, int64_t in_h, int64_t in_w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                            int64_t dh, int64_t dw) {
  if (!same) return {0, 0, 0, 0};
  const int64_t th = samePadTotal(in_h, kh, sh, dh), tw = samePadTotal(in_w, kw, sw, dw);
  return {th / 2, tw / 2, th - th / 2, tw - tw / 2};
}

void convertConv2d(Builder& b) {
  b.expectArity(2, 3, 1);
  const auto& o = options(b, b.op().builtin_options_as_Conv2DOptions(), "Conv2DOptions");
  const Shape in = b.inputShape(0);
  Value* w = weightsIn(b, 1, kToNchw, "weights");  // OHWI -> OIHW
  const Shape& ws = w->constant().shape();
  if (in.size() != 4 || ws[1] <= 0 || in[3] <= 0 || in[3] % ws[1] != 0) b.fail("weights " + shapeStr(ws) + " (OIHW) do not divide the input channels of " + shapeStr(in));
  const int64_t group = in[3] / ws[1];
  if (ws[0] % group != 0) b.fail("output channels " + std::to_string(ws[0]) + " are not a multiple of the " + std::to_string(group) + " groups");
  conv(b, w, biasIn(b, 2, ws[0]), group, ws[2], ws[3], o.stride_h(), o.stride_w(), o.dilation_h_factor(),
       o.dilation_w_factor(), o.padding() == fb::Padding_SAME, o.fused_activation_function());
}

void convertDepthwiseConv2d(Builder& b) {
  b.expectArity(2, 3, 1);
  const auto& o = options(b, b.op().builtin_options_as_DepthwiseConv2DOptions(), "DepthwiseConv2DOptions");
  const Shape in = b.inputShape(0);
  Value* w = weightsIn(b, 1, kOhwiToIohw, "weights");  // [1,H,W,C*M] -> [C*M,1,H,W]
  const Shape& ws = w->constant().shape();
  if (in.size() != 4 || ws[1] != 1 || in[3] <= 0 || ws[0] % in[3] != 0) {
    b.fail("depthwise weights " + shapeStr(ws) + " ([C*M,1,H,W]) do not match the input channels of " + shapeStr(in));
  }
  // Output channel c*M + m reads input channel c: a grouped conv with one group per input channel.
  conv(b, w, biasIn(b, 2, ws[0]), in[3], ws[2], ws[3], o.stride_h(), o.stride_w(), o.dilation_h_factor(),
       o.dilation_w_factor(), o.padding() == fb::Padding_SAME, o.fused_activation_function());
}

void convertTransposeConv(Builder& b) {
  b.expectArity(3, 4, 1);  // output_shape, weights, input, [bias]
  const auto& o = options(b, b.op().builtin_options_as_TransposeConvOptions(), "TransposeConvOptions");
  convTranspose(b, 2, 1, 3, o.padding() == fb::Padding_SAME, o.stride_h(), o.stride_w(), o.fused_activation_function());
}

void convertConvTransposeBias(Builder& b) {
  // mediapipe's Convolution2DTransposeBias: inputs (input, OHWI weights, bias); its custom options
  // are TfLiteTransposeConvParams as raw int32s: padding (1 SAME, 2 VALID), stride_w, stride_h.
  // The same computation as TRANSPOSE_CONV with the bias added.
  b.expectArity(3, 3, 1);
  const auto* opt = b.op().custom_options();
  if (!opt || opt->size() < 12) b.fail("custom options hold " + std::to_string(opt ? opt->size() : 0) + " bytes, expected 12 (padding, stride_w, stride_h)");
  int32_t p[3];
  std::memcpy(p, opt->data(), sizeof(p));
  if (p[0] != 1 && p[0] != 2) b.fail("padding code " + std::to_string(p[0]) + " (expected 1 SAME or 2 VALID)");
  convTranspose(b, 0, 1, 2, p[0] == 1, p[2], p[1], fb::ActivationFunctionType_NONE);
}

void convertFullyConnected(Builder& b) {
  b.expectArity(2, 3, 1);
  const auto& o = options(b, b.op().builtin_options_as_FullyConnectedOptions(), "FullyConnectedOptions");
  if (o.weights_format() != 0) b.unsupported("weights_format " + std::to_string(o.weights_format()) + " (shuffled int8) is not supported");
  const Tensor* wt = b.constInputOrNull(1);
  if (!wt) b.unsupported("weights (" + b.file().tensorWhat(b.inputIndex(1)) + ") are not constant; npuc needs constant weights");
  if (wt->rank() != 2) b.fail("weights have shape " + shapeStr(wt->shape()) + ", expected [units, inputs]");
  const int64_t units = wt->dim(0), k = wt->dim(1);
  const Shape in = b.inputShape(0);
  const int64_t numel = shapeNumel(in);
  if (k <= 0 || numel % k != 0) b.fail("input " + shapeStr(in) + " does not flatten into rows of " + std::to_string(k));
  // TFLite flattens the NHWC tensor (inputFile: a Reshape instead of a Transpose when H*W or C is 1).
  Value* x = b.inputFile(0);
  Value* flat = b.node("Reshape", {x, b.int64s({numel / k, k}, "flat_shape")}, "flatten")->output();
  Value* wv = b.constant(wt->dtype() == DType::Float32 ? *wt : wt->castTo(DType::Float32), "weights");
  b.recordWeightScales(wv, 1, {0, 1});
  std::vector<Value*> args{flat, wv};
  if (Value* bias = biasIn(b, 2, units)) args.push_back(bias);
  Node* gemm = b.node("Gemm", args);
  gemm->attrs().set("transB", int64_t{1});
  Value* y = b.fusedActivation(gemm->output(), o.fused_activation_function());
  const Shape out = b.outputShape(0);
  if (out.size() != 2 || out[0] != numel / k) {
    y = b.node("Reshape", {y, b.int64s(out, "out_shape")}, "reshape")->output();
    if (out.size() == 4) {
      b.setOutput(0, b.toNchw(y, out, "to_nchw"), true);
      return;
    }
  }
  b.setOutput(0, y, false);
}

void convertAveragePool(Builder& b) { pool(b, "AveragePool"); }
void convertMaxPool(Builder& b) { pool(b, "MaxPool"); }

}  // namespace npuc::tflite
