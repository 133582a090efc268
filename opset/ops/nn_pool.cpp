// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool on NCHW (1-D to 3-D spatial).
//
// Own loops rather than oneDNN pooling: the ONNX edge semantics (ceil_mode windows clipped at the
// padded border, count_include_pad counting only cells inside input + explicit pads, MaxPool's
// Indices output) do not map onto oneDNN's, and pooling is a small share of the models' time.
// Per output cell the kernel range is clipped once so the inner loops carry no bounds checks.
#include <algorithm>
#include <limits>

#include "opset/ops/nn_ops.h"
#include "opset/ops/nn_window.h"

namespace npuc::nn {

namespace {

enum class PoolKind { Max, Average };

constexpr size_t kMaxPoolSpatialRank = 3;

// Geometry of one spatial dim, padded to kMaxPoolSpatialRank with unit dims in front.
struct PoolDim {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
};

struct PoolSpec {
  PoolKind kind = PoolKind::Max;
  bool count_include_pad = false;
  bool with_indices = false;  // MaxPool's optional second output
  bool column_major = false;  // storage_order=1: indices count H fastest within a plane (2-D)
  int64_t planes = 0;         // N * C
  PoolDim dims[kMaxPoolSpatialRank];
  Shape y;
};

PoolSpec resolvePool(const Node& node, const Shape& x, PoolKind kind) {
  const std::string& op = node.opType();
  const Attributes& attrs = node.attrs();
  if (x.size() < 3 || x.size() > 2 + kMaxPoolSpatialRank) {
    throw ShapeError(op + " input " + shapeStr(x) + " must be N x C x spatial with 1 to 3 spatial dims");
  }
  if (!attrs.has("kernel_shape")) throw ShapeError(op + " requires the kernel_shape attribute");
  const Window w =
      forwardWindow(attrs, spatialDims(x), attrs.ints("kernel_shape"), attrs.i("ceil_mode", 0) != 0, op);
  PoolSpec s;
  s.kind = kind;
  s.count_include_pad = attrs.i("count_include_pad", 0) != 0;
  s.with_indices = node.numOutputs() > 1;
  s.column_major = attrs.i("storage_order", 0) != 0;
  s.planes = x[0] * x[1];
  const size_t skip = kMaxPoolSpatialRank - w.rank();
  for (size_t i = 0; i < w.rank(); ++i) {
    PoolDim& d = s.dims[skip + i];
    d = {x[2 + i], w.out[i], w.kernel[i], w.strides[i], w.dilations[i], w.pads_begin[i], w.pads_end[i]};
  }
  s.y = {x[0], x[1]};
  s.y.insert(s.y.end(), w.out.begin(), w.out.end());
  return s;
}

// Kernel taps [lo, hi) of output position `o` that land inside the input, and the count of taps
// inside input + explicit pads (AveragePool's count_include_pad divisor).
struct TapRange {
  int64_t lo, hi, padded_count;
};
TapRange taps(const PoolDim& d, int64_t o) {
  const int64_t start = o * d.stride - d.pad_begin;
  auto firstTapAtOrAbove = [&](int64_t pos) {  // smallest k with start + k*dilation >= pos
    const int64_t delta = pos - start;
    return delta <= 0 ? 0 : (delta + d.dilation - 1) / d.dilation;
  };
  TapRange r;
  r.lo = firstTapAtOrAbove(0);
  r.hi = std::min(d.kernel, firstTapAtOrAbove(d.in));
  const int64_t padded_hi = std::min(d.kernel, firstTapAtOrAbove(d.in + d.pad_end));
  r.padded_count = std::max<int64_t>(0, padded_hi - firstTapAtOrAbove(-d.pad_begin));
  r.hi = std::max(r.hi, r.lo);
  return r;
}

template <bool kWithIndices>
void maxPoolPlane(const PoolSpec& s, const float* x, float* y, int64_t* idx, int64_t plane_offset) {
  const PoolDim &D = s.dims[0], &H = s.dims[1], &W = s.dims[2];
  for (int64_t od = 0; od < D.out; ++od) {
    const TapRange td = taps(D, od);
    for (int64_t oh = 0; oh < H.out; ++oh) {
      const TapRange th = taps(H, oh);
      for (int64_t ow = 0; ow < W.out; ++ow) {
        const TapRange tw = taps(W, ow);
        float best = -std::numeric_limits<float>::infinity();
        int64_t best_at = 0;
        for (int64_t kd = td.lo; kd < td.hi; ++kd) {
          const int64_t id = od * D.stride - D.pad_begin + kd * D.dilation;
          for (int64_t kh = th.lo; kh < th.hi; ++kh) {
            const int64_t ih = oh * H.stride - H.pad_begin + kh * H.dilation;
            const int64_t row = (id * H.in + ih) * W.in + ow * W.stride - W.pad_begin;
            for (int64_t kw = tw.lo; kw < tw.hi; ++kw) {
              const float v = x[row + kw * W.dilation];
              if constexpr (kWithIndices) {
                if (v > best) {
                  best = v;
                  best_at = row + kw * W.dilation;
                }
              } else {
                best = std::max(best, v);
              }
            }
          }
        }
        const int64_t o = (od * H.out + oh) * W.out + ow;
        y[o] = best;
        if constexpr (kWithIndices) idx[o] = plane_offset + best_at;
      }
    }
  }
}

void averagePoolPlane(const PoolSpec& s, const float* x, float* y) {
  const PoolDim &D = s.dims[0], &H = s.dims[1], &W = s.dims[2];
  for (int64_t od = 0; od < D.out; ++od) {
    const TapRange td = taps(D, od);
    for (int64_t oh = 0; oh < H.out; ++oh) {
      const TapRange th = taps(H, oh);
      for (int64_t ow = 0; ow < W.out; ++ow) {
        const TapRange tw = taps(W, ow);
        float acc = 0.f;
        for (int64_t kd = td.lo; kd < td.hi; ++kd) {
          const int64_t id = od * D.stride - D.pad_begin + kd * D.dilation;
          for (int64_t kh = th.lo; kh < th.hi; ++kh) {
            const int64_t ih = oh * H.stride - H.pad_begin + kh * H.dilation;
            const float* row = x + (id * H.in + ih) * W.in + ow * W.stride - W.pad_begin;
            for (int64_t kw = tw.lo; kw < tw.hi; ++kw) acc += row[kw * W.dilation];
          }
        }
        const int64_t count = s.count_include_pad ? td.padded_count * th.padded_count * tw.padded_count
                                                  : (td.hi - td.lo) * (th.hi - th.lo) * (tw.hi - tw.lo);
        y[(od * H.out + oh) * W.out + ow] = count > 0 ? acc / static_cast<float>(count) : 0.f;
      }
    }
  }
}

class PoolKernel : public Kernel {
 public:
  explicit PoolKernel(PoolSpec s) : s_(std::move(s)) {
    for (const PoolDim& d : s_.dims) {
      in_plane_ *= d.in;
      out_plane_ *= d.out;
    }
  }

  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<float>();
    float* y = io.outputs[0].as<float>();
    int64_t* idx = s_.with_indices ? io.outputs[1].as<int64_t>() : nullptr;
    for (int64_t p = 0; p < s_.planes; ++p) {
      const float* xp = x + p * in_plane_;
      float* yp = y + p * out_plane_;
      if (s_.kind == PoolKind::Average) {
        averagePoolPlane(s_, xp, yp);
      } else if (idx) {
        maxPoolPlane<true>(s_, xp, yp, idx + p * out_plane_, p * in_plane_);
        if (s_.column_major) toColumnMajor(idx + p * out_plane_, p * in_plane_);
      } else {
        maxPoolPlane<false>(s_, xp, yp, nullptr, 0);
      }
    }
  }

