#include "opset/macs.h"

#include <algorithm>

#include "opset/registry.h"

namespace npuc {

namespace {

bool staticShape(const Value* v) {
  return v && v->shapeIsStatic();
}

int64_t product(const Shape& s, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

// Conv and ConvAct: every output element accumulates (Cin / group) x kernel window products,
// and W is [Cout, Cin/group, k...].
int64_t convMacs(const Node& n) {
  const Value* w = n.input(1);
  if (!staticShape(n.output(0)) || !staticShape(w) || w->rank() < 2) return 0;
  return shapeNumel(n.output(0)->shape()) * product(w->shape(), 1);
}

// ConvTranspose scatters every input element into (Cout / group) x kernel window outputs,
// W being [Cin, Cout/group, k...].
int64_t convTransposeMacs(const Node& n) {
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  if (!staticShape(x) || !staticShape(w) || w->rank() < 2) return 0;
  return shapeNumel(x->shape()) * product(w->shape(), 1);
}

// Gemm: Y[M,N] = A'[M,K] B'[K,N].
int64_t gemmMacs(const Node& n) {
  const Value* a = n.input(0);
  if (!staticShape(a) || a->rank() != 2 || !staticShape(n.output(0))) return 0;
  const int64_t k = n.attrs().i("transA", 0) ? a->shape()[0] : a->shape()[1];
  return shapeNumel(n.output(0)->shape()) * k;
}

// MatMul (numpy semantics): every output element is a dot product over A's last dim.
int64_t matMulMacs(const Node& n) {
  const Value* a = n.input(0);
  if (!staticShape(a) || a->rank() < 1 || !staticShape(n.output(0))) return 0;
  return shapeNumel(n.output(0)->shape()) * a->shape().back();
}

// LSTM / GRU / RNN: every step of every direction multiplies X_t [B, I] by W^T and h [B, H] by
// R^T for each of the G gates (4, 3, 1). W is [D, G*H, I] and R is [D, G*H, H]; X's time and batch
// dims are W-independent, so T * B = numel(X) / I.
int64_t recurrentMacs(const Node& n) {
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  const Value* r = n.input(2);
  if (!staticShape(x) || !staticShape(w) || !staticShape(r)) return 0;
  if (x->rank() != 3 || w->rank() != 3 || r->rank() != 3) return 0;
  const int64_t steps_rows = shapeNumel(x->shape()) / std::max<int64_t>(1, x->shape()[2]);
  return steps_rows * (shapeNumel(w->shape()) + shapeNumel(r->shape()));
}

}  // namespace

int64_t nodeMacs(const Node& node) {
  const std::string& op = node.opType();
  if (node.domain().empty()) {
    if (op == "Conv") return convMacs(node);
    if (op == "ConvTranspose") return convTransposeMacs(node);
    if (op == "Gemm") return gemmMacs(node);
    if (op == "MatMul") return matMulMacs(node);
    if (op == "LSTM" || op == "GRU" || op == "RNN") return recurrentMacs(node);
    return 0;
  }
  if (node.domain() == kNpucDomain && op == "ConvAct") return convMacs(node);
  return 0;
}

}  // namespace npuc
