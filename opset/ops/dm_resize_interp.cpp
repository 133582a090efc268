// Linear and cubic Resize on float32. Both filters are separable, so an N-D resize is a sequence
// of 1-D passes, one per resized axis (axes that map every output index to the same input index
// are skipped). The common case, bilinear over the last two axes (NCHW images), runs as a single
// fused 2-D pass with no intermediate buffer.
#include <algorithm>
#include <numeric>

#include "opset/ops/dm_resize.h"

namespace npuc {
namespace dm {
namespace {

// True if the taps reproduce the input unchanged (same length, every output reads its own index).
bool isIdentity(const std::vector<Taps>& taps, int64_t in_len, int ntaps) {
  if (static_cast<int64_t>(taps.size()) != in_len) return false;
  for (size_t x = 0; x < taps.size(); ++x) {
    const Taps& t = taps[x];
    if (t.extrapolate) return false;
    float own = 0.0f;
    for (int k = 0; k < ntaps; ++k) {
      if (t.weight[k] == 0.0f) continue;
      if (t.index[k] != static_cast<int64_t>(x)) return false;
      own += t.weight[k];
    }
    if (own != 1.0f) return false;
  }
  return true;
}

// One 1-D pass along an axis of a tensor viewed as [outer, in_len, inner] -> [outer, out_len, inner].
struct AxisPass {
  int64_t outer, in_len, out_len, inner;
  std::vector<Taps> taps;
};

template <int K>
void runPass(const AxisPass& p, const float* src, float* dst, float extrapolation) {
  const int64_t inner = p.inner;
  for (int64_t o = 0; o < p.outer; ++o) {
    const float* s = src + o * p.in_len * inner;
    float* d = dst + o * p.out_len * inner;
    for (int64_t j = 0; j < p.out_len; ++j, d += inner) {
      const Taps& t = p.taps[static_cast<size_t>(j)];
      if (t.extrapolate) {
        std::fill(d, d + inner, extrapolation);
        continue;
      }
      if (inner == 1) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += t.weight[k] * s[t.index[k]];
        *d = acc;
        continue;
      }
      // Row-wise accumulation: each statement is a vectorizable loop over `inner`.
      const float* r0 = s + t.index[0] * inner;
      const float w0 = t.weight[0];
      for (int64_t i = 0; i < inner; ++i) d[i] = w0 * r0[i];
      for (int k = 1; k < K; ++k) {
        const float* r = s + t.index[k] * inner;
        const float w = t.weight[k];
        for (int64_t i = 0; i < inner; ++i) d[i] += w * r[i];
      }
    }
  }
}

// The general N-D path: passes ordered so that shrinking axes go first (smaller intermediates),
// ping-ponging between two workspace buffers.
class SeparableResizeKernel : public Kernel {
 public:
  SeparableResizeKernel(const ResizeParams& p, std::vector<size_t> axes, std::vector<std::vector<Taps>> taps)
      : ntaps_(tapCount(p.mode)), extrapolation_(p.extrapolation) {
    std::vector<size_t> order(axes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return static_cast<double>(p.out[axes[a]]) / p.in[axes[a]] <
             static_cast<double>(p.out[axes[b]]) / p.in[axes[b]];
    });
    Shape cur = p.in;
    for (size_t n = 0; n < order.size(); ++n) {
      const size_t axis = axes[order[n]];
      AxisPass pass{1, cur[axis], p.out[axis], 1, std::move(taps[order[n]])};
      for (size_t d = 0; d < axis; ++d) pass.outer *= cur[d];
      for (size_t d = axis + 1; d < cur.size(); ++d) pass.inner *= cur[d];
      cur[axis] = p.out[axis];
      if (n + 1 < order.size()) buffer_elems_ = std::max(buffer_elems_, shapeNumel(cur));
      passes_.push_back(std::move(pass));
    }
    numel_ = shapeNumel(p.out);
  }

  size_t workspaceBytes() const override {
    const size_t buffers = passes_.size() > 2 ? 2 : passes_.size() == 2 ? 1 : 0;
    return buffers * static_cast<size_t>(buffer_elems_) * sizeof(float);
  }

  void run(const KernelIO& io) const override {
    const float* src = io.inputs[0].as<float>();
    float* out = io.outputs[0].as<float>();
    if (numel_ == 0) return;
    if (passes_.empty()) {
      std::copy(src, src + numel_, out);
      return;
    }
    float* bufs[2] = {static_cast<float*>(io.workspace), static_cast<float*>(io.workspace) + buffer_elems_};
    for (size_t n = 0; n < passes_.size(); ++n) {
      float* dst = n + 1 == passes_.size() ? out : bufs[n % 2];
      if (ntaps_ == 4) {
        runPass<4>(passes_[n], src, dst, extrapolation_);
      } else {
        runPass<2>(passes_[n], src, dst, extrapolation_);
      }
      src = dst;
    }
  }

