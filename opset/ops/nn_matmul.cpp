// Gemm and MatMul on oneDNN's matmul primitive (brg:avx512_core on the build machine). Constant
// right-hand operands are packed once into the layout oneDNN prefers.
#include <algorithm>

#include "opset/ops/dnnl_layout.h"
#include "opset/ops/nn_ops.h"

namespace npuc::nn {

namespace {

using dnnl::memory;
using namespace dnnl_util;

// A row-major matrix seen as [rows, cols], optionally through a transpose (strides swapped).
memory::desc matrixDesc(int64_t rows, int64_t cols, bool transposed) {
  const memory::dims strides = transposed ? memory::dims{1, rows} : memory::dims{cols, 1};
  return memory::desc({rows, cols}, memory::data_type::f32, strides);
}

// ---------------------------------------------------------------- Gemm

struct GemmSpec {
  int64_t m = 0, k = 0, n = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
  // C seen as [c_rows, c_cols] with c_rows in {1, M} and c_cols in {1, N}; 0 when absent.
  int64_t c_rows = 0, c_cols = 0;
};

GemmSpec resolveGemm(const Attributes& attrs, const Shape& a, const Shape& b, const Shape* c) {
  if (a.size() != 2 || b.size() != 2) {
    throw ShapeError("Gemm inputs A " + shapeStr(a) + " and B " + shapeStr(b) + " must be matrices");
  }
  GemmSpec s;
  s.trans_a = attrs.i("transA", 0) != 0;
  s.trans_b = attrs.i("transB", 0) != 0;
  s.alpha = attrs.f("alpha", 1.f);
  s.beta = attrs.f("beta", 1.f);
  s.m = s.trans_a ? a[1] : a[0];
  s.k = s.trans_a ? a[0] : a[1];
  const int64_t kb = s.trans_b ? b[1] : b[0];
  s.n = s.trans_b ? b[0] : b[1];
  if (s.k != kb) {
    throw ShapeError("Gemm inner dims differ: A " + shapeStr(a) + (s.trans_a ? " (transposed)" : "") +
                     " has K=" + std::to_string(s.k) + ", B " + shapeStr(b) +
                     (s.trans_b ? " (transposed)" : "") + " has K=" + std::to_string(kb));
  }
  if (c) {
    if (c->size() > 2) throw ShapeError("Gemm C " + shapeStr(*c) + " must have rank <= 2");
    const int64_t rows = c->size() == 2 ? (*c)[0] : 1;
    const int64_t cols = c->empty() ? 1 : c->back();
    if ((rows != 1 && rows != s.m) || (cols != 1 && cols != s.n)) {
      throw ShapeError("Gemm C " + shapeStr(*c) + " does not broadcast to [" + std::to_string(s.m) + "," +
                       std::to_string(s.n) + "]");
    }
    s.c_rows = rows;
    s.c_cols = cols;
  }
  return s;
}

void inferGemm(InferContext& ctx) {
  const Shape* c = ctx.hasInput(2) ? &ctx.inputShape(2) : nullptr;
  const GemmSpec s = resolveGemm(ctx.attrs(), ctx.inputShape(0), ctx.inputShape(1), c);
  ctx.setOutput(0, ctx.inputDType(0), {s.m, s.n});
}

// y[m, n] += beta * C[m or 0, n or 0], with the two broadcast forms of a row split out so the
// inner loop vectorizes.
void addScaledBroadcast(const GemmSpec& s, const float* c, float* y) {
  for (int64_t i = 0; i < s.m; ++i) {
    const float* c_row = c + (s.c_rows == 1 ? 0 : i * s.c_cols);
    float* y_row = y + i * s.n;
    if (s.c_cols == 1) {
      const float v = s.beta * c_row[0];
      for (int64_t j = 0; j < s.n; ++j) y_row[j] += v;
    } else {
      for (int64_t j = 0; j < s.n; ++j) y_row[j] += s.beta * c_row[j];
    }
  }
}

class GemmKernel : public Kernel {
 public:
  GemmKernel(const GemmSpec& s, const KernelContext& ctx) : spec_(s) {
    a_desc_ = matrixDesc(s.m, s.k, s.trans_a);
    const memory::desc user_b = matrixDesc(s.k, s.n, s.trans_b);
    const memory::desc any_b({s.k, s.n}, memory::data_type::f32, memory::format_tag::any);
    y_desc_ = plainDesc({s.m, s.n});
    dnnl::post_ops ops;
    if (s.alpha != 1.f) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, s.alpha, 0.f);
    const Tensor* b_const = ctx.constInput(1);
    const dnnl::matmul::desc desc(a_desc_, b_const ? any_b : user_b, y_desc_);
    const dnnl::matmul::primitive_desc pd(desc, userScratchpadAttr(ops), cpuEngine());
    scratch_ = Scratchpad(pd.scratchpad_desc(), ws_);
    b_ = PackedWeights(user_b, pd.weights_desc(), b_const ? b_const->raw() : nullptr, ws_);
    prim_ = dnnl::matmul(pd);
  }

