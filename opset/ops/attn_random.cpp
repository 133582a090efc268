// Bernoulli and RandomUniformLike: random ops, never constant-folded (notFoldable), so every
// inference draws new numbers.
//
// The generator (documented so results are reproducible within npuc, which is all ONNX promises:
// its reference values come from numpy's generator and no runtime matches them):
//   stream = splitmix64(seed_bits) for a `seed` attribute (the float's bits), else a
//            std::random_device draw when the kernel is built;
//   run r (0, 1, 2, ... per kernel, counted atomically so concurrent runs differ) and element i use
//            u = (splitmix64(stream + splitmix64(r) + i * 0x9E3779B97F4A7C15) >> 40) * 2^-24,
//   a float in [0, 1) with 24 random bits.
// RandomUniformLike(x): low + (high - low) * u in x's shape; dtype attribute (default x's type).
// Bernoulli(p): 1 where u < p else 0; dtype attribute (default p's type).
#include <atomic>
#include <cstring>
#include <random>

#include "opset/ops/attn_ops.h"

namespace npuc {
namespace attn {
namespace {

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Uniform {
 public:
  explicit Uniform(const Node& node) {
    if (node.attrs().has("seed")) {
      const float s = node.attrs().f("seed");
      uint32_t bits;
      std::memcpy(&bits, &s, sizeof bits);
      stream_ = splitmix64(bits);
    } else {
      std::random_device rd;
      stream_ = splitmix64((static_cast<uint64_t>(rd()) << 32) ^ rd());
    }
  }
  // The key of the next run; element i of that run is at(key, i).
  uint64_t nextRun() const { return stream_ + splitmix64(runs_.fetch_add(1)); }
  static double at(uint64_t key, int64_t i) {
    return static_cast<double>(splitmix64(key + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull) >> 40) *
           (1.0 / 16777216.0);
  }

 private:
  uint64_t stream_ = 0;
  mutable std::atomic<uint64_t> runs_{0};
};

DType attrType(const InferContext& ctx, DType def) {
  if (!ctx.attrs().has("dtype")) return def;
  return dtypeFromOnnx(static_cast<int32_t>(ctx.attrs().i("dtype")));
}

void checkOut(const Node& node, DType t, bool allow_ints) {
  const bool ok = t == DType::Float32 || t == DType::Float64 ||
                  (allow_ints && (t == DType::Int32 || t == DType::Int64 || t == DType::Bool ||
                                  t == DType::UInt8 || t == DType::Int8));
  if (!ok)
    throw UnsupportedOpError(node.opType() + " node '" + node.name() + "': output type " + dtypeName(t) +
                             " is not supported");
}

template <typename Fn>
void storeTyped(DType t, void* out, int64_t n, Fn&& value) {
  switch (t) {
    case DType::Float64:
      for (int64_t i = 0; i < n; ++i) static_cast<double*>(out)[i] = value(i);
      return;
    case DType::Int32:
      for (int64_t i = 0; i < n; ++i) static_cast<int32_t*>(out)[i] = static_cast<int32_t>(value(i));
      return;
    case DType::Int64:
      for (int64_t i = 0; i < n; ++i) static_cast<int64_t*>(out)[i] = static_cast<int64_t>(value(i));
      return;
    case DType::Bool:
    case DType::UInt8:
      for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(value(i));
      return;
    case DType::Int8:
      for (int64_t i = 0; i < n; ++i) static_cast<int8_t*>(out)[i] = static_cast<int8_t>(value(i));
      return;
    default:
      for (int64_t i = 0; i < n; ++i) static_cast<float*>(out)[i] = static_cast<float>(value(i));
  }
}

void inferUniformLike(InferContext& ctx) {
  const DType t = attrType(ctx, ctx.inputDType(0));
  checkOut(ctx.node(), t, false);
  ctx.setOutput(0, t, ctx.inputShape(0));
}

class UniformLikeKernel : public Kernel {
 public:
  explicit UniformLikeKernel(const KernelContext& ctx)
      : gen_(ctx.node),
        low_(ctx.node.attrs().f("low", 0.0f)),
        high_(ctx.node.attrs().f("high", 1.0f)),
        out_(ctx.output_types.at(0).dtype) {}
  void run(const KernelIO& io) const override {
    const uint64_t key = gen_.nextRun();
    const double lo = low_, span = static_cast<double>(high_) - low_;
    storeTyped(out_, io.outputs[0].data, io.outputs[0].numel(),
               [&](int64_t i) { return lo + span * Uniform::at(key, i); });
  }

 private:
  Uniform gen_;
  float low_, high_;
  DType out_;
};

void inferBernoulli(InferContext& ctx) {
  const DType in = ctx.inputDType(0);
  if (in != DType::Float32 && in != DType::Float64)
    throw UnsupportedOpError("Bernoulli node '" + ctx.node().name() +
                             "': probabilities must be float32 or float64");
  const DType t = attrType(ctx, in);
  checkOut(ctx.node(), t, true);
  ctx.setOutput(0, t, ctx.inputShape(0));
}

class BernoulliKernel : public Kernel {
 public:
  explicit BernoulliKernel(const KernelContext& ctx)
      : gen_(ctx.node), in_(ctx.input_types.at(0).dtype), out_(ctx.output_types.at(0).dtype) {}
  void run(const KernelIO& io) const override {
    const uint64_t key = gen_.nextRun();
    const TensorView& p = io.inputs[0];
    auto prob = [&](int64_t i) {
      return in_ == DType::Float64 ? p.as<const double>()[i] : static_cast<double>(p.as<const float>()[i]);
    };
    storeTyped(out_, io.outputs[0].data, io.outputs[0].numel(),
               [&](int64_t i) { return Uniform::at(key, i) < prob(i) ? 1.0 : 0.0; });
  }

 private:
  Uniform gen_;
  DType in_, out_;
};

constexpr const char* kRandomReason = "the NPU has no random number generator";

}  // namespace

void registerRandomOps(OpRegistry& reg) {
  reg.add("RandomUniformLike")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferUniformLike)
      .kernel([](const KernelContext& c) { return std::make_unique<UniformLikeKernel>(c); })
      .notFoldable()
      .cpuOnly(kRandomReason)
      .doc("uniform samples in [low, high) in the input's shape (splitmix64 generator, see attn_random.cpp)");
  reg.add("Bernoulli")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferBernoulli)
      .kernel([](const KernelContext& c) { return std::make_unique<BernoulliKernel>(c); })
      .types({DType::Float32, DType::Float64})
      .notFoldable()
      .since(15)
      .cpuOnly(kRandomReason)
      .doc("1 with probability p, else 0 (splitmix64 generator, see attn_random.cpp)");
}

}  // namespace attn
}  // namespace npuc
