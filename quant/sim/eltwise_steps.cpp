// Simulator steps of the element-wise and data-movement ops in the integer domain: Add and Mul
// (binary_requant.h, numpy broadcasting), Concat (inputs rescaled to the output), Relu/Clip
// (a clamp in the input's integer domain), GlobalAveragePool, lookup tables, and the
// shared-scale data movement ops.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "opset/eval.h"
#include "opset/gelu.h"
#include "quant/binary_requant.h"
#include "quant/graph/op_quant_class.h"
#include "quant/int_limits.h"
#include "quant/lut.h"
#include "quant/requant_wide.h"
#include "quant/scheme_qparams.h"
#include "quant/sim/broadcast_runs.h"
#include "quant/sim/byte_lookup.h"
#include "quant/sim/node_kernel.h"
#include "quant/sim/requant_row.h"
#include "quant/sim/requant_vector.h"
#include "quant/sim/sim_step.h"

namespace npuc::quant {

namespace {

std::string nodeLabel(const Node& n) {
  return "node '" + n.name() + "' (" + n.opType() + ")";
}

// Index of the pair (qa, qb) in a 256 x 256 table of a binary op's results.
inline size_t pairIndex(int8_t qa, int8_t qb) {
  return static_cast<size_t>(static_cast<uint8_t>(qa)) << 8 | static_cast<uint8_t>(qb);
}

// Add and Mul share the broadcast loop; `Op` is the scalar integer formula. Its result depends
// only on the two int8 inputs, so all 65536 results are tabulated once with `Op` itself (bit
// identical by construction) and each element is one lookup instead of three requantizations.
// The output is walked as broadcast runs (broadcast_runs.h): over a run where one input stays on
// one element (x * scalar, x * s[1,C,1,1]), that element's 256-entry row of the table is a byte
// lookup of the other input (byte_lookup.h).
template <typename Requant, int8_t (*Op)(int8_t, int8_t, const Requant&)>
class BinaryStep : public SimStep {
 public:
  BinaryStep(const StepContext& ctx, Requant r)
      : SimStep(ctx.inputs, ctx.outputs),
        shape_(ctx.node.output(0)->shape()),
        runs_(ctx.node.input(0)->shape(), ctx.node.input(1)->shape(), shape_),
        params_(ctx.paramsOf(ctx.node.output(0))),
        table_(size_t{1} << 16) {
    // by_b_ holds the table transposed (row qb, column qa) when runs fix b and step a.
    const bool transposed = runs_.aSteps() && !runs_.bSteps();
    if (transposed) by_b_.resize(table_.size());
    for (int qa = kActivationQMin; qa <= kActivationQMax; ++qa) {
      for (int qb = kActivationQMin; qb <= kActivationQMax; ++qb) {
        const int8_t a = static_cast<int8_t>(qa), b = static_cast<int8_t>(qb);
        table_[pairIndex(a, b)] = Op(a, b, r);
        if (transposed) by_b_[pairIndex(b, a)] = table_[pairIndex(a, b)];
      }
    }
  }
  void run(SimSlots& slots) const override {
    const int8_t* a = in(slots, 0).tensor.template data<int8_t>();
    const int8_t* b = in(slots, 1).tensor.template data<int8_t>();
    SimValue y{Tensor::uninitialized(DType::Int8, shape_), true, params_};
    int8_t* dst = y.tensor.data<int8_t>();
    const int64_t n = runs_.length();
    const int8_t* table = table_.data();
    const bool a_steps = runs_.aSteps(), b_steps = runs_.bSteps();
    runs_.forEach([&](int64_t ia, int64_t ib, int64_t io) {
      const int8_t* ra = a + ia;
      const int8_t* rb = b + ib;
      int8_t* d = dst + io;
      if (a_steps && b_steps) {
        for (int64_t i = 0; i < n; ++i) d[i] = table[pairIndex(ra[i], rb[i])];
      } else if (a_steps) {  // b fixed: its row of the transposed table, indexed by a
        lookupBytes(by_b_.data() + pairIndex(*rb, 0), ra, n, d);
      } else if (b_steps) {  // a fixed: its row, indexed by b
        lookupBytes(table + pairIndex(*ra, 0), rb, n, d);
      } else {
        std::fill(d, d + n, table[pairIndex(*ra, *rb)]);
      }
    });
    out(slots, 0) = std::move(y);
  }