 private:
  // Rewrites one plane's row-major indices (h * W + w) as column-major ones (w * H + h).
  void toColumnMajor(int64_t* idx, int64_t plane_offset) const {
    const int64_t h = s_.dims[1].in, w = s_.dims[2].in;
    for (int64_t o = 0; o < out_plane_; ++o) {
      const int64_t local = idx[o] - plane_offset;
      idx[o] = plane_offset + (local % w) * h + local / w;
    }
  }

  PoolSpec s_;
  int64_t in_plane_ = 1, out_plane_ = 1;
};

// 2-D MaxPool without Indices, the common CNN stem/downsampling case. Like the depthwise
// stencil (nn_conv_depthwise.cpp), each input plane is copied into a -inf padded plane in the
// workspace so every tap of every output is in bounds: the output row loop then has no
// per-cell tap clipping and vectorizes (the clipped loops above cost ~25% of ShuffleNet's run).
// The taps are visited in the same order with the same max, so results equal the generic path.
class MaxPool2dKernel : public Kernel {
 public:
  explicit MaxPool2dKernel(const PoolSpec& s) : planes_(s.planes), h_(s.dims[1]), w_(s.dims[2]) {
    padded_h_ = std::max(h_.in + h_.pad_begin, (h_.out - 1) * h_.stride + (h_.kernel - 1) * h_.dilation + 1);
    padded_w_ = std::max(w_.in + w_.pad_begin, (w_.out - 1) * w_.stride + (w_.kernel - 1) * w_.dilation + 1);
    row_ = pickRowFn();
  }