  size_t workspaceBytes() const override { return ws_.totalBytes(); }

  void run(const KernelIO& io) const override {
    float* y = io.outputs[0].as<float>();
    execute(prim_, {{DNNL_ARG_SRC, wrap(a_desc_, io.inputs[0].data)},
                    {DNNL_ARG_WEIGHTS, b_.get(io.inputs[1].data, io.workspace)},
                    {DNNL_ARG_DST, wrap(y_desc_, y)},
                    {DNNL_ARG_SCRATCHPAD, scratch_.get(io.workspace)}});
    if (spec_.c_rows > 0 && spec_.beta != 0.f) addScaledBroadcast(spec_, io.inputs[2].as<float>(), y);
  }

 private:
  GemmSpec spec_;
  memory::desc a_desc_, y_desc_;
  WorkspaceLayout ws_;
  Scratchpad scratch_;
  PackedWeights b_;
  dnnl::matmul prim_;
};

std::unique_ptr<Kernel> makeGemm(const KernelContext& ctx) {
  const auto& in = ctx.input_types;
  const Shape* c = in.size() > 2 && in[2].present() ? &in[2].shape : nullptr;
  return std::make_unique<GemmKernel>(resolveGemm(ctx.node.attrs(), in[0].shape, in[1].shape, c), ctx);
}

// ---------------------------------------------------------------- MatMul

// numpy matmul: operands promoted to rank >= 2 (a 1-D A is [1, K], a 1-D B is [K, 1]), batch
// dims broadcast, and the promoted unit dims removed from the result.
struct MatMulSpec {
  Shape a, b, y;  // promoted operands, both padded to the same rank, and the promoted result
  Shape out;      // the ONNX output shape
  int64_t m = 0, k = 0, n = 0;
  bool b_unbatched = false;  // every batch dim of B is 1: A's batch folds into M
};

MatMulSpec resolveMatMul(const Shape& a_in, const Shape& b_in) {
  if (a_in.empty() || b_in.empty()) {
    throw ShapeError("MatMul operands must have rank >= 1, got " + shapeStr(a_in) + " and " + shapeStr(b_in));
  }
  MatMulSpec s;
  s.a = a_in.size() == 1 ? Shape{1, a_in[0]} : a_in;
  s.b = b_in.size() == 1 ? Shape{b_in[0], 1} : b_in;
  const size_t rank = std::max(s.a.size(), s.b.size());
  s.a.insert(s.a.begin(), rank - s.a.size(), 1);
  s.b.insert(s.b.begin(), rank - s.b.size(), 1);
  s.m = s.a[rank - 2];
  s.k = s.a[rank - 1];
  s.n = s.b[rank - 1];
  if (s.b[rank - 2] != s.k) {
    throw ShapeError("MatMul inner dims differ: A " + shapeStr(a_in) + " has K=" + std::to_string(s.k) +
                     ", B " + shapeStr(b_in) + " has K=" + std::to_string(s.b[rank - 2]));
  }
  const Shape batch_a(s.a.begin(), s.a.end() - 2), batch_b(s.b.begin(), s.b.end() - 2);
  Shape batch;
  try {
    batch = broadcastShapes(batch_a, batch_b);
  } catch (const ShapeError&) {
    throw ShapeError("MatMul batch dims of A " + shapeStr(a_in) + " and B " + shapeStr(b_in) +
                     " do not broadcast");
  }
  s.b_unbatched = std::all_of(batch_b.begin(), batch_b.end(), [](int64_t d) { return d == 1; });
  s.y = batch;
  s.y.insert(s.y.end(), {s.m, s.n});
  s.out = batch;
  if (a_in.size() > 1) s.out.push_back(s.m);
  if (b_in.size() > 1) s.out.push_back(s.n);
  return s;
}

void inferMatMul(InferContext& ctx) {
  ctx.setOutput(0, ctx.inputDType(0), resolveMatMul(ctx.inputShape(0), ctx.inputShape(1)).out);
}

class MatMulKernel : public Kernel {
 public:
  MatMulKernel(const MatMulSpec& s, const KernelContext& ctx) {
    memory::desc user_b, any_b;
    if (s.b_unbatched) {
      // [batch*M, K] x [K, N]: one large GEMM instead of a batch of small ones.
      const int64_t rows = shapeNumel(Shape(s.a.begin(), s.a.end() - 1));
      a_desc_ = plainDesc({rows, s.k});
      user_b = plainDesc({s.k, s.n});
      any_b = memory::desc({s.k, s.n}, memory::data_type::f32, memory::format_tag::any);
      y_desc_ = plainDesc({rows, s.n});
    } else {
      // oneDNN matmul broadcasts batch dims of size 1 on either side.
      a_desc_ = plainDesc(s.a);
      user_b = plainDesc(s.b);
      any_b = memory::desc(toDims(s.b), memory::data_type::f32, memory::format_tag::any);
      y_desc_ = plainDesc(s.y);
    }
    const Tensor* b_const = ctx.constInput(1);
    const dnnl::matmul::desc desc(a_desc_, b_const ? any_b : user_b, y_desc_);
    const dnnl::matmul::primitive_desc pd(desc, userScratchpadAttr(), cpuEngine());
    scratch_ = Scratchpad(pd.scratchpad_desc(), ws_);
    b_ = PackedWeights(user_b, pd.weights_desc(), b_const ? b_const->raw() : nullptr, ws_);
    prim_ = dnnl::matmul(pd);
  }

