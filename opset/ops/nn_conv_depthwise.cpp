// Depthwise 2-D convolution (group == C == M) directly on NCHW.
//
// oneDNN's depthwise kernel (brdgmm_dw) needs channels-last data; with the two boundary reorders
// it costs 0.27 ms for a 32x112x112 3x3 layer, of which the convolution itself is 0.07 ms. A
// depthwise conv is a per-plane stencil, so on NCHW each output row is a sum of kernel-tap-scaled
// input rows: the columns run as contiguous (stride 1) or strided multiply-adds the compiler
// vectorizes. Each input plane is first copied into a zero-padded plane in the workspace, so no
// tap needs a bounds check.
// Measured single-threaded (ms, stencil vs brdgmm_dw + reorders): 32x112x112 s1 0.16 vs 0.27,
// 96x112x112 s2 0.21 vs 0.49, 144x56x56 s1 0.27 vs 0.33.
// Planes are independent, so they are split over the OpenMP threads oneDNN also runs on (each
// thread has its own padded and flat planes in the workspace).
#include <omp.h>

#include <algorithm>

#include "opset/ops/nn_conv_kernel.h"

namespace npuc::nn {

namespace {

// Kernel heights beyond this go to oneDNN (see isPlainDepthwise2d).
constexpr int64_t kMaxRows = 16;
// Stride-1 output rows shorter than this (two AVX-512 vectors) run whole-plane (planeFlat).
constexpr int64_t kMinRowWidth = 32;

// Floats rounded up so a following workspace area stays kTensorAlignment-aligned.
int64_t alignedFloats(int64_t n) {
  const int64_t per_line = static_cast<int64_t>(kTensorAlignment / sizeof(float));
  return (n + per_line - 1) / per_line * per_line;
}

class DepthwiseConvKernel : public Kernel {
 public:
  explicit DepthwiseConvKernel(const ConvSpec& s) : spec_(s) {
    const Window& w = s.window;
    ih_ = s.x[2], iw_ = s.x[3], oh_ = s.y[2], ow_ = s.y[3];
    kh_ = w.kernel[0], kw_ = w.kernel[1];
    sh_ = w.strides[0], sw_ = w.strides[1], dh_ = w.dilations[0], dw_ = w.dilations[1];
    ph_ = w.pads_begin[0], pw_ = w.pads_begin[1];
    // The padded plane spans every tap of every output (the end padding may be cut short).
    padded_h_ = std::max(ih_ + ph_, (oh_ - 1) * sh_ + (kh_ - 1) * dh_ + 1);
    padded_w_ = std::max(iw_ + pw_, (ow_ - 1) * sw_ + (kw_ - 1) * dw_ + 1);
    split_columns_ = sw_ == 2 && dw_ == 1 && kh_ == kw_ && (kw_ == 3 || kw_ == 5);
    odd_offset_ = (padded_w_ + 1) / 2;
    reads_input_in_place_ = padded_h_ == ih_ && padded_w_ == iw_ && !split_columns_;
    flat_ = sh_ == 1 && sw_ == 1 && ow_ < kMinRowWidth;
    flat_offset_ = reads_input_in_place_ ? 0 : alignedFloats(padded_h_ * padded_w_);
    per_thread_floats_ = alignedFloats(flat_offset_ + (flat_ ? oh_ * padded_w_ : 0));
    row_ = pickRowFn();
    // Fixed now: the workspace holds one set of planes per thread.
    threads_ = std::max(1, std::min<int>(omp_get_max_threads(), static_cast<int>(s.x[0] * s.x[1])));
  }

  // Per thread: the padded input plane (unless read in place), then the flat output plane.
  size_t workspaceBytes() const override {
    return sizeof(float) * static_cast<size_t>(per_thread_floats_ * threads_);
  }

