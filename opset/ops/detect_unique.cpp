// Unique(X) -> (Y, indices, inverse_indices, counts): the distinct elements of X (flattened), or
// its distinct slices along `axis`; sorted=1 (default) in ascending (lexicographic for slices)
// order, sorted=0 in order of first occurrence. indices: first occurrence of each, inverse_indices:
// for every element/slice of X its position in Y, counts: occurrences. All three are int64.
//
// Every output size depends on X's values, so X must be a constant: shape inference refuses a
// computed X ("must be a constant") and the node folds. A runtime form would need four bounded
// outputs whose padding is indistinguishable from values (Y), so npuc does not offer one.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "opset/ops/detect_ops.h"
#include "opset/ops/ew_dispatch.h"

namespace npuc {
namespace detect {
namespace {

struct UniqueResult {
  Tensor y, indices, inverse, counts;
};

UniqueResult computeUnique(const Node& node, const Tensor& x) {
  const bool has_axis = node.attrs().has("axis");
  const bool sorted = node.attrs().i("sorted", 1) != 0;
  const Shape& in = x.shape();
  int64_t axis = 0, outer = 1, len = x.numel(), inner = 1;
  if (has_axis) {
    axis = normalizeAxis(node.attrs().i("axis"), x.rank(), "Unique axis");
    len = in[static_cast<size_t>(axis)];
    for (int64_t d = 0; d < axis; ++d) outer *= in[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < in.size(); ++d) inner *= in[d];
  }
  const int64_t width = outer * inner;  // elements per slice
  const size_t es = dtypeSize(x.dtype());
  const auto* base = static_cast<const uint8_t*>(x.raw());
  // Element e of slice s (the axis moved to the front, the rest in row-major order).
  auto offset = [&](int64_t s, int64_t e) { return ((e / inner) * len + s) * inner + e % inner; };
  // Three-way comparison of slices a and b by value.
  auto cmp = [&](int64_t a, int64_t b) -> int {
    return ew::dispatchAllNumeric(x.dtype(), "Unique", [&](auto tag) -> int {
      using T = typename decltype(tag)::type;
      const T* d = reinterpret_cast<const T*>(base);
      for (int64_t e = 0; e < width; ++e) {
        const T va = d[offset(a, e)], vb = d[offset(b, e)];
        if (va < vb) return -1;
        if (vb < va) return 1;
      }
      return 0;
    });
  };
  // Slices in sorted order (stable: equal slices keep their first-occurrence order).
  std::vector<int64_t> order(static_cast<size_t>(len));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  std::vector<int64_t> firsts, counts, group_of(static_cast<size_t>(len));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || cmp(order[k - 1], order[k]) != 0) {
      firsts.push_back(order[k]);  // the smallest index of its group, thanks to the stable sort
      counts.push_back(0);
    }
    ++counts.back();
    group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(firsts.size()) - 1;
  }
  const auto u = static_cast<int64_t>(firsts.size());
  std::vector<int64_t> rank(static_cast<size_t>(u));  // group -> its position in Y
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(rank);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return firsts[a] < firsts[b]; });
    for (int64_t p = 0; p < u; ++p) rank[static_cast<size_t>(by_first[p])] = p;
  }
  Shape yshape = has_axis ? in : Shape{u};
  if (has_axis) yshape[static_cast<size_t>(axis)] = u;
  UniqueResult r{Tensor(x.dtype(), yshape), Tensor(DType::Int64, {u}), Tensor(DType::Int64, {len}),
                 Tensor(DType::Int64, {u})};
  auto* y = static_cast<uint8_t*>(r.y.raw());
  for (int64_t g = 0; g < u; ++g) {
    const int64_t p = rank[static_cast<size_t>(g)];
    r.indices.data<int64_t>()[p] = firsts[static_cast<size_t>(g)];
    r.counts.data<int64_t>()[p] = counts[static_cast<size_t>(g)];
    for (int64_t e = 0; e < width; ++e) {
      const int64_t dst = ((e / inner) * u + p) * inner + e % inner;
      std::memcpy(y + dst * es, base + offset(firsts[static_cast<size_t>(g)], e) * es, es);
    }
  }
  for (int64_t s = 0; s < len; ++s)
    r.inverse.data<int64_t>()[s] = rank[static_cast<size_t>(group_of[static_cast<size_t>(s)])];
  return r;
}

void inferUnique(InferContext& ctx) {
  const UniqueResult r = computeUnique(ctx.node(), ctx.requireConstInput(0, "Unique X"));
  ctx.setOutput(0, r.y.dtype(), r.y.shape());
  if (ctx.numOutputs() > 1) ctx.setOutput(1, DType::Int64, r.indices.shape());
  if (ctx.numOutputs() > 2) ctx.setOutput(2, DType::Int64, r.inverse.shape());
  if (ctx.numOutputs() > 3) ctx.setOutput(3, DType::Int64, r.counts.shape());
}

// X is a constant, so the kernel computes the result once and copies it per run.
class UniqueKernel : public Kernel {
 public:
  explicit UniqueKernel(const KernelContext& ctx) {
    const Tensor* x = ctx.constInput(0);
    if (!x) throw ShapeError("Unique X (input 0) must be a constant");
    UniqueResult r = computeUnique(ctx.node, *x);
    results_ = {std::move(r.y), std::move(r.indices), std::move(r.inverse), std::move(r.counts)};
  }
  void run(const KernelIO& io) const override {
    for (size_t i = 0; i < io.outputs.size() && i < results_.size(); ++i) {
      if (io.outputs[i].present() && io.outputs[i].data)
        std::memcpy(io.outputs[i].data, results_[i].raw(), results_[i].nbytes());
    }
  }

 private:
  std::vector<Tensor> results_;
};

}  // namespace

void registerUniqueOp(OpRegistry& reg) {
  reg.add("Unique")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .outputs(1, 4)
      .infer(inferUnique)
      .kernel([](const KernelContext& c) { return std::make_unique<UniqueKernel>(c); })
      .types({DType::Float32, DType::Float64, DType::Int8, DType::UInt8, DType::Int16, DType::UInt16,
              DType::Int32, DType::UInt32, DType::Int64, DType::UInt64})
      .since(11)
      .cpuOnly("its output sizes depend on the data")
      .doc(
          "(Y, indices, inverse_indices, counts) of the distinct elements or axis slices; sorted or "
          "first-occurrence "
          "order; X must be a constant");
}

}  // namespace detect
}  // namespace npuc
