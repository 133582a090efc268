// ConvInteger and MatMulInteger: uint8/int8 operands minus their zero points, multiplied and summed
// exactly into an int32 output (no scale: the model rescales the int32 result itself, typically
// after DynamicQuantizeLinear). Zero points: ConvInteger's x one value, w one or one per output
// channel; MatMulInteger's A one or one per row (M), B one or one per column (N).
#include "opset/ops/quantized_mac.h"

namespace npuc::qops {
namespace {

void checkOperandType(const std::string& op, const char* what, DType t) {
  if (t != DType::UInt8 && t != DType::Int8) {
    throw ShapeError(op + " " + what + " must be uint8 or int8, got " + dtypeName(t));
  }
}

// Optional zero point i must have the type of its operand.
void checkZeroPointType(const InferContext& ctx, size_t zp, size_t operand, const char* what) {
  if (ctx.hasInput(zp) && ctx.inputDType(zp) != ctx.inputDType(operand)) {
    throw ShapeError(ctx.node().opType() + " " + what + " is " + dtypeName(ctx.inputDType(zp)) +
                     " but its operand is " + dtypeName(ctx.inputDType(operand)));
  }
}

// ---------------------------------------------------------------- ConvInteger

nn::ConvSpec convIntegerSpec(const Attributes& attrs, const Shape& x, const Shape& w, const Shape* x_zp,
                             const Shape* w_zp) {
  nn::ConvSpec s = nn::resolveConv(attrs, x, w, nullptr, nullptr, "ConvInteger");
  if (x_zp) checkChannelParam("ConvInteger", "x_zero_point", *x_zp, 1);
  if (w_zp) checkChannelParam("ConvInteger", "w_zero_point", *w_zp, w[0]);
  return s;
}

void inferConvInteger(InferContext& ctx) {
  checkOperandType("ConvInteger", "x", ctx.inputDType(0));
  checkOperandType("ConvInteger", "w", ctx.inputDType(1));
  checkZeroPointType(ctx, 2, 0, "x_zero_point");
  checkZeroPointType(ctx, 3, 1, "w_zero_point");
  const Shape* xz = ctx.hasInput(2) ? &ctx.inputShape(2) : nullptr;
  const Shape* wz = ctx.hasInput(3) ? &ctx.inputShape(3) : nullptr;
  ctx.setOutput(0, DType::Int32,
                convIntegerSpec(ctx.attrs(), ctx.inputShape(0), ctx.inputShape(1), xz, wz).y);
}

bool present(const KernelContext& ctx, size_t i) {
  return i < ctx.input_types.size() && ctx.input_types[i].present();
}

class ConvIntegerKernel : public Kernel {
 public:
  explicit ConvIntegerKernel(const KernelContext& ctx) {
    const auto& in = ctx.input_types;
    has_xz_ = present(ctx, 2);
    has_wz_ = present(ctx, 3);
    spec_ = convIntegerSpec(ctx.node.attrs(), in[0].shape, in[1].shape, has_xz_ ? &in[2].shape : nullptr,
                            has_wz_ ? &in[3].shape : nullptr);
    x_n_ = in[0].numel();
    w_n_ = in[1].numel();
    if (has_wz_ && shapeNumel(in[3].shape) > 1) w_idx_ = {spec_.w[0], w_n_ / spec_.w[0]};
  }
  size_t workspaceBytes() const override { return static_cast<size_t>(x_n_ + w_n_) * sizeof(int32_t); }
  void run(const KernelIO& io) const override {
    int32_t* x = static_cast<int32_t*>(io.workspace);
    int32_t* w = x + x_n_;
    subtractZeroPoint(io.inputs[0], has_xz_ ? &io.inputs[2] : nullptr, {}, x);
    subtractZeroPoint(io.inputs[1], has_wz_ ? &io.inputs[3] : nullptr, w_idx_, w);
    intConv(spec_, x, w, io.outputs[0].as<int32_t>());
  }