  void run(const KernelIO& io) const override {
    const float* x = io.inputs[kConvX].as<float>();
    const float* w = io.inputs[kConvW].as<float>();
    const float* bias = spec_.has_bias ? io.inputs[kConvB].as<float>() : nullptr;
    const float* sum = spec_.has_sum ? io.inputs[kConvSum].as<float>() : nullptr;
    float* y = io.outputs[0].as<float>();
    const int64_t planes = spec_.x[0] * spec_.x[1], channels = spec_.x[1];
    const int64_t out_plane = oh_ * ow_;
#pragma omp parallel num_threads(threads_) if (threads_ > 1)
    {
      float* padded = static_cast<float*>(io.workspace) + per_thread_floats_ * omp_get_thread_num();
      float* flat = padded + flat_offset_;
      // The padding stays zero across planes: each plane only overwrites the interior.
      if (!reads_input_in_place_) std::fill(padded, padded + padded_h_ * padded_w_, 0.f);
#pragma omp for schedule(static)
      for (int64_t p = 0; p < planes; ++p) {
        const int64_t c = p % channels;
        const float* xp = x + p * ih_ * iw_;
        if (!reads_input_in_place_) xp = loadPadded(xp, padded);
        float* yp = y + p * out_plane;
        plane(xp, w + c * kh_ * kw_, bias ? bias[c] : 0.f, yp, flat);
        if (sum) {
          const float* s = sum + p * out_plane;
          for (int64_t i = 0; i < out_plane; ++i) yp[i] += s[i];
        }
        applyActivation(spec_.act, yp, out_plane);
      }
    }
  }

 private:
  // Copies one input plane into the interior of the zero-padded plane, so every tap of every
  // output is in bounds: the stencil needs no border columns or rows with bounds checks (those
  // dominated the small 14x14 and 7x7 layers).
  const float* loadPadded(const float* x, float* padded) const {
    for (int64_t ih = 0; ih < ih_; ++ih) {
      const float* src = x + ih * iw_;
      float* dst = padded + (ih + ph_) * padded_w_;
      if (split_columns_) {
        splitColumns(src, dst);
      } else {
        std::copy(src, src + iw_, dst + pw_);
      }
    }
    return padded;
  }

  // Stores a row's even padded columns first and its odd ones from odd_offset_ on, so that the
  // stride-2 taps 2*ow + kw become contiguous reads (even[ow + kw/2] or odd[ow + kw/2]) instead of
  // strided gathers.
  void splitColumns(const float* src, float* __restrict dst) const {
    const int64_t first_even = pw_ % 2;  // the first input column that lands on an even column
    float* even = dst + pw_ / 2 + (pw_ % 2);
    float* odd = dst + odd_offset_ + pw_ / 2;
    // Loops over the destination so stores are contiguous and the stride-2 loads vectorize as
    // load + permute (indexing by the source made GCC emit scatters, 8% of MobileNetV2's run).
    const int64_t n_even = (iw_ - first_even + 1) / 2, n_odd = (iw_ - (1 - first_even) + 1) / 2;
    const float* from_even = src + first_even;
    const float* from_odd = src + (1 - first_even);
    for (int64_t m = 0; m < n_even; ++m) even[m] = from_even[2 * m];
    for (int64_t m = 0; m < n_odd; ++m) odd[m] = from_odd[2 * m];
  }

  // One output plane from a (padded) input plane of row length padded_w_.
  void plane(const float* x, const float* w, float b, float* y, float* flat) const {
    if (flat_) {
      planeFlat(x, w, b, y, flat);
      return;
    }
    const float* rows[kMaxRows];
    for (int64_t oh = 0; oh < oh_; ++oh) {
      for (int64_t kh = 0; kh < kh_; ++kh) rows[kh] = x + (oh * sh_ + kh * dh_) * padded_w_;
      row_(rows, w, b, y + oh * ow_, ow_, *this);
    }
  }

  // Stride 1 on short rows: the stencil runs once over the plane as one long row of
  // (oh_ - 1) * padded_w_ + ow_ outputs (output (oh, ow) sits at oh * padded_w_ + ow; the columns in
  // between are computed and dropped), then the valid columns are copied out. Row by row, the 7- and
  // 14-wide rows of late CNN layers ran mostly in the vector loop's scalar remainder.
  void planeFlat(const float* x, const float* w, float b, float* y, float* flat) const {
    const float* rows[kMaxRows];
    for (int64_t kh = 0; kh < kh_; ++kh) rows[kh] = x + kh * dh_ * padded_w_;
    row_(rows, w, b, flat, (oh_ - 1) * padded_w_ + ow_, *this);
    for (int64_t oh = 0; oh < oh_; ++oh) {
      std::copy(flat + oh * padded_w_, flat + oh * padded_w_ + ow_, y + oh * ow_);
    }
  }