  // 1-D or 2-D (a unit depth), no Indices output, no kernel taller than the row-pointer table.
  static bool applies(const PoolSpec& s) {
    return s.kind == PoolKind::Max && !s.with_indices && s.dims[0].in == 1 && s.dims[0].out == 1 &&
           s.dims[1].kernel <= kMaxKernelRows;
  }

  size_t workspaceBytes() const override {
    return sizeof(float) * static_cast<size_t>(padded_h_ * padded_w_);
  }

  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<float>();
    float* y = io.outputs[0].as<float>();
    float* padded = static_cast<float*>(io.workspace);
    // The padding stays -inf across planes: each plane only overwrites the interior.
    std::fill(padded, padded + padded_h_ * padded_w_, -std::numeric_limits<float>::infinity());
    const float* rows[kMaxKernelRows];
    for (int64_t p = 0; p < planes_; ++p) {
      const float* xp = x + p * h_.in * w_.in;
      for (int64_t ih = 0; ih < h_.in; ++ih) {
        std::copy(xp + ih * w_.in, xp + (ih + 1) * w_.in,
                  padded + (ih + h_.pad_begin) * padded_w_ + w_.pad_begin);
      }
      float* yp = y + p * h_.out * w_.out;
      for (int64_t oh = 0; oh < h_.out; ++oh) {
        for (int64_t kh = 0; kh < h_.kernel; ++kh) {
          rows[kh] = padded + (oh * h_.stride + kh * h_.dilation) * padded_w_;
        }
        row_(rows, yp + oh * w_.out, *this);
      }
    }
  }

 private:
  static constexpr int64_t kMaxKernelRows = 16;

  // One output row with the window known at compile time so the taps unroll and the columns vectorize.
  template <int K, int S>
  static void rowFixed(const float* const* rows, float* __restrict out, const MaxPool2dKernel& k) {
    const int64_t d = k.w_.dilation;
    for (int64_t ow = 0; ow < k.w_.out; ++ow) {
      float best = -std::numeric_limits<float>::infinity();
      for (int kh = 0; kh < K; ++kh) {
        const float* r = rows[kh] + ow * S;
        for (int kw = 0; kw < K; ++kw) best = std::max(best, r[kw * d]);
      }
      out[ow] = best;
    }
  }

  static void rowGeneric(const float* const* rows, float* __restrict out, const MaxPool2dKernel& k) {
    const PoolDim &H = k.h_, &W = k.w_;
    for (int64_t ow = 0; ow < W.out; ++ow) {
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t kh = 0; kh < H.kernel; ++kh) {
        const float* r = rows[kh] + ow * W.stride;
        for (int64_t kw = 0; kw < W.kernel; ++kw) best = std::max(best, r[kw * W.dilation]);
      }
      out[ow] = best;
    }
  }

  using RowFn = void (*)(const float* const*, float*, const MaxPool2dKernel&);
  RowFn pickRowFn() const {
    const bool square = h_.kernel == w_.kernel;
    if (square && h_.kernel == 3 && w_.stride == 2) return &rowFixed<3, 2>;
    if (square && h_.kernel == 3 && w_.stride == 1) return &rowFixed<3, 1>;
    if (square && h_.kernel == 2 && w_.stride == 2) return &rowFixed<2, 2>;
    return &rowGeneric;
  }

  int64_t planes_;
  PoolDim h_, w_;
  int64_t padded_h_, padded_w_;  // the -inf padded input plane in the workspace
  RowFn row_;
};

void checkStorageOrder(const Node& node, const Shape& x) {
  if (node.numOutputs() > 1 && node.attrs().i("storage_order", 0) != 0 && x.size() > 4) {
    throw UnsupportedOpError(
        "MaxPool node '" + node.name() +
        "': Indices with storage_order=1 (column-major) are supported for 1-D and 2-D only");
  }
}