 private:
  Shape shape_;
  BroadcastRuns runs_;
  QuantParams params_;
  std::vector<int8_t> table_;  // Op(qa, qb) at pairIndex(qa, qb)
  std::vector<int8_t> by_b_;   // Op(qa, qb) at pairIndex(qb, qa), when runs fix b
};

// Add of two same-shape int8 tensors as binary_requant.h defines it: each input is rescaled on
// its own (x_i = applyMultiplier((q_i - z_i) << 20, M_i), a 256-entry table per input), the
// int32 sum is requantized once by the vector epilogue. 1 KiB tables stay in L1 where the 64 KiB
// pair table of BinaryStep does not. makeAddStep only uses it after checking that it equals
// addInt8 on all 65536 input pairs, so it cannot drift from the formula.
class TableSumAddStep : public SimStep {
 public:
  TableSumAddStep(const StepContext& ctx, const AddRequant& r)
      : SimStep(ctx.inputs, ctx.outputs),
        shape_(ctx.node.output(0)->shape()),
        params_(ctx.paramsOf(ctx.node.output(0))),
        requant_(r),
        table_a_(256),
        table_b_(256) {
    for (int q = kActivationQMin; q <= kActivationQMax; ++q) {
      const size_t i = static_cast<uint8_t>(q);
      table_a_[i] = applyMultiplier((q - r.zp_a) * (1 << kAddLeftShift), r.a);
      table_b_[i] = applyMultiplier((q - r.zp_b) * (1 << kAddLeftShift), r.b);
    }
  }
  // True when add() (this decomposition, on the path run() takes) reproduces addInt8 for every
  // pair of inputs.
  bool matchesAddInt8() const {
    constexpr int kLevels = 256;
    std::vector<int8_t> a(kLevels * kLevels), b(kLevels * kLevels), got(kLevels * kLevels);
    for (int i = 0; i < kLevels * kLevels; ++i) {
      a[static_cast<size_t>(i)] = static_cast<int8_t>(kActivationQMin + i / kLevels);
      b[static_cast<size_t>(i)] = static_cast<int8_t>(kActivationQMin + i % kLevels);
    }
    add(a.data(), b.data(), kLevels * kLevels, got.data());
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != addInt8(a[i], b[i], requant_)) return false;
    }
    return true;
  }
  void run(SimSlots& slots) const override {
    SimValue y{Tensor::uninitialized(DType::Int8, shape_), true, params_};
    add(in(slots, 0).tensor.template data<int8_t>(), in(slots, 1).tensor.template data<int8_t>(),
        y.tensor.numel(), y.tensor.data<int8_t>());
    out(slots, 0) = std::move(y);
  }

 private:
  // dst[i] = requant(x_a(a[i]) + x_b(b[i])): with AVX-512, x_i computed in registers 16 lanes at
  // a time (|q - zp| << 20 times a multiplier <= 0.5 stays below 2^28: no clamp needed), else
  // from the tables.
  void add(const int8_t* a, const int8_t* b, int64_t n, int8_t* dst) const {
    int64_t i0 = 0;
#ifdef NPUC_REQUANT_AVX512
    if (!requant_.a.isZero() && !requant_.b.isZero() && !requant_.out.isZero()) {
      constexpr int64_t kLanes = 16;
      const MultiplierVector rescale_a(requant_.a), rescale_b(requant_.b);
      const RequantVector requant(requant_.out, requant_.zp_out);
      const __m512i zp_a = _mm512_set1_epi32(requant_.zp_a), zp_b = _mm512_set1_epi32(requant_.zp_b);
      auto rescaled = [](const int8_t* q, __m512i zp, const MultiplierVector& m) {
        const __m512i centered =
            _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))), zp);
        return m.apply(_mm512_slli_epi32(_mm512_abs_epi32(centered), kAddLeftShift),
                       _mm512_movepi32_mask(centered));
      };
      for (; i0 + kLanes <= n; i0 += kLanes) {
        const __m512i sum =
            _mm512_add_epi32(rescaled(a + i0, zp_a, rescale_a), rescaled(b + i0, zp_b, rescale_b));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i0), requant(sum));
      }
    }
