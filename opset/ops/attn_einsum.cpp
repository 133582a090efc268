// Einsum(equation, inputs...): the general form, any number of inputs, with implicit output
// (no "->": the labels that occur once, alphabetically, after the ellipsis dims), diagonals
// (repeated labels in a term), sums over labels not in the output and "..." broadcasting.
// The host kernel walks the output elements and, for each, sums the product of the inputs over
// the contracted labels with a double (float inputs) or int64 accumulator: exact enough to serve
// as the reference for the lower_einsum pass, which moves the common forms to the NPU.
#include "opset/ops/attn_einsum.h"

#include <algorithm>
#include <cctype>

#include "opset/ops/attn_ops.h"
#include "opset/ops/ew_dispatch.h"

namespace npuc {
namespace attn {

std::string labelName(int label) {
  if (label < 26) return std::string(1, static_cast<char>('a' + label));
  if (label < kEllipsisLabel0) return std::string(1, static_cast<char>('A' + label - 26));
  return "...[" + std::to_string(label - kEllipsisLabel0) + "]";
}

bool hasRepeatedLabel(const std::vector<int>& term) {
  std::vector<int> s = term;
  std::sort(s.begin(), s.end());
  return std::adjacent_find(s.begin(), s.end()) != s.end();
}

namespace {

std::string strip(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

// Letters of one term, with -1 marking where "..." stands. Throws on anything else.
std::vector<int> termLetters(const std::string& term, const std::string& where) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c >= 'a' && c <= 'z') {
      out.push_back(c - 'a');
    } else if (c >= 'A' && c <= 'Z') {
      out.push_back(26 + c - 'A');
    } else if (c == '.' && term.compare(i, 3, "...") == 0 && !ellipsis) {
      ellipsis = true;
      out.push_back(-1);
      i += 2;
    } else {
      throw ShapeError(where + ": Einsum term '" + term + "' has an invalid character or a second '...'");
    }
  }
  return out;
}

}  // namespace

EinsumSpec parseEinsum(const std::string& equation, const std::vector<Shape>& shapes,
                       const std::string& where) {
  const std::string eq = strip(equation);
  const size_t arrow = eq.find("->");
  const std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    throw ShapeError(where + ": Einsum equation '" + equation + "' has " + std::to_string(terms.size()) +
                     " input terms but the node has " + std::to_string(shapes.size()) + " inputs");
  }
  EinsumSpec spec;
  spec.explicit_output = arrow != std::string::npos;
  spec.size.assign(kEllipsisLabel0 + 16, -1);
  int ell_rank = 0;
  std::vector<std::vector<int>> letters;
  for (size_t t = 0; t < terms.size(); ++t) {
    letters.push_back(termLetters(terms[t], where));
    const int rank = static_cast<int>(shapes[t].size());
    const bool has_ell = std::count(letters[t].begin(), letters[t].end(), -1) > 0;
    const int named = static_cast<int>(letters[t].size()) - (has_ell ? 1 : 0);
    if ((!has_ell && named != rank) || (has_ell && named > rank)) {
      throw ShapeError(where + ": Einsum term '" + terms[t] + "' does not fit input " + std::to_string(t) +
                       " of shape " + shapeStr(shapes[t]));
    }
    if (has_ell) ell_rank = std::max(ell_rank, rank - named);
  }
  if (ell_rank > 16) throw ShapeError(where + ": Einsum '...' stands for more than 16 dims");
  auto bind = [&](int label, int64_t dim, size_t t) {
    int64_t& s = spec.size[static_cast<size_t>(label)];
    if (s == -1 || s == 1) {
      s = std::max<int64_t>(dim, s);
    } else if (dim != s && dim != 1) {
      throw ShapeError(where + ": Einsum label '" + labelName(label) + "' is " + std::to_string(s) +
                       " in one input but " + std::to_string(dim) + " in input " + std::to_string(t) +
                       " of shape " + shapeStr(shapes[t]));
    }
  };
  for (size_t t = 0; t < terms.size(); ++t) {
    const int rank = static_cast<int>(shapes[t].size());
    std::vector<int> labels;
    for (int l : letters[t]) {
      if (l >= 0) {
        labels.push_back(l);
        continue;
      }
      const int n = rank - (static_cast<int>(letters[t].size()) - 1);
      for (int j = 0; j < n; ++j) labels.push_back(kEllipsisLabel0 + ell_rank - n + j);
    }
    for (size_t d = 0; d < labels.size(); ++d) bind(labels[d], shapes[t][d], t);
    spec.inputs.push_back(std::move(labels));
  }
  if (spec.explicit_output) {
    const std::vector<int> out = termLetters(eq.substr(arrow + 2), where);
    for (int l : out) {
      if (l == -1) {
        for (int j = 0; j < ell_rank; ++j) spec.output.push_back(kEllipsisLabel0 + j);
        continue;
      }
      if (spec.size[static_cast<size_t>(l)] == -1) {
        throw ShapeError(where + ": Einsum output label '" + labelName(l) + "' of '" + equation +
                         "' is in no input term");
      }
      spec.output.push_back(l);
    }
    if (hasRepeatedLabel(spec.output))
      throw ShapeError(where + ": Einsum output of '" + equation + "' repeats a label");
  } else {
    // Implicit output: ellipsis dims first, then the letters used exactly once, alphabetically
    // (ONNX and numpy order lowercase after uppercase by character code: 'A' < 'a').
    for (int j = 0; j < ell_rank; ++j) spec.output.push_back(kEllipsisLabel0 + j);
    std::vector<int> count(kEllipsisLabel0, 0);
    for (const auto& term : spec.inputs)
      for (int l : term)
        if (l < kEllipsisLabel0) ++count[static_cast<size_t>(l)];
    for (int l = 26; l < kEllipsisLabel0; ++l)
      if (count[static_cast<size_t>(l)] == 1) spec.output.push_back(l);
    for (int l = 0; l < 26; ++l)
      if (count[static_cast<size_t>(l)] == 1) spec.output.push_back(l);
  }
  return spec;
}

