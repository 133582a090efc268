#include "passes/core/ir_helpers.h"

#include <algorithm>

namespace npuc {

std::optional<std::vector<int64_t>> constantInts(const Value* v) {
  if (!v || !v->isConstant() || !isInteger(v->constant().dtype())) return std::nullopt;
  return v->constant().toInt64Vector();
}

std::optional<double> scalarValue(const Value* v) {
  if (!v || !v->isConstant() || v->constant().numel() != 1) return std::nullopt;
  return v->constant().doubleAt(0);
}

bool sameStaticShape(const Value& a, const Value& b) {
  return a.shapeIsStatic() && b.shapeIsStatic() && a.shape() == b.shape();
}

bool sameType(const Value& a, const Value& b) {
  return a.dtype() == b.dtype() && sameStaticShape(a, b);
}

Tensor int64Vector(const std::vector<int64_t>& values) {
  return Tensor::fromVector(values, {static_cast<int64_t>(values.size())});
}

std::optional<std::vector<int64_t>> normalizedAxes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    const int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank) return std::nullopt;
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int64_t> transposePerm(const Node& node, int64_t rank) {
  if (const AttrValue* a = node.attrs().find("perm")) {
    if (const auto* perm = std::get_if<std::vector<int64_t>>(a)) return *perm;
  }
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
  return perm;
}

bool isIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

}  // namespace npuc