  size_t workspaceBytes() const override { return ws_.totalBytes(); }

  void run(const KernelIO& io) const override {
    execute(prim_, {{DNNL_ARG_SRC, wrap(a_desc_, io.inputs[0].data)},
                    {DNNL_ARG_WEIGHTS, b_.get(io.inputs[1].data, io.workspace)},
                    {DNNL_ARG_DST, wrap(y_desc_, io.outputs[0].data)},
                    {DNNL_ARG_SCRATCHPAD, scratch_.get(io.workspace)}});
  }

 private:
  memory::desc a_desc_, y_desc_;
  WorkspaceLayout ws_;
  Scratchpad scratch_;
  PackedWeights b_;
  dnnl::matmul prim_;
};

std::unique_ptr<Kernel> makeMatMul(const KernelContext& ctx) {
  const Shape& a = ctx.input_types[0].shape;
  const Shape& b = ctx.input_types[1].shape;
  try {
    return std::make_unique<MatMulKernel>(resolveMatMul(a, b), ctx);
  } catch (const dnnl::error& e) {
    throw UnsupportedOpError("MatMul node '" + ctx.node.name() + "': oneDNN refused A " + shapeStr(a) +
                             " x B " + shapeStr(b) + ": " + e.what());
  }
}

}  // namespace

void registerMatmulOps(OpRegistry& reg) {
  reg.add("Gemm")
      .traits(OpTrait::MacGeometry | OpTrait::WeightLinear | OpTrait::LearnedParameters)
      .quantClass(QuantClass::Mac)
      .inputs(2, 3)
      .infer(inferGemm)
      .kernel(makeGemm)
      .types({DType::Float32})
      .doc("alpha * op(A) * op(B) + beta * C, C broadcast to [M, N]");
  reg.add("MatMul")
      .traits(OpTrait::MacGeometry | OpTrait::WeightLinear | OpTrait::LearnedParameters)
      .quantClass(QuantClass::Mac)
      .inputs(2)
      .infer(inferMatMul)
      .kernel(makeMatMul)
      .types({DType::Float32})
      .doc("numpy matmul with batch broadcasting and 1-D operands");
}

}  // namespace npuc::nn