#endif
    // Sums per chunk: 4 KiB of int32 on the stack, reused.
    constexpr int64_t kChunk = 1024;
    int32_t sums[kChunk];
    for (; i0 < n; i0 += kChunk) {
      const int64_t len = std::min(kChunk, n - i0);
      for (int64_t i = 0; i < len; ++i) {
        sums[i] = table_a_[static_cast<uint8_t>(a[i0 + i])] + table_b_[static_cast<uint8_t>(b[i0 + i])];
      }
      requantizeRowToInt8(sums, len, 0, requant_.out, requant_.zp_out, dst + i0);
    }
  }

  Shape shape_;
  QuantParams params_;
  AddRequant requant_;
  std::vector<int32_t> table_a_, table_b_;  // x_i by input byte
};

class ConcatStep : public SimStep {
 public:
  explicit ConcatStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs) {
    const Node& n = ctx.node;
    shape_ = n.output(0)->shape();
    params_ = ctx.paramsOf(n.output(0));
    const int64_t axis = normalizeAxis(n.attrs().i("axis"), static_cast<int64_t>(shape_.size()));
    outer_ = 1;
    for (int64_t d = 0; d < axis; ++d) outer_ *= shape_[static_cast<size_t>(d)];
    for (const Value* v : n.inputs()) {
      rescale_.push_back(makeRescaleRequant(ctx.paramsOf(v), params_));
      // rescaleInt8 of every int8 value, indexed by the value's byte: one lookup per element.
      std::vector<int8_t> table(256);
      for (int q = kActivationQMin; q <= kActivationQMax; ++q) {
        table[static_cast<uint8_t>(q)] = rescaleInt8(static_cast<int8_t>(q), rescale_.back());
      }
      tables_.push_back(std::move(table));
      const Shape& s = v->shape();
      int64_t chunk = 1;  // contiguous elements of one outer row
      for (size_t d = static_cast<size_t>(axis); d < s.size(); ++d) chunk *= s[d];
      chunks_.push_back(chunk);
    }
  }
  void run(SimSlots& slots) const override {
    SimValue y{Tensor::uninitialized(DType::Int8, shape_), true, params_};
    int8_t* dst = y.tensor.data<int8_t>();
    int64_t row = 0;
    for (int64_t c : chunks_) row += c;
    int64_t offset = 0;
    for (size_t i = 0; i < chunks_.size(); ++i) {
      const int8_t* src = in(slots, i).tensor.data<int8_t>();
      const RescaleRequant& r = rescale_[i];
      for (int64_t o = 0; o < outer_; ++o) {
        int8_t* d = dst + o * row + offset;
        const int8_t* s = src + o * chunks_[i];
        if (r.identity) {
          std::copy(s, s + chunks_[i], d);
        } else {
          const int8_t* table = tables_[i].data();
          for (int64_t j = 0; j < chunks_[i]; ++j) d[j] = table[static_cast<uint8_t>(s[j])];
        }
      }
      offset += chunks_[i];
    }
    out(slots, 0) = std::move(y);
  }

 private:
  Shape shape_;
  QuantParams params_;
  int64_t outer_ = 1;
  std::vector<RescaleRequant> rescale_;
  std::vector<std::vector<int8_t>> tables_;  // per input, rescaleInt8 by input byte
  std::vector<int64_t> chunks_;
};