Shape einsumOutputShape(const EinsumSpec& spec) {
  Shape out;
  for (int l : spec.output) out.push_back(spec.size[static_cast<size_t>(l)]);
  return out;
}

namespace {

std::vector<Shape> inputShapes(const InferContext& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.numInputs(); ++i) shapes.push_back(ctx.inputShape(i));
  return shapes;
}

std::string nodeWhere(const Node& n) {
  return "Einsum node '" + n.name() + "'";
}

void inferEinsum(InferContext& ctx) {
  // Shape inference's caller prefixes the node and op, so the message starts at the equation.
  const std::string& eq = ctx.attrs().s("equation");
  const EinsumSpec spec = parseEinsum(eq, inputShapes(ctx), "equation '" + eq + "'");
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    if (ctx.inputDType(i) != ctx.inputDType(0))
      throw ShapeError("Einsum inputs have different element types");
  }
  ctx.setOutput(0, ctx.inputDType(0), einsumOutputShape(spec));
}

class EinsumKernel : public Kernel {
 public:
  explicit EinsumKernel(const KernelContext& ctx) : dtype_(ctx.input_types.at(0).dtype) {
    std::vector<Shape> shapes;
    for (const TensorView& v : ctx.input_types) shapes.push_back(v.shape);
    const EinsumSpec spec = parseEinsum(ctx.node.attrs().s("equation"), shapes, nodeWhere(ctx.node));
    // Contracted labels: in some input, not in the output.
    std::vector<int> summed;
    for (const auto& term : spec.inputs)
      for (int l : term)
        if (std::find(spec.output.begin(), spec.output.end(), l) == spec.output.end() &&
            std::find(summed.begin(), summed.end(), l) == summed.end())
          summed.push_back(l);
    for (int l : spec.output) out_dims_.push_back(spec.size[static_cast<size_t>(l)]);
    for (int l : summed) sum_dims_.push_back(spec.size[static_cast<size_t>(l)]);
    // Per input, the element stride each label moves by (repeated labels add up: a diagonal;
    // a size-1 dim broadcast against a larger label has stride 0).
    for (size_t t = 0; t < spec.inputs.size(); ++t) {
      const std::vector<int64_t> st = shapeStrides(shapes[t]);
      auto strideOf = [&](int label) {
        int64_t s = 0;
        for (size_t d = 0; d < spec.inputs[t].size(); ++d)
          if (spec.inputs[t][d] == label && shapes[t][d] != 1) s += st[d];
        return s;
      };
      std::vector<int64_t> os, ss;
      for (int l : spec.output) os.push_back(strideOf(l));
      for (int l : summed) ss.push_back(strideOf(l));
      out_strides_.push_back(os);
      sum_strides_.push_back(ss);
    }
    dispatchEinsum([](auto) {});
  }

