// BatchNorm, Scale and PReLU: Caffe's per-channel layers. Caffe splits batch normalization in two
// layers (BatchNorm normalizes with stored statistics, Scale applies gamma and beta); npuc emits
// one BatchNormalization and lets a following Scale fill in its scale and bias.
#include <cmath>

#include "frontend/caffe/caffe_layers.h"

namespace npuc::caffe {

namespace {

Tensor filled(int64_t n, float v) {
  Tensor t(DType::Float32, {n});
  std::fill(t.data<float>(), t.data<float>() + n, v);
  return t;
}

// A per-`axis` parameter of `pshape` reshaped so it broadcasts against an input of `rank`:
// leading dims dropped (broadcast does that), trailing ones padded with 1.
Tensor broadcastable(Tensor t, const Shape& pshape, int64_t axis, int64_t rank) {
  Shape s = pshape;
  for (int64_t i = axis + static_cast<int64_t>(pshape.size()); i < rank; ++i) s.push_back(1);
  Tensor out(DType::Float32, s);
  std::copy(t.data<float>(), t.data<float>() + t.numel(), out.data<float>());
  return out;
}

}  // namespace

void convertBatchNorm(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  Value* x = b.bottom(l, 0);
  if (x->rank() < 2) b.fail(l, "input has shape " + shapeStr(x->shape()) + "; BatchNorm needs a channel axis");
  const int64_t c = x->shape()[1];
  Tensor mean = b.blob(l, 0, {c});
  Tensor var = b.blob(l, 1, {c});
  // Caffe stores running sums and their weight (blob 2); statistics = sums / weight, or 0 when
  // the weight is 0 (an untrained layer).
  const float sf = b.blob(l, 2, {1}).data<float>()[0];
  const float inv = sf == 0.f ? 0.f : 1.f / sf;
  for (int64_t i = 0; i < c; ++i) {
    mean.data<float>()[i] *= inv;
    var.data<float>()[i] *= inv;
  }
  Attributes a;
  a.set("epsilon", l.batch_norm_param().eps());
  Node* n = b.emit(l, "BatchNormalization",
                   {x, b.constant(l, filled(c, 1.f), "scale"), b.constant(l, filled(c, 0.f), "bias"),
                    b.constant(l, std::move(mean), "mean"), b.constant(l, std::move(var), "var")},
                   std::move(a));
  b.unit_batchnorms.insert(n);
  b.setTop(l, 0, n->output());
}

void convertScale(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 2, 1);
  const auto& p = l.scale_param();
  Value* x = b.bottom(l, 0);
  const int64_t rank = x->rank();
  const int64_t axis = caffeAxis(b, l, p.axis(), rank, "scale_param.axis");
  if (l.bottom_size() == 2) {
    // The scale comes from a second bottom (attention-style gating): Mul after a Reshape that
    // makes it broadcast from `axis` on.
    Value* s = b.bottom(l, 1);
    if (p.bias_term()) b.fail(l, "bias_term with a second bottom is not supported");
    Shape bs = s->shape();
    if (axis + static_cast<int64_t>(bs.size()) > rank) b.fail(l, "second bottom " + shapeStr(bs) + " does not fit the input");
    for (int64_t i = 0; i < static_cast<int64_t>(bs.size()); ++i) {
      if (bs[i] != x->shape()[axis + i]) b.fail(l, "second bottom " + shapeStr(bs) + " does not match the input " + shapeStr(x->shape()) + " from axis " + std::to_string(axis));
    }
    for (int64_t i = axis + static_cast<int64_t>(bs.size()); i < rank; ++i) bs.push_back(1);
    Value* sr = b.emit(l, "Reshape", {s, int64Const(b, l, bs, "shape")}, {}, "reshape")->output();
    b.setTop(l, 0, b.emit(l, "Mul", {x, sr})->output());
    return;
  }
  const int64_t num_axes = p.num_axes() < 0 ? rank - axis : p.num_axes();
  if (axis + num_axes > rank) b.fail(l, "scale_param axis + num_axes exceed the input rank " + std::to_string(rank));
  const Shape pshape(x->shape().begin() + axis, x->shape().begin() + axis + num_axes);
  Tensor gamma = b.blob(l, 0, pshape);
  Tensor beta = p.bias_term() ? b.blob(l, 1, pshape) : filled(b.checkedNumel(l, pshape), 0.f);

  // BatchNorm + Scale: fill the BatchNormalization's scale and bias when the Scale is per
  // channel and nothing else reads the BatchNorm's output.
  Node* bn = x->producer();
  const bool in_place = l.top(0) == l.bottom(0);
  if (bn && b.unit_batchnorms.count(bn) && axis == 1 && num_axes == 1 && !x->hasUses() &&
      (in_place || b.bottom_reads[l.bottom(0)] == 1)) {
    b.unit_batchnorms.erase(bn);
    Value* old_s = bn->input(1);
    Value* old_b = bn->input(2);
    bn->setInput(1, b.constant(l, std::move(gamma), "scale"));
    bn->setInput(2, b.constant(l, std::move(beta), "bias"));
    b.graph().eraseIfUnusedConstant(old_s);
    b.graph().eraseIfUnusedConstant(old_b);
    b.setTop(l, 0, x);
    return;
  }
  Value* y = b.emit(l, "Mul", {x, b.constant(l, broadcastable(std::move(gamma), pshape, axis, rank), "scale")}, {},
                    p.bias_term() ? "mul" : "")
                 ->output();
  if (p.bias_term()) {
    y = b.emit(l, "Add", {y, b.constant(l, broadcastable(std::move(beta), pshape, axis, rank), "bias")})->output();
  }
  b.setTop(l, 0, y);
}

void convertPReLU(NetBuilder& b, const Layer& l) {
  b.expectArity(l, 1, 1, 1);
  Value* x = b.bottom(l, 0);
  const bool shared = l.prelu_param().channel_shared();
  if (x->rank() < 2 && !shared) b.fail(l, "input has shape " + shapeStr(x->shape()) + "; PReLU needs a channel axis");
  const int64_t c = shared ? 1 : x->shape()[1];
  Tensor slope = b.blob(l, 0, {c});
  if (!shared) slope = broadcastable(std::move(slope), {c}, 1, x->rank());
  b.setTop(l, 0, b.emit(l, "PRelu", {x, b.constant(l, std::move(slope), "slope")})->output());
}

}  // namespace npuc::caffe