// Relu / Clip on an int8 tensor whose output keeps the input's parameters: clamp to the
// integers of the real bounds (quantizeValue rounds them the way any real value is rounded).
class ClampStep : public SimStep {
 public:
  explicit ClampStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs) {
    const Node& n = ctx.node;
    const QuantParams p = ctx.paramsOf(n.output(0));
    const ClampBounds bounds = clampBoundsOf(n);
    if (ctx.activationStorage() == DType::Int16) {
      wide_ = true;
      lo16_ = static_cast<int16_t>(quantizeValueWide(bounds.lo, p, -32768, 32767));
      hi16_ = static_cast<int16_t>(quantizeValueWide(bounds.hi, p, -32768, 32767));
      return;
    }
    lo_ = quantizeValue(bounds.lo, p);
    hi_ = quantizeValue(bounds.hi, p);
  }
  void run(SimSlots& slots) const override {
    const SimValue& x = in(slots, 0);
    if (wide_) {
      runWide(slots, x);
      return;
    }
    if (lo_ == kActivationQMin && hi_ == kActivationQMax) {
      // The clamp is the int8 saturation its producer already applied (a fused clamp: ReLU with
      // z = -128, ReLU6 on a [0, 6] grid), so the output is the input's bytes: share them
      // instead of copying (no step writes into a tensor it reads).
      out(slots, 0) = x;
      return;
    }
    SimValue y{Tensor::uninitialized(DType::Int8, x.tensor.shape()), true, x.params};
    const int8_t* s = x.tensor.data<int8_t>();
    int8_t* d = y.tensor.data<int8_t>();
    // Locals: int8_t stores may alias the members, which would stop vectorization.
    const int8_t lo = lo_, hi = hi_;
    const int64_t n = x.tensor.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = std::clamp(s[i], lo, hi);
    out(slots, 0) = std::move(y);
  }

 private:
  // int16 activations: the same clamp on the int16 grid (a saturating producer's clamp is kept as
  // a copy: simpler than sharing, and the step is cheap next to the convs around it).
  void runWide(SimSlots& slots, const SimValue& x) const {
    SimValue y{Tensor::uninitialized(DType::Int16, x.tensor.shape()), true, x.params};
    const int16_t* s = x.tensor.data<int16_t>();
    int16_t* d = y.tensor.data<int16_t>();
    const int16_t lo = lo16_, hi = hi16_;
    const int64_t n = x.tensor.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = std::clamp(s[i], lo, hi);
    out(slots, 0) = std::move(y);
  }

  int8_t lo_ = -128, hi_ = 127;
  bool wide_ = false;
  int16_t lo16_ = -32768, hi16_ = 32767;
};

// acc = sum over H*W of (q - z_in) in int64, y = requant(acc, s_in / (H*W * s_out)): int8
// activations (the int32 accumulator of w8a8: 255 * H*W fits for any image below 8M pixels) or
// int16 ones (the a16 dtypes: int64 accumulator, requant_wide.h).
template <typename T>
class GlobalAveragePoolStep : public SimStep {
  static constexpr bool kWide = sizeof(T) == 2;

 public:
  explicit GlobalAveragePoolStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs) {
    const Node& n = ctx.node;
    const Shape& x = n.input(0)->shape();
    const QuantParams pi = ctx.paramsOf(n.input(0));
    params_ = ctx.paramsOf(n.output(0));
    planes_ = x[0] * x[1];
    area_ = shapeNumel(x) / planes_;
    zero_point_in_ = pi.zero_point;
    const double real = double{pi.scale} / (static_cast<double>(area_) * params_.scale);
    multiplier_ = kWide ? quantizeWideMultiplier(real, nodeLabel(n).c_str())
                        : quantizeMultiplier(real, nodeLabel(n).c_str());
    shape_ = n.output(0)->shape();
  }
  void run(SimSlots& slots) const override {
    const T* s = in(slots, 0).tensor.data<T>();
    SimValue y{Tensor::uninitialized(kWide ? DType::Int16 : DType::Int8, shape_), true, params_};
    T* d = y.tensor.data<T>();
    for (int64_t p = 0; p < planes_; ++p) {
      int64_t acc = 0;
      for (int64_t i = 0; i < area_; ++i) acc += int64_t{s[p * area_ + i]} - zero_point_in_;
      if constexpr (kWide) {
        d[p] = requantizeToInt16(acc, multiplier_, params_.zero_point);
      } else {
        d[p] = requantizeToInt8(saturateToInt32(acc), multiplier_, params_.zero_point);
      }
    }
    out(slots, 0) = std::move(y);
  }

 private:
  Shape shape_;
  QuantParams params_;
  int64_t planes_ = 1, area_ = 1;
  int32_t zero_point_in_ = 0;
  FixedPointMultiplier multiplier_;
};

// GELU's tanh approximation (Gelu with approximate="tanh"), which lut.h does not name.
double tanhGelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x)));
}

