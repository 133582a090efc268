// The FP32 host kernel of LSTM, GRU and RNN: one batch row and one direction at a time, step by
// step, as ONNX defines the cells (gate orders: LSTM i,o,f,c; GRU z,r,h). Weights are read at run
// time rather than packed, because ONNX's node tests (and some exports) feed W/R/B as inputs; the
// recurrent layers npuc meets are small (hidden 32-512), where a plain dot product per gate row
// is within a small factor of a packed GEMM.
#include <algorithm>
#include <cstring>

#include "opset/ops/rnn_common.h"

namespace npuc::rnn {
namespace {

// Eight independent partial sums: the compiler may not reorder a single float sum, and eight
// lanes let it vectorize (4x faster on the CRNN's 128-wide rows than one running sum).
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

class RnnKernel : public Kernel {
 public:
  explicit RnnKernel(const KernelContext& ctx) : name_(where(ctx.node)) {
    std::vector<const Shape*> shapes;
    for (const TensorView& v : ctx.input_types) shapes.push_back(v.present() ? &v.shape : nullptr);
    s_ = resolveRnn(ctx.node, shapes);
    if (shapes.size() > 4 && shapes[4] && ctx.input_types[4].dtype != DType::Int32 &&
        ctx.input_types[4].dtype != DType::Int64) {
      throw UnsupportedOpError(name_ + ": sequence_lens must be int32 (or int64), got " +
                               dtypeName(ctx.input_types[4].dtype));
    }
  }

  // gates [G*H], h, c, new h, r*h: all float.
  size_t workspaceBytes() const override {
    return static_cast<size_t>((s_.gates() + 4) * s_.hidden) * sizeof(float);
  }

  void run(const KernelIO& io) const override {
    auto in = [&](size_t i) -> const TensorView* {
      return i < io.inputs.size() && io.inputs[i].present() && io.inputs[i].data ? &io.inputs[i] : nullptr;
    };
    auto out = [&](size_t i) -> float* {
      return i < io.outputs.size() && io.outputs[i].data ? io.outputs[i].as<float>() : nullptr;
    };
    const int64_t T = s_.seq, B = s_.batch, I = s_.input, H = s_.hidden, D = s_.dirs, G = s_.gates();
    float* ws = static_cast<float*>(io.workspace);
    float* gates = ws;
    float* h = gates + G * H;
    float* c = h + H;
    float* hn = c + H;
    float* rh = hn + H;
    float* y = out(0);
    float* yh = out(1);
    float* yc = s_.cell == Cell::Lstm ? out(2) : nullptr;
    const float* x = in(0)->as<const float>();
    const TensorView* sl = in(4);
    for (int64_t d = 0; d < D; ++d) {
      const float* w = in(1)->as<const float>() + d * G * H * I;
      const float* r = in(2)->as<const float>() + d * G * H * H;
      const float* wb = in(3) ? in(3)->as<const float>() + d * 2 * G * H : nullptr;
      const float* p = s_.cell == Cell::Lstm && in(7) ? in(7)->as<const float>() + d * 3 * H : nullptr;
      for (int64_t b = 0; b < B; ++b) {
        int64_t len = T;
        if (sl) len = sl->dtype == DType::Int32 ? sl->as<const int32_t>()[b] : sl->as<const int64_t>()[b];
        if (len < 0 || len > T) {
          throw InputError(name_ + ": sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len) +
                           " is outside [0, " + std::to_string(T) + "] (X has " + std::to_string(T) +
                           " steps)");
        }
        const int64_t so = stateOffset(d, b);
        loadState(in(5), so, h);
        loadState(s_.cell == Cell::Lstm ? in(6) : nullptr, so, c);
        if (y)
          for (int64_t t = 0; t < T; ++t) std::fill_n(y + yOffset(t, d, b), H, 0.f);
        for (int64_t step = 0; step < len; ++step) {
          const int64_t t = s_.backwards(d) ? len - 1 - step : step;
          const float* xt = x + (s_.layout == 0 ? (t * B + b) * I : (b * T + t) * I);
          this->step(d, xt, w, r, wb, p, gates, h, c, hn, rh);
          std::memcpy(h, hn, H * sizeof(float));
          if (y) std::memcpy(y + yOffset(t, d, b), h, H * sizeof(float));
        }
        if (yh) std::memcpy(yh + so, h, H * sizeof(float));
        if (yc) std::memcpy(yc + so, c, H * sizeof(float));
      }
    }
  }