  size_t workspaceBytes() const override {
    const size_t n_in = out_strides_.size();
    return n_in * sizeof(void*) + (out_dims_.size() + sum_dims_.size() + 2 * n_in) * sizeof(int64_t);
  }

  void run(const KernelIO& io) const override {
    dispatchEinsum([&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
      runTyped<T, Acc>(io);
    });
  }

 private:
  template <typename Fn>
  void dispatchEinsum(Fn&& fn) const {
    switch (dtype_) {
      case DType::Float32: return fn(ew::Tag<float>{});
      case DType::Float64: return fn(ew::Tag<double>{});
      case DType::Int32: return fn(ew::Tag<int32_t>{});
      case DType::Int64: return fn(ew::Tag<int64_t>{});
      default: ew::throwUnsupportedDType("Einsum", dtype_);
    }
  }

  // Odometer step over `dims`: advances `idx` and every input's offset by the strides.
  static bool step(int64_t* idx, const std::vector<int64_t>& dims,
                   const std::vector<std::vector<int64_t>>& strides, int64_t* offs, size_t n_in) {
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) {
        for (size_t t = 0; t < n_in; ++t) offs[t] += strides[t][d];
        return true;
      }
      for (size_t t = 0; t < n_in; ++t) offs[t] -= strides[t][d] * (dims[d] - 1);
      idx[d] = 0;
    }
    return false;
  }

  template <typename T, typename Acc>
  void runTyped(const KernelIO& io) const {
    const size_t n_in = io.inputs.size();
    T* out = io.outputs[0].as<T>();
    const int64_t n_out = shapeNumel(out_dims_), n_sum = shapeNumel(sum_dims_);
    if (n_out == 0) return;
    // Workspace: input pointers, then the output and summed odometers, then per-input offsets.
    const T** in = static_cast<const T**>(io.workspace);
    for (size_t t = 0; t < n_in; ++t) in[t] = io.inputs[t].as<const T>();
    int64_t* oidx = reinterpret_cast<int64_t*>(in + n_in);
    int64_t* sidx = oidx + out_dims_.size();
    int64_t* base = sidx + sum_dims_.size();
    int64_t* offs = base + n_in;
    for (size_t d = 0; d < out_dims_.size(); ++d) oidx[d] = 0;
    for (size_t d = 0; d < sum_dims_.size(); ++d) sidx[d] = 0;
    for (size_t t = 0; t < n_in; ++t) base[t] = 0;
    for (int64_t o = 0; o < n_out; ++o) {
      Acc acc = 0;
      for (size_t t = 0; t < n_in; ++t) offs[t] = base[t];
      for (int64_t s = 0; s < n_sum; ++s) {
        Acc p = 1;
        for (size_t t = 0; t < n_in; ++t) p *= static_cast<Acc>(in[t][offs[t]]);
        acc += p;
        step(sidx, sum_dims_, sum_strides_, offs, n_in);
      }
      out[o] = static_cast<T>(acc);
      step(oidx, out_dims_, out_strides_, base, n_in);
    }
  }

  DType dtype_;
  std::vector<int64_t> out_dims_, sum_dims_;
  std::vector<std::vector<int64_t>> out_strides_, sum_strides_;
};

}  // namespace

void registerEinsumOp(OpRegistry& reg) {
  reg.add("Einsum")
      .quantClass(QuantClass::Float)
      .inputs(1, -1)
      .infer(inferEinsum)
      .kernel([](const KernelContext& c) { return std::make_unique<EinsumKernel>(c); })
      .types({DType::Float32, DType::Float64, DType::Int32, DType::Int64})
      .since(12)
      .cpuOnly(
          "a general Einsum is a loop nest no NPU instruction covers; the lower_einsum pass turns "
          "batched-matmul, transpose and reduction equations into MatMul/Transpose/ReduceSum first")
      .doc(
          "Einsum(equation) over any number of inputs: implicit output, diagonals, sums and '...' "
          "broadcasting; host kernel accumulates in double (int64 for integers)");
}

}  // namespace attn
}  // namespace npuc