class LutStep : public SimStep {
 public:
  explicit LutStep(const StepContext& ctx) : SimStep(ctx.inputs, ctx.outputs) {
    const Node& n = ctx.node;
    params_ = ctx.paramsOf(n.output(0));
    const QuantParams in = ctx.paramsOf(n.input(0));
    if (n.opType() == "Gelu" && n.attrs().s("approximate", "none") == "tanh") {
      lut_ = buildLut(tanhGelu, in, params_);
    } else {
      lut_ = buildLut(lutFunctionFromOpType(n.opType()), in, params_);
    }
    for (int q = kActivationQMin; q <= kActivationQMax; ++q)
      by_byte_[static_cast<uint8_t>(q)] = lookupLut(lut_, static_cast<int8_t>(q));
  }
  void run(SimSlots& slots) const override {
    const SimValue& x = in(slots, 0);
    SimValue y{Tensor::uninitialized(DType::Int8, x.tensor.shape()), true, params_};
    lookupBytes(by_byte_.data(), x.tensor.data<int8_t>(), x.tensor.numel(), y.tensor.data<int8_t>());
    out(slots, 0) = std::move(y);
  }

 private:
  QuantParams params_;
  Int8Lut lut_;
  std::array<int8_t, 256> by_byte_{};  // lut_ indexed by the input byte (lookupBytes' order)
};

// Data movement (and MaxPool) with the input's parameters on every output. The float kernel
// runs on the dequantized values and the result is quantized with the same parameters: every
// output element is an input element (or 0 padding, which maps to the zero point), and
// quantize(dequantize(q)) == q, so this is exactly the byte move the NPU performs.
class SharedScaleStep : public SimStep {
 public:
  explicit SharedScaleStep(const StepContext& ctx)
      : SimStep(ctx.inputs, ctx.outputs), node_(ctx.node), kernel_(NodeKernel::tryBuild(ctx.node)) {}
  void run(SimSlots& slots) const override {
    const SimValue& x = in(slots, 0);
    const Tensor data = dequantize(x);
    std::vector<const Tensor*> ins{&data};
    for (size_t i = 1; i < node_.numInputs(); ++i) ins.push_back(hasIn(i) ? &in(slots, i).tensor : nullptr);
    std::vector<Tensor> outs = runNode(kernel_.get(), node_, ins);
    for (size_t i = 0; i < numOut(); ++i) out(slots, i) = quantizeFloat(outs[i], x.params, x.tensor.dtype());
  }

 private:
  const Node& node_;
  std::unique_ptr<NodeKernel> kernel_;
};

}  // namespace

std::unique_ptr<SimStep> makeAddStep(const StepContext& ctx) {
  const Node& n = ctx.node;
  AddRequant r =
      makeAddRequant(ctx.paramsOf(n.input(0)), ctx.paramsOf(n.input(1)), ctx.paramsOf(n.output(0)));
  const Shape& out_shape = n.output(0)->shape();
  if (n.input(0)->shape() == out_shape && n.input(1)->shape() == out_shape) {
    auto step = std::make_unique<TableSumAddStep>(ctx, r);
    if (step->matchesAddInt8()) return step;
  }
  return std::make_unique<BinaryStep<AddRequant, addInt8>>(ctx, r);
}

std::unique_ptr<SimStep> makeMulStep(const StepContext& ctx) {
  const Node& n = ctx.node;
  MulRequant r =
      makeMulRequant(ctx.paramsOf(n.input(0)), ctx.paramsOf(n.input(1)), ctx.paramsOf(n.output(0)));
  return std::make_unique<BinaryStep<MulRequant, mulInt8>>(ctx, r);
}

std::unique_ptr<SimStep> makeConcatStep(const StepContext& ctx) {
  return std::make_unique<ConcatStep>(ctx);
}
std::unique_ptr<SimStep> makeClampStep(const StepContext& ctx) {
  return std::make_unique<ClampStep>(ctx);
}
std::unique_ptr<SimStep> makeGlobalAveragePoolStep(const StepContext& ctx) {
  if (ctx.activationStorage() == DType::Int16) return std::make_unique<GlobalAveragePoolStep<int16_t>>(ctx);
  return std::make_unique<GlobalAveragePoolStep<int8_t>>(ctx);
}
std::unique_ptr<SimStep> makeLutStep(const StepContext& ctx) {
  return std::make_unique<LutStep>(ctx);
}
std::unique_ptr<SimStep> makeWideSharedScaleStep(const StepContext& ctx) {
  return std::make_unique<SharedScaleStep>(ctx);
}
std::unique_ptr<SimStep> makeSharedScaleStep(const StepContext& ctx) {
  if (supportsInt8MaxPool(ctx.node)) return makeMaxPoolStep(ctx);
  return std::make_unique<SharedScaleStep>(ctx);
}

}  // namespace npuc::quant
