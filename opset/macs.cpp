#include "opset/macs.h"

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

}  // namespace

int64_t nodeMacs(const Node& node) {
  const std::string& op = node.opType();
  if (node.domain().empty()) {
    if (op == "Conv") return convMacs(node);
    if (op == "ConvTranspose") return convTransposeMacs(node);
    if (op == "Gemm") return gemmMacs(node);
    if (op == "MatMul") return matMulMacs(node);
    return 0;
  }
  if (node.domain() == kNpucDomain && op == "ConvAct") return convMacs(node);
  return 0;
}

}  // namespace npuc