  // One output row with the kernel size and stride known at compile time, so the tap loops
  // unroll and the column loop vectorizes with the accumulator in registers.
  template <int K, int S>
  static void rowFixed(const float* const* rows, const float* w, float b, float* __restrict out, int64_t n,
                       const DepthwiseConvKernel& k) {
    const int64_t d = k.dw_;
    for (int64_t ow = 0; ow < n; ++ow) {
      float acc = b;
      for (int kh = 0; kh < K; ++kh) {
        const float* r = rows[kh] + ow * S;
        for (int kw = 0; kw < K; ++kw) acc += w[kh * K + kw] * r[kw * d];
      }
      out[ow] = acc;
    }
  }

  // Stride 2 on rows stored by splitColumns(); same taps in the same order as rowFixed<K, 2>.
  template <int K>
  static void rowSplitStride2(const float* const* rows, const float* w, float b, float* __restrict out,
                              int64_t n, const DepthwiseConvKernel& k) {
    for (int64_t ow = 0; ow < n; ++ow) {
      float acc = b;
      for (int kh = 0; kh < K; ++kh) {
        const float* even = rows[kh] + ow;
        const float* odd = even + k.odd_offset_;
        for (int kw = 0; kw < K; ++kw) acc += w[kh * K + kw] * (kw % 2 == 0 ? even[kw / 2] : odd[kw / 2]);
      }
      out[ow] = acc;
    }
  }

  static void rowGeneric(const float* const* rows, const float* w, float b, float* __restrict out, int64_t n,
                         const DepthwiseConvKernel& k) {
    for (int64_t ow = 0; ow < n; ++ow) {
      float acc = b;
      for (int64_t kh = 0; kh < k.kh_; ++kh) {
        const float* r = rows[kh] + ow * k.sw_;
        for (int64_t kw = 0; kw < k.kw_; ++kw) acc += w[kh * k.kw_ + kw] * r[kw * k.dw_];
      }
      out[ow] = acc;
    }
  }

  using RowFn = void (*)(const float* const*, const float*, float, float*, int64_t,
                         const DepthwiseConvKernel&);
  RowFn pickRowFn() const {
    if (split_columns_) return kw_ == 3 ? &rowSplitStride2<3> : &rowSplitStride2<5>;
    if (kh_ == 3 && kw_ == 3 && sw_ == 1) return &rowFixed<3, 1>;
    if (kh_ == 3 && kw_ == 3 && sw_ == 2) return &rowFixed<3, 2>;
    if (kh_ == 5 && kw_ == 5 && sw_ == 1) return &rowFixed<5, 1>;
    if (kh_ == 5 && kw_ == 5 && sw_ == 2) return &rowFixed<5, 2>;
    return &rowGeneric;
  }

  ConvSpec spec_;
  int64_t ih_, iw_, oh_, ow_, kh_, kw_, sh_, sw_, dh_, dw_, ph_, pw_;
  int64_t padded_h_, padded_w_;        // the zero-padded input plane in the workspace
  bool reads_input_in_place_ = false;  // no padding needed: the stencil reads the input directly
  bool split_columns_ = false;         // stride-2 rows stored even columns, then odd (splitColumns)
  int64_t odd_offset_ = 0;             // where a split row's odd columns start
  bool flat_ = false;                  // stride-1 short rows run as one long row (planeFlat)
  int64_t flat_offset_ = 0;            // floats before the flat output plane in a thread's area
  int64_t per_thread_floats_ = 0;      // one thread's area of the workspace
  int threads_ = 1;                    // OpenMP threads the planes are split over
  RowFn row_;
};

}  // namespace

bool isPlainDepthwise2d(const ConvSpec& s) {
  return s.x.size() == 4 && s.group == s.x[1] && s.w[0] == s.group && s.w[1] == 1 &&
         s.window.kernel[0] <= kMaxRows;
}

std::unique_ptr<Kernel> makeDepthwiseConvKernel(const ConvSpec& spec) {
  return std::make_unique<DepthwiseConvKernel>(spec);
}

}  // namespace npuc::nn