 private:
  int ntaps_;
  float extrapolation_;
  std::vector<AxisPass> passes_;
  int64_t buffer_elems_ = 0;  // largest intermediate tensor
  int64_t numel_ = 0;
};

// Bilinear over the last two axes in one pass. Each input row an output row needs is first
// interpolated along x into a workspace row (and kept while the next output rows still need it,
// so upsampling interpolates every input row once); the output row is then a vectorizable blend
// of two such rows along y.
class Bilinear2DKernel : public Kernel {
 public:
  Bilinear2DKernel(const ResizeParams& p, std::vector<Taps> ytaps, const std::vector<Taps>& xtaps)
      : ytaps_(std::move(ytaps)), extrapolation_(p.extrapolation) {
    const size_t r = p.in.size();
    in_h_ = p.in[r - 2];
    in_w_ = p.in[r - 1];
    out_h_ = p.out[r - 2];
    out_w_ = p.out[r - 1];
    planes_ = 1;
    for (size_t d = 0; d + 2 < r; ++d) planes_ *= p.in[d];
    for (const Taps& t : xtaps) {
      x0_.push_back(t.index[0]);
      x1_.push_back(t.index[1]);
      wx0_.push_back(t.weight[0]);
      wx1_.push_back(t.weight[1]);
      x_extrapolate_ = x_extrapolate_ || t.extrapolate;
      xext_.push_back(t.extrapolate);
    }
  }

  size_t workspaceBytes() const override { return 2 * static_cast<size_t>(out_w_) * sizeof(float); }

  void run(const KernelIO& io) const override {
    const float* src = io.inputs[0].as<float>();
    float* dst = io.outputs[0].as<float>();
    for (int64_t pl = 0; pl < planes_; ++pl) {
      const float* plane = src + pl * in_h_ * in_w_;
      // Two x-interpolated rows and the input row index each holds (-1: none yet).
      float* rows[2] = {static_cast<float*>(io.workspace), static_cast<float*>(io.workspace) + out_w_};
      int64_t held[2] = {-1, -1};
      for (int64_t y = 0; y < out_h_; ++y, dst += out_w_) {
        const Taps& ty = ytaps_[static_cast<size_t>(y)];
        if (ty.extrapolate) {
          std::fill(dst, dst + out_w_, extrapolation_);
          continue;
        }
        const int64_t a = ty.index[0];
        const int64_t b = ty.index[1];
        if (held[0] != a && held[1] == a) {  // keep row a in slot 0
          std::swap(rows[0], rows[1]);
          std::swap(held[0], held[1]);
        }
        if (held[0] != a) {
          interpolateRow(plane + a * in_w_, rows[0]);
          held[0] = a;
        }
        const float* rb = rows[0];
        if (b != a) {
          if (held[1] != b) {
            interpolateRow(plane + b * in_w_, rows[1]);
            held[1] = b;
          }
          rb = rows[1];
        }
        const float* ra = rows[0];
        const float wy0 = ty.weight[0];
        const float wy1 = ty.weight[1];
        for (int64_t x = 0; x < out_w_; ++x) dst[x] = wy0 * ra[x] + wy1 * rb[x];
        if (x_extrapolate_) {
          for (int64_t x = 0; x < out_w_; ++x) {
            if (xext_[static_cast<size_t>(x)]) dst[x] = extrapolation_;
          }
        }
      }
    }
  }

 private:
  void interpolateRow(const float* row, float* out) const {
    const int64_t* x0 = x0_.data();
    const int64_t* x1 = x1_.data();
    const float* w0 = wx0_.data();
    const float* w1 = wx1_.data();
    for (int64_t x = 0; x < out_w_; ++x) out[x] = w0[x] * row[x0[x]] + w1[x] * row[x1[x]];
  }

  std::vector<Taps> ytaps_;
  std::vector<int64_t> x0_, x1_;
  std::vector<float> wx0_, wx1_;
  std::vector<char> xext_;
  bool x_extrapolate_ = false;
  float extrapolation_;
  int64_t planes_ = 1, in_h_ = 0, in_w_ = 0, out_h_ = 0, out_w_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> makeInterpolatingResize(ResizeParams p) {
  const int ntaps = tapCount(p.mode);
  std::vector<size_t> axes;
  std::vector<std::vector<Taps>> taps;
  for (size_t d = 0; d < p.in.size(); ++d) {
    if (p.out[d] == 0) continue;  // nothing to compute; the output is empty
    std::vector<Taps> t = axisTaps(p, d);
    if (isIdentity(t, p.in[d], ntaps)) continue;
    axes.push_back(d);
    taps.push_back(std::move(t));
  }
  const size_t r = p.in.size();
  const bool last_two = axes.size() == 2 && axes[0] == r - 2 && axes[1] == r - 1;
  if (p.mode == ResizeMode::Linear && last_two && shapeNumel(p.out) > 0) {
    return std::make_unique<Bilinear2DKernel>(p, std::move(taps[0]), taps[1]);
  }
  return std::make_unique<SeparableResizeKernel>(p, std::move(axes), std::move(taps));
}

}  // namespace dm
}  // namespace npuc