template <PoolKind kKind>
void inferPool(InferContext& ctx) {
  const PoolSpec s = resolvePool(ctx.node(), ctx.inputShape(0), kKind);
  ctx.setOutput(0, ctx.inputDType(0), s.y);
  if (ctx.numOutputs() > 1) ctx.setOutput(1, DType::Int64, s.y);
}

template <PoolKind kKind>
std::unique_ptr<Kernel> makePool(const KernelContext& ctx) {
  if (kKind == PoolKind::Max) checkStorageOrder(ctx.node, ctx.input_types[0].shape);
  PoolSpec spec = resolvePool(ctx.node, ctx.input_types[0].shape, kKind);
  if (MaxPool2dKernel::applies(spec)) return std::make_unique<MaxPool2dKernel>(spec);
  return std::make_unique<PoolKernel>(std::move(spec));
}

// ---------------------------------------------------------------- global pooling

Shape globalPoolShape(const Shape& x, const std::string& op) {
  if (x.size() < 3) throw ShapeError(op + " input " + shapeStr(x) + " must be N x C x spatial (rank >= 3)");
  Shape y(x.size(), 1);
  y[0] = x[0];
  y[1] = x[1];
  return y;
}

void inferGlobalPool(InferContext& ctx) {
  ctx.setOutput(0, ctx.inputDType(0), globalPoolShape(ctx.inputShape(0), ctx.node().opType()));
}

template <PoolKind kKind>
class GlobalPoolKernel : public Kernel {
 public:
  explicit GlobalPoolKernel(const Shape& x)
      : planes_(x[0] * x[1]), plane_(shapeNumel(x) / std::max<int64_t>(1, planes_)) {}

  void run(const KernelIO& io) const override {
    const float* x = io.inputs[0].as<float>();
    float* y = io.outputs[0].as<float>();
    for (int64_t p = 0; p < planes_; ++p) {
      const float* xp = x + p * plane_;
      if constexpr (kKind == PoolKind::Average) {
        float acc = 0.f;
        for (int64_t i = 0; i < plane_; ++i) acc += xp[i];
        y[p] = acc / static_cast<float>(plane_);
      } else {
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < plane_; ++i) best = std::max(best, xp[i]);
        y[p] = best;
      }
    }
  }

 private:
  int64_t planes_, plane_;
};

template <PoolKind kKind>
std::unique_ptr<Kernel> makeGlobalPool(const KernelContext& ctx) {
  globalPoolShape(ctx.input_types[0].shape, ctx.node.opType());
  return std::make_unique<GlobalPoolKernel<kKind>>(ctx.input_types[0].shape);
}

}  // namespace

void registerPoolOps(OpRegistry& reg) {
  reg.add("MaxPool")
      .traits(OpTrait::SizeChange | OpTrait::WindowPooling | OpTrait::SlidingWindow)
      .quantClass(QuantClass::SharedScale)
      .inputs(1)
      .outputs(1, 2)
      .infer(inferPool<PoolKind::Max>)
      .kernel(makePool<PoolKind::Max>)
      .types({DType::Float32})
      .doc("max pooling: auto_pad, ceil_mode, dilations, optional row-major Indices");
  reg.add("AveragePool")
      .traits(OpTrait::SizeChange | OpTrait::WindowPooling | OpTrait::SlidingWindow)
      .quantClass(QuantClass::AveragePool)
      .inputs(1)
      .infer(inferPool<PoolKind::Average>)
      .kernel(makePool<PoolKind::Average>)
      .types({DType::Float32})
      .doc("average pooling: auto_pad, ceil_mode, count_include_pad");
  reg.add("GlobalAveragePool")
      .traits(OpTrait::SizeChange)
      .quantClass(QuantClass::AveragePool)
      .inputs(1)
      .infer(inferGlobalPool)
      .kernel(makeGlobalPool<PoolKind::Average>)
      .types({DType::Float32})
      .doc("mean over all spatial dims");
  reg.add("GlobalMaxPool")
      .traits(OpTrait::SizeChange)
      .quantClass(QuantClass::Float)
      .inputs(1)
      .infer(inferGlobalPool)
      .kernel(makeGlobalPool<PoolKind::Max>)
      .types({DType::Float32})
      .doc("max over all spatial dims");
}

}  // namespace npuc::nn