 private:
  nn::ConvSpec spec_;
  int64_t x_n_ = 0, w_n_ = 0;
  bool has_xz_ = false, has_wz_ = false;
  ParamIndex w_idx_;
};

// ---------------------------------------------------------------- MatMulInteger

// A's zero point applies per row (dim M, rows of K elements), B's per column (dim N, stride 1).
struct MatMulIntegerSpec {
  IntMatMulSpec mm;
  ParamIndex a_idx, b_idx;
};

MatMulIntegerSpec matMulIntegerSpec(const Shape& a, const Shape& b, const Shape* a_zp, const Shape* b_zp) {
  MatMulIntegerSpec s;
  s.mm = resolveIntMatMul("MatMulInteger", a, b);
  if (a_zp) {
    checkChannelParam("MatMulInteger", "a_zero_point", *a_zp, s.mm.m);
    if (shapeNumel(*a_zp) > 1) s.a_idx = {s.mm.m, s.mm.k};
  }
  if (b_zp) {
    checkChannelParam("MatMulInteger", "b_zero_point", *b_zp, s.mm.n);
    if (shapeNumel(*b_zp) > 1) s.b_idx = {s.mm.n, 1};
  }
  return s;
}

void inferMatMulInteger(InferContext& ctx) {
  checkOperandType("MatMulInteger", "A", ctx.inputDType(0));
  checkOperandType("MatMulInteger", "B", ctx.inputDType(1));
  checkZeroPointType(ctx, 2, 0, "a_zero_point");
  checkZeroPointType(ctx, 3, 1, "b_zero_point");
  const Shape* az = ctx.hasInput(2) ? &ctx.inputShape(2) : nullptr;
  const Shape* bz = ctx.hasInput(3) ? &ctx.inputShape(3) : nullptr;
  ctx.setOutput(0, DType::Int32, matMulIntegerSpec(ctx.inputShape(0), ctx.inputShape(1), az, bz).mm.out);
}

class MatMulIntegerKernel : public Kernel {
 public:
  explicit MatMulIntegerKernel(const KernelContext& ctx) {
    const auto& in = ctx.input_types;
    has_az_ = present(ctx, 2);
    has_bz_ = present(ctx, 3);
    spec_ = matMulIntegerSpec(in[0].shape, in[1].shape, has_az_ ? &in[2].shape : nullptr,
                              has_bz_ ? &in[3].shape : nullptr);
    a_n_ = in[0].numel();
    b_n_ = in[1].numel();
  }
  size_t workspaceBytes() const override { return static_cast<size_t>(a_n_ + b_n_) * sizeof(int32_t); }
  void run(const KernelIO& io) const override {
    int32_t* a = static_cast<int32_t*>(io.workspace);
    int32_t* b = a + a_n_;
    subtractZeroPoint(io.inputs[0], has_az_ ? &io.inputs[2] : nullptr, spec_.a_idx, a);
    subtractZeroPoint(io.inputs[1], has_bz_ ? &io.inputs[3] : nullptr, spec_.b_idx, b);
    intMatMul(spec_.mm, a, b, io.outputs[0].as<int32_t>());
  }

 private:
  MatMulIntegerSpec spec_;
  int64_t a_n_ = 0, b_n_ = 0;
  bool has_az_ = false, has_bz_ = false;
};

const char* kIntegerCpuReason =
    "its int32 result has no scale to requantize with; fold_qlinear rewrites it into a float Conv/MatMul "
    "the NPU runs whenever its sums stay below 2^24 (exact in float)";

}  // namespace

void registerIntegerMacOps(OpRegistry& reg) {
  reg.add("ConvInteger")
      .quantClass(QuantClass::Float)
      .cpuOnly(kIntegerCpuReason)
      .since(10)
      .inputs(2, 4)
      .infer(inferConvInteger)
      .kernel([](const KernelContext& c) { return std::make_unique<ConvIntegerKernel>(c); })
      .types({DType::UInt8, DType::Int8})
      .doc("int32 convolution of (x - x_zero_point) and (w - w_zero_point[m]); 1-D to 3-D, groups, pads");
  reg.add("MatMulInteger")
      .quantClass(QuantClass::Float)
      .cpuOnly(kIntegerCpuReason)
      .since(10)
      .inputs(2, 4)
      .infer(inferMatMulInteger)
      .kernel([](const KernelContext& c) { return std::make_unique<MatMulIntegerKernel>(c); })
      .types({DType::UInt8, DType::Int8})
      .doc("int32 numpy matmul of (A - a_zero_point[row]) and (B - b_zero_point[col])");
}

}  // namespace npuc::qops