 private:
  int64_t yOffset(int64_t t, int64_t d, int64_t b) const {
    const int64_t T = s_.seq, B = s_.batch, D = s_.dirs, H = s_.hidden;
    return s_.layout == 0 ? ((t * D + d) * B + b) * H : ((b * T + t) * D + d) * H;
  }
  int64_t stateOffset(int64_t d, int64_t b) const {
    return s_.layout == 0 ? (d * s_.batch + b) * s_.hidden : (b * s_.dirs + d) * s_.hidden;
  }
  void loadState(const TensorView* v, int64_t offset, float* dst) const {
    if (v) {
      std::memcpy(dst, v->as<const float>() + offset, s_.hidden * sizeof(float));
    } else {
      std::fill_n(dst, s_.hidden, 0.f);
    }
  }
  float clip(float v) const { return s_.has_clip ? std::max(-s_.clip, std::min(s_.clip, v)) : v; }

  // One time step of direction d: reads h (and c), writes the new hidden state to hn (c in place).
  void step(int64_t d, const float* xt, const float* w, const float* r, const float* wb, const float* p,
            float* gates, const float* h, float* c, float* hn, float* rh) const {
    const int64_t I = s_.input, H = s_.hidden, G = s_.gates();
    const std::vector<Activation>& act = s_.acts[d];
    // Input part (+ both biases) of every gate; the recurrent part of all but GRU's h gate.
    const bool gru = s_.cell == Cell::Gru;
    for (int64_t k = 0; k < G * H; ++k) {
      float v = dot(w + k * I, xt, I);
      if (wb) v += wb[k];
      const bool gru_h = gru && k >= 2 * H;
      if (!gru_h) {
        v += dot(r + k * H, h, H);
        if (wb) v += wb[G * H + k];
      }
      gates[k] = v;
    }
    if (s_.cell == Cell::Rnn) {
      for (int64_t j = 0; j < H; ++j) hn[j] = act[0].apply(clip(gates[j]));
    } else if (gru) {
      float* z = gates;
      float* rg = gates + H;
      float* hg = gates + 2 * H;
      for (int64_t j = 0; j < H; ++j) {
        z[j] = act[0].apply(clip(z[j]));
        rg[j] = act[0].apply(clip(rg[j]));
      }
      const float* rbh = wb ? wb + G * H + 2 * H : nullptr;
      if (s_.linear_before_reset) {
        for (int64_t j = 0; j < H; ++j)
          hg[j] += rg[j] * (dot(r + (2 * H + j) * H, h, H) + (rbh ? rbh[j] : 0.f));
      } else {
        for (int64_t j = 0; j < H; ++j) rh[j] = rg[j] * h[j];
        for (int64_t j = 0; j < H; ++j) hg[j] += dot(r + (2 * H + j) * H, rh, H) + (rbh ? rbh[j] : 0.f);
      }
      for (int64_t j = 0; j < H; ++j) {
        const float ht = act[1].apply(clip(hg[j]));
        hn[j] = (1.f - z[j]) * ht + z[j] * h[j];
      }
    } else {
      const float* gi = gates;
      const float* go = gates + H;
      const float* gf = gates + 2 * H;
      const float* gc = gates + 3 * H;
      for (int64_t j = 0; j < H; ++j) {
        const float i = act[0].apply(clip(gi[j] + (p ? p[j] * c[j] : 0.f)));
        const float f =
            s_.input_forget ? 1.f - i : act[0].apply(clip(gf[j] + (p ? p[2 * H + j] * c[j] : 0.f)));
        const float cand = act[1].apply(clip(gc[j]));
        c[j] = f * c[j] + i * cand;
        const float o = act[0].apply(clip(go[j] + (p ? p[H + j] * c[j] : 0.f)));
        hn[j] = o * act[2].apply(c[j]);
      }
    }
  }

  std::string name_;
  RnnSpec s_;
};

}  // namespace

std::unique_ptr<Kernel> makeRnnKernel(const KernelContext& ctx) {
  return std::make_unique<RnnKernel>(ctx);
}

}  // namespace npuc::rnn
